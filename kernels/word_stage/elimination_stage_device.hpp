// The GPU halves of RZE and RRE (kernels/rze/rze_stage_cuda.cpp,
// kernels/rre/rre_stage_cuda.cpp), which differ only in the rule
// (docs/FORMAT.md, "RZE and RRE streams"). CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstring>

#include "common/error.hpp"
#include "elimination/elimination_cuda.hpp"
#include "word_stage/word_stage_device.hpp"

namespace fz::stage::elimination_device {

template <elimination::Rule rule>
constexpr const char* what(bool inverse) {
  if (rule == elimination::Rule::kNonZero) return inverse ? "RZE inverse (GPU)" : "RZE (GPU)";
  return inverse ? "RRE inverse (GPU)" : "RRE (GPU)";
}

// The coded stream of an input of at most `most` bytes: room for the longest
// coding, its length left on the device. (Also the fused BIT -> RZE pair's
// output, bitshuffle_rze/.)
inline DeviceBuffer coded_output(size_t most, DeviceWork& work) {
  DeviceBuffer out;
  out.capacity = elimination::cuda::max_encoded_bytes(most);
  out.data = work.allocate(out.capacity);
  out.size = 0;
  out.device_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
  return out;
}

// The coded length is data-dependent: it stays on the device. The input's
// length may be on the device too (a Huffman stream): then everything is
// sized for its capacity and the kernels read the length there.
template <elimination::Rule rule>
void forward(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work) {
  const size_t most = in.device_size ? in.capacity : in.size;
  out = coded_output(most, work);
  void* scratch = work.allocate(elimination::cuda::encode_scratch_bytes(most));
  const auto stream = static_cast<cudaStream_t>(work.stream());
  work.check(in.device_size ? elimination::cuda::encode_device_length(in.data, in.device_size, in.capacity, width,
                                                                      rule, out.data, out.device_size, scratch, stream)
                            : elimination::cuda::encode(in.data, in.size, width, rule, out.data, out.device_size,
                                                        scratch, stream),
             what<rule>(false));
  work.release(scratch);
}

// The length a stream decodes to, checked against the limit (FormatError)
// before the caller allocates it; the device checks everything else. It is
// the stream's first 8 bytes: on the host for a frame in host memory, else
// read back (a device-resident frame, or a stream an earlier GPU inverse
// produced).
inline size_t decoded_length(const DeviceBuffer& out, DeviceWork& work, size_t max_bytes) {
  require_format(out.size >= 8, "RZE/RRE: stream shorter than its header");
  uint8_t header[8];
  if (out.host) std::memcpy(header, out.host, 8);
  else work.read_back(out.data, 8, header);
  const uint64_t n = load_le<uint64_t>(header);
  require_format(n <= max_bytes, "RZE/RRE: decoded size exceeds the allowed maximum");
  return static_cast<size_t>(n);
}

template <elimination::Rule rule>
void inverse(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work, size_t max_bytes) {
  const size_t n = decoded_length(out, work, max_bytes);
  in = {work.allocate_rebuilt(n), n, nullptr, nullptr};
  uint64_t* decoded = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
  void* scratch = work.allocate(elimination::cuda::decode_scratch_bytes(out.size, n));
  work.check(elimination::cuda::decode(out.data, out.size, width, rule, in.data, n, decoded,
                                       work.status_word(), scratch, static_cast<cudaStream_t>(work.stream())),
             what<rule>(true));
  work.release(scratch);
}

}  // namespace fz::stage::elimination_device
