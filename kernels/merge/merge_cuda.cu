// CUDA MERGE / SPLIT (stream format: merge.hpp, interface: merge_cuda.hpp).
//
// Merging is a header and one device copy per part. The header's sizes travel
// to the device as kernel arguments, a batch at a time, so nothing is
// allocated and no host buffer has to outlive the call. Splitting checks the
// header on the host, in the same order and with the same 64-bit arithmetic
// as merge::decode, so both refuse exactly the same streams.
#include "merge/merge_cuda.hpp"

#include <algorithm>
#include <limits>

namespace fz::merge::cuda {
namespace {

constexpr size_t kCountBytes = sizeof(uint32_t);
constexpr size_t kSizeBytes = sizeof(uint64_t);
constexpr unsigned kSizesPerLaunch = 64;  // 512 bytes of kernel arguments

struct SizeBatch {
  uint64_t size[kSizesPerLaunch];
};

// Writes sizes [first, first + count) of the table, and the part count with
// the first batch; little-endian byte by byte (the table sits at offset 4).
__global__ void write_header(uint8_t* out, uint32_t parts, uint32_t first, unsigned count, SizeBatch batch) {
  const unsigned t = threadIdx.x;
  if (first == 0 && t < kCountBytes) out[t] = static_cast<uint8_t>(parts >> (8 * t));
  for (unsigned b = t; b < count * kSizeBytes; b += blockDim.x) {
    const unsigned entry = b / kSizeBytes, byte = b % kSizeBytes;
    out[kCountBytes + (static_cast<size_t>(first) + entry) * kSizeBytes + byte] =
        static_cast<uint8_t>(batch.size[entry] >> (8 * byte));
  }
}

}  // namespace

size_t encoded_size(const std::vector<Part>& parts) {
  size_t total = kCountBytes + kSizeBytes * parts.size();
  for (const Part& part : parts) total += part.size;
  return total;
}

cudaError_t encode(const std::vector<Part>& parts, uint8_t* out, cudaStream_t stream) {
  if (parts.empty() || parts.size() > std::numeric_limits<uint32_t>::max()) return cudaErrorInvalidValue;
  const uint32_t count = static_cast<uint32_t>(parts.size());
  for (uint32_t first = 0; first < count; first += kSizesPerLaunch) {
    const unsigned batch_count = std::min<uint32_t>(kSizesPerLaunch, count - first);
    SizeBatch batch{};
    for (unsigned i = 0; i < batch_count; ++i) batch.size[i] = parts[first + i].size;
    write_header<<<1, kSizesPerLaunch * kSizeBytes, 0, stream>>>(out, count, first, batch_count, batch);
  }
  cudaError_t err = cudaGetLastError();
  size_t offset = kCountBytes + kSizeBytes * parts.size();
  for (const Part& part : parts) {
    if (err != cudaSuccess) break;
    if (part.size != 0)
      err = cudaMemcpyAsync(out + offset, part.data, part.size, cudaMemcpyDeviceToDevice, stream);
    offset += part.size;
  }
  return err;
}

size_t header_bytes(size_t in_size, size_t max_parts) {
  // Beyond max_parts entries the count alone refuses the stream.
  const size_t table = max_parts < (std::numeric_limits<size_t>::max() - kCountBytes) / kSizeBytes
                           ? kCountBytes + kSizeBytes * max_parts
                           : std::numeric_limits<size_t>::max();
  return std::min(in_size, table);
}

Layout read_layout(ByteSpan header, size_t in_size, size_t max_total, size_t max_parts) {
  Layout layout;
  auto refuse = [&layout](uint32_t why) {
    layout.status = why;
    return layout;
  };
  if (in_size < kCountBytes || header.size < kCountBytes) return refuse(kShorterThanCount);
  const uint32_t count = load_le<uint32_t>(header.data);
  if (count < 1) return refuse(kZeroCount);
  if (count > max_parts) return refuse(kTooManyParts);
  if (count > (in_size - kCountBytes) / kSizeBytes) return refuse(kSizeTableTruncated);
  const size_t table_end = kCountBytes + kSizeBytes * count;
  if (header.size < table_end) return refuse(kSizeTableTruncated);  // the caller gave less than header_bytes()
  const size_t payload = in_size - table_end;
  uint64_t total = 0;
  layout.offsets.resize(count);
  layout.sizes.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t size = load_le<uint64_t>(header.data + kCountBytes + kSizeBytes * i);
    if (!(size <= max_total && size <= payload - total)) {
      layout.offsets.clear();
      layout.sizes.clear();
      return refuse(kSizesExceedPayload);
    }
    layout.offsets[i] = table_end + total;
    layout.sizes[i] = size;
    total += size;
  }
  uint32_t status = 0;
  if (total > max_total) status = kTotalExceedsLimit;
  else if (total != payload) status = kTrailingBytes;
  if (status != 0) {
    layout.offsets.clear();
    layout.sizes.clear();
    layout.status = status;
  }
  return layout;
}

cudaError_t read_layout(const uint8_t* in, size_t in_size, size_t max_total, size_t max_parts, Layout& layout,
                        cudaStream_t stream) {
  Bytes header(header_bytes(in_size, max_parts));
  if (!header.empty()) {
    cudaError_t err = cudaMemcpyAsync(header.data(), in, header.size(), cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
    if (err != cudaSuccess) return err;
  }
  layout = read_layout(ByteSpan(header), in_size, max_total, max_parts);
  return cudaSuccess;
}

cudaError_t split(const uint8_t* in, const Layout& layout, uint8_t* const* parts, cudaStream_t stream) {
  if (layout.status != 0 || layout.offsets.size() != layout.sizes.size()) return cudaErrorInvalidValue;
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    if (layout.sizes[i] == 0) continue;
    const cudaError_t err =
        cudaMemcpyAsync(parts[i], in + layout.offsets[i], layout.sizes[i], cudaMemcpyDeviceToDevice, stream);
    if (err != cudaSuccess) return err;
  }
  return cudaSuccess;
}

}  // namespace fz::merge::cuda
