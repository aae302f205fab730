// RZE/RRE on the GPU: the stream format of elimination/elimination.hpp, byte for
// byte the CPU's. rze/rze_cuda.hpp and rre/rre_cuda.hpp name the rule.
//
// All pointers are device pointers; work is enqueued on `stream` and the
// return value reports launch errors only (cudaErrorInvalidValue for a word
// size other than 1, 2, 4, 8). Nothing is allocated: temporary memory comes
// from `scratch`, 256-byte aligned (as cudaMalloc returns), of the size the
// matching *_scratch_bytes function gives.
//
// Encode: `out` holds max_encoded_bytes(n) bytes; the stream's length is
// written to *encoded_size (device memory) for the caller to read back.
//
// Decode: the whole stream is validated on the device (header, size table,
// every sub-chunk's bitmaps), so the caller needs to copy nothing back before
// decoding. `in_size` is the stream's exact length; `out` holds max_out bytes
// and nothing outside out[0, max_out) is ever written, nothing outside
// in[0, in_size) ever read. *decoded_size receives the stored length n (0 when
// the stream is malformed) and *status 0 for a valid stream, otherwise the OR
// of the DecodeStatus bits of every check that failed (the same for every run:
// all sub-chunks are checked, none stops another). A stream is malformed
// exactly when the CPU decoder would throw FormatError for it (with max_out as
// its limit); valid streams decode to the CPU's bytes. out's content is
// unspecified when *status != 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "elimination/elimination.hpp"

namespace fz::elimination::cuda {

enum DecodeStatus : uint32_t {
  kStreamShorterThanHeader = 1u << 0,
  kDecodedSizeTooLarge = 1u << 1,
  kSizeTableTruncated = 1u << 2,
  kSubchunkSizeTooLarge = 1u << 3,
  kPayloadLengthMismatch = 1u << 4,
  kTopBitmapTruncated = 1u << 5,
  kPaddingBitsSet = 1u << 6,
  kBitmapLevelTruncated = 1u << 7,
  kSubchunkLengthMismatch = 1u << 8,
};

// 8 + 2 * ceil(n / 16384) + n: a sub-chunk never takes more than its raw bytes.
size_t max_encoded_bytes(size_t n);

size_t encode_scratch_bytes(size_t n);
cudaError_t encode(const uint8_t* in, size_t n, unsigned word_size, Rule rule, uint8_t* out,
                   uint64_t* encoded_size, void* scratch, cudaStream_t stream);

// Encode of an input whose length only the device knows: *n (device memory,
// written by work earlier on `stream`, as a Huffman encoder writes its
// stream's length) bytes at `in`, at most `capacity`; `out` and the scratch
// are sized for capacity (max_encoded_bytes(capacity),
// encode_scratch_bytes(capacity)). The bytes are encode's for that length;
// the host never waits for it. A length above capacity writes nothing but
// *encoded_size = 2^64 - 1, which no allocation holds (the engine refuses it).
cudaError_t encode_device_length(const uint8_t* in, const uint64_t* n, size_t capacity, unsigned word_size,
                                 Rule rule, uint8_t* out, uint64_t* encoded_size, void* scratch,
                                 cudaStream_t stream);

size_t decode_scratch_bytes(size_t in_size, size_t max_out);
cudaError_t decode(const uint8_t* in, size_t in_size, unsigned word_size, Rule rule, uint8_t* out,
                   size_t max_out, uint64_t* decoded_size, uint32_t* status, void* scratch,
                   cudaStream_t stream);

}  // namespace fz::elimination::cuda
