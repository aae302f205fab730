// LORENZO on the GPU: the stream format of lorenzo.hpp, byte for byte the CPU's.
//
// All pointers are device pointers; work is enqueued on `stream` and the return
// value reports launch errors only (cudaErrorInvalidValue for bad arguments:
// width, dims, radius, bound; the same checks as the CPU's UsageError). Nothing
// is allocated: temporary memory comes from `scratch`, 256-byte aligned (as
// cudaMalloc returns), of the size the matching *_scratch_bytes function gives.
//
// Encode: `in` holds N elements of config.width bytes (N = product of dims);
// `codes` receives 2N bytes, `outliers` holds max_outliers_bytes(dims, width)
// bytes and receives the outlier stream, whose length is written to
// *outliers_size (device memory) for the caller to read back. Every element
// is prequantized as the CPU does (same operations in T, no FMA, the exact
// acceptance test in double); records are placed by prefix sums over
// per-block counts, so the bytes never depend on scheduling.
//
// Decode: `codes` holds 2N bytes, `outliers` exactly outliers_size bytes (the
// stream's length); `out` receives N * width bytes. The outlier header and the
// records are validated on the device; nothing outside codes[0, 2N),
// outliers[0, outliers_size) is read and nothing outside out[0, N * width)
// written. *status receives 0 for a valid stream, otherwise the OR of the
// DecodeStatus bits of checks that failed. A stream is malformed exactly when
// the CPU decoder would throw FormatError for it; valid streams decode to the
// CPU's bytes. out's content is unspecified when *status != 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lorenzo/lorenzo.hpp"

namespace fz::lorenzo::cuda {

enum DecodeStatus : uint32_t {
  kOutliersTruncated = 1u << 0,        // shorter than the 24-byte header
  kCountsOutOfRange = 1u << 1,         // n > N, a > n or b > n
  kOutlierSizeMismatch = 1u << 2,      // size != header + records + deltas + raws
  kIndicesNotIncreasing = 1u << 3,     // index >= N or not strictly increasing
  kBadKind = 1u << 4,                  // kind 0 or > 7
  kFillWithoutFillValue = 1u << 5,     // fill record while config.has_fill is false
  kKindCountMismatch = 1u << 6,        // kinds do not match a or b
  kCodeOutOfRadius = 1u << 7,          // a code >= 2R
  kNonzeroCodeAtOutlier = 1u << 8,     // an element with a stored delta has code != 0
  kStoredDeltaFits = 1u << 9,          // a stored delta whose zigzag is < 2R
  kValueOutOfRange = 1u << 10,         // a prequantized value with |p| > PMAX
  kSpecialNotZero = 1u << 11,          // a special element whose p is not 0
};

// 24 + N * (index width + 1 + 2 * width): every element a record with a delta and raw bits.
size_t max_outliers_bytes(const std::vector<size_t>& dims, unsigned width);

size_t encode_scratch_bytes(const std::vector<size_t>& dims, unsigned width);
// user_bound: as lorenzo::encode (> 0, finite).
cudaError_t encode(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double user_bound,
                   uint8_t* codes, uint8_t* outliers, uint64_t* outliers_size, void* scratch, cudaStream_t stream);
// encode() in two steps, for a caller that sizes the outlier stream first:
// encode_codes writes the codes and *outliers_size (the stream's exact
// length) and keeps in scratch what encode_outliers needs; encode_outliers,
// with the same arguments, input and scratch, then writes the stream into
// `outliers` when it fits `outliers_capacity` bytes, else nothing (the
// length says it did not fit). Rows of 32 to 512 float (256 double) elements
// are coded in one pass over the input, with no prequantized copy in scratch:
// encode_outliers then reads the input again for the records alone.
cudaError_t encode_codes(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double user_bound,
                         uint8_t* codes, uint64_t* outliers_size, void* scratch, cudaStream_t stream);
cudaError_t encode_outliers(const uint8_t* in, const std::vector<size_t>& dims, const Config& config, double user_bound,
                            uint8_t* outliers, size_t outliers_capacity, void* scratch, cudaStream_t stream);

size_t decode_scratch_bytes(const std::vector<size_t>& dims, unsigned width, size_t outliers_size);
// The scratch for decoding these `codes` into this `out`: smaller when the
// decoder can work in `out` itself (16-byte aligned, rows of at most 1024
// elements, not a small chunk), about 2N words less. decode() with the same
// pointers needs no more; the three-argument size suffices for any pointers.
size_t decode_scratch_bytes(const std::vector<size_t>& dims, unsigned width, size_t outliers_size,
                            const uint8_t* codes, const uint8_t* out);
cudaError_t decode(const uint8_t* codes, const uint8_t* outliers, size_t outliers_size,
                   const std::vector<size_t>& dims, const Config& config, uint8_t* out, uint32_t* status,
                   void* scratch, cudaStream_t stream);

}  // namespace fz::lorenzo::cuda
