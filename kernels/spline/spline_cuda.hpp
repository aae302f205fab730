// SPLINE on the GPU: the stream format of spline.hpp, byte for byte the CPU's.
//
// All pointers are device pointers; work is enqueued on `stream` and the
// return value reports launch errors only (cudaErrorInvalidValue for bad
// arguments: the config, the bound, dims; the checks behind the CPU's
// UsageError). Nothing is allocated and nothing synchronises (the engine
// captures the forward in a CUDA graph): temporary memory comes from
// `scratch`, 256-byte aligned (as cudaMalloc returns), of the size the
// matching *_scratch_bytes function gives.
//
// Encode: `in` holds N elements of config.width bytes (N = product of dims);
// `fill_mask` is nullptr or ceil(N / 8) bytes of fill mask (spline.hpp);
// codes.at[g] receives code group g (code_group_bytes(dims, code_bytes)[g]
// bytes); `side` holds
// max_side_bytes(dims, width, config.coarse_levels) bytes and receives the side stream, whose
// length (known only once the outliers are counted) is written to *side_size
// (device memory) for the caller to read back. The tuning (Tuning::kRatioFirst)
// runs on the device too, on the CPU's sample tiles with integer sums, so the
// flags are the CPU's.
//
// Decode: codes.at[g] holds code group g, code_sizes[g] bytes (any other
// size than code_group_bytes gives cudaErrorInvalidValue: the caller checks
// a frame's sizes first), `side` exactly side_size bytes; `out` receives
// N * width bytes. Nothing outside the codes, side[0, side_size)
// is read and nothing outside out[0, N * width) written. Bits of
// DecodeStatus are ORed into *status (a zeroed word) for every check that
// fails; it stays 0 exactly when the CPU decoder would not throw FormatError,
// and then out holds the CPU's bytes. out's content is unspecified otherwise.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <functional>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spline/spline.hpp"

namespace fz::spline::cuda {

enum DecodeStatus : uint32_t {
  kSideTruncated = 1u << 0,          // shorter than the header, levels and anchors
  kRankMismatch = 1u << 1,           // the stream's rank is not dims' rank
  kLevelCountMismatch = 1u << 2,     // L is not level_count(rank)
  kRadiusOutOfRange = 1u << 3,       // radius 0 or above what code_bytes carries
  kUnknownFlags = 1u << 4,           // a level's flags are not valid (flags_are_valid)
  kBadStep = 1u << 5,                // a step not positive, normal and finite
  kOutlierCountTooLarge = 1u << 6,   // K exceeds the stream or N
  kSideSizeMismatch = 1u << 7,       // bytes after the outlier values, or too few
  kOutlierIndexOutOfRange = 1u << 8, // an index >= N
  kIndicesNotIncreasing = 1u << 9,   // indices not strictly increasing
  kOutlierAtAnchor = 1u << 10,       // an outlier listed at an anchor
  kNonzeroCodeAtAnchor = 1u << 11,   // an anchor's code is not 0
  kNonzeroCodeAtOutlier = 1u << 12,  // a listed outlier's code is not 0
  kCodeOutOfRange = 1u << 13,        // a code >= 2R
  kUnlistedZeroCode = 1u << 14,      // code 0 at a predicted point not in the outlier list
};

// indices_at + N * (index width + width): the side stream with every element an outlier.
size_t max_side_bytes(const std::vector<size_t>& dims, unsigned width, bool coarse_levels = false);

// The three code groups' sizes in bytes for dims (zeros for dims encode refuses).
std::array<size_t, kCodeGroups> code_group_bytes(const std::vector<size_t>& dims, unsigned code_bytes);

struct CodeStreams {
  uint8_t* at[kCodeGroups];
};
struct ConstCodeStreams {
  const uint8_t* at[kCodeGroups];
};

size_t encode_scratch_bytes(const std::vector<size_t>& dims, const Config& config);
// eb: as spline::encode (> 0, finite).
cudaError_t encode(const uint8_t* in, const uint8_t* fill_mask, const std::vector<size_t>& dims,
                   const Config& config, double eb, const CodeStreams& codes, uint8_t* side, uint64_t* side_size,
                   void* scratch, cudaStream_t stream);

// Where the side stream goes and the bytes it may take there.
struct SideRoom {
  uint8_t* data = nullptr;
  size_t capacity = 0;
};
// encode() with the side stream's room chosen once its length is known:
// `side_room` is called (on the host, once, before anything is written to
// the stream) when *side_size holds the stream's exact length on the device,
// so a caller may read it back and allocate just that; a stream longer than
// the room it returns is not written (*side_size still says how long it
// is). encode() is this with a room of max_side_bytes.
cudaError_t encode_with_side_room(const uint8_t* in, const uint8_t* fill_mask, const std::vector<size_t>& dims,
                                  const Config& config, double eb, const CodeStreams& codes,
                                  const std::function<SideRoom()>& side_room, uint64_t* side_size, void* scratch,
                                  cudaStream_t stream);
inline cudaError_t encode(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double eb,
                          const CodeStreams& codes, uint8_t* side, uint64_t* side_size, void* scratch,
                          cudaStream_t stream) {
  return encode(in, nullptr, dims, config, eb, codes, side, side_size, scratch, stream);
}

size_t decode_scratch_bytes(const std::vector<size_t>& dims, const CodeFormat& format);
cudaError_t decode(const ConstCodeStreams& codes, const std::array<size_t, kCodeGroups>& code_sizes,
                   const uint8_t* side, size_t side_size, const std::vector<size_t>& dims, const CodeFormat& format,
                   uint8_t* out, uint32_t* status, void* scratch, cudaStream_t stream);

}  // namespace fz::spline::cuda
