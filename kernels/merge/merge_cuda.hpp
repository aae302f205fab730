// MERGE / SPLIT on the GPU: the stream format of merge.hpp, byte for byte the CPU's.
//
// Device pointers, any alignment; work is enqueued on `stream`; nothing is
// allocated on the device. The part sizes are known on the host on both
// sides (the encoder is given them; the decoder reads them from the header,
// which it must see before it can place anything), so the header is built
// and checked on the host with the CPU decoder's rules.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.hpp"

namespace fz::merge::cuda {

struct Part {
  const uint8_t* data;  // device memory
  size_t size;
};

// 4 + 8 * parts.size() + the parts' sizes.
size_t encoded_size(const std::vector<Part>& parts);

// Writes the merge stream of `parts` (at least one, at most 2^32 - 1: else
// cudaErrorInvalidValue, where the CPU throws UsageError) to `out`, which
// holds encoded_size(parts) bytes.
cudaError_t encode(const std::vector<Part>& parts, uint8_t* out, cudaStream_t stream);

// Decode status bits: 0 exactly when merge::decode accepts the stream.
enum DecodeStatus : uint32_t {
  kShorterThanCount = 1u << 0,      // fewer than 4 bytes
  kZeroCount = 1u << 1,             // count is 0
  kTooManyParts = 1u << 2,          // count > max_parts
  kSizeTableTruncated = 1u << 3,    // the size table runs past the stream
  kSizesExceedPayload = 1u << 4,    // a size above max_total or past the payload
  kTotalExceedsLimit = 1u << 5,     // the sizes sum to more than max_total
  kTrailingBytes = 1u << 6,         // the sizes sum to less than the payload
};

// Where each part of a stream lies. On a nonzero status the CPU decoder
// would throw FormatError, and the offsets and sizes are empty.
struct Layout {
  uint32_t status = 0;
  std::vector<uint64_t> offsets;  // from the start of the stream
  std::vector<uint64_t> sizes;
};

// How many leading bytes of a stream of in_size bytes read_layout needs at
// most: the count and a full size table of max_parts entries (or the stream).
size_t header_bytes(size_t in_size, size_t max_parts);

// The layout of a stream of in_size bytes from its first
// min(header.size, ...) bytes (header.size >= header_bytes(in_size,
// max_parts)), checked as merge::decode(stream, max_total, max_parts) does.
Layout read_layout(ByteSpan header, size_t in_size, size_t max_total, size_t max_parts = 4096);

// The same for a stream in device memory: copies its header_bytes() leading
// bytes to the host, waits for `stream` (the only synchronisation here), and
// reads them. `layout` is filled when the return value is cudaSuccess.
cudaError_t read_layout(const uint8_t* in, size_t in_size, size_t max_total, size_t max_parts, Layout& layout,
                        cudaStream_t stream);

// Copies every part of a stream with a valid layout (status 0) to parts[i],
// which holds layout.sizes[i] bytes. Callers that can use the parts in place
// (in + layout.offsets[i]) need not call it.
cudaError_t split(const uint8_t* in, const Layout& layout, uint8_t* const* parts, cudaStream_t stream);

}  // namespace fz::merge::cuda
