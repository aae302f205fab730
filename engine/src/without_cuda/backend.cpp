// The CUDA backend's entry points in a build without CUDA (engine/CMakeLists.txt
// compiles this file instead of engine/src/cuda/): no GPU encoder or decoder,
// so the flows run on the CPU; the device-resident API checks
// device_of_pointer first and never reaches the calls that throw.
#include "device_forward.hpp"

namespace fz::engine {

int cuda_device_count() { return 0; }

std::unique_ptr<ChunkEncoder> make_gpu_encoder(ByteSpan, const Policy&) { return nullptr; }

std::optional<size_t> inverse_on_device(const Pipeline&, const std::vector<ByteSpan>&, uint8_t*, size_t, size_t,
                                        const Policy&, std::optional<uint32_t>) {
  return std::nullopt;
}
std::optional<size_t> inverse_on_device(const Pipeline&, const std::vector<ByteSpan>&, uint8_t*, size_t, size_t,
                                        int, unsigned, std::optional<uint32_t>) {
  return std::nullopt;
}

std::optional<int> device_of_pointer(const void*) { return std::nullopt; }

namespace {
[[noreturn]] void no_cuda() { throw Error("this build has no CUDA backend"); }
}  // namespace

std::unique_ptr<ChunkEncoder> make_resident_encoder(const uint8_t*, size_t, int, const Policy&) { no_cuda(); }
std::unique_ptr<ChunkEncoder> make_through_host_encoder(const uint8_t*, size_t, int, const Policy&) { no_cuda(); }
FrameOut store_raw_on_device(const uint8_t*, const FrameInfo&, FrameTarget, int) { no_cuda(); }
Bytes read_device_frame_header(const uint8_t*, size_t, int) { no_cuda(); }
std::optional<size_t> decompress_device_resident(const Pipeline&, const FrameInfo&, const uint8_t*, uint8_t*, size_t,
                                                 size_t, int) {
  no_cuda();
}
void copy_device_to_host(const uint8_t*, size_t, uint8_t*, int) { no_cuda(); }
void copy_host_to_device(const uint8_t*, size_t, uint8_t*, int) { no_cuda(); }
uint8_t* allocate_device(size_t, int) { no_cuda(); }
void free_device(uint8_t*, int) {}

std::optional<std::vector<Bytes>> forward_on_device(const Pipeline&, ByteSpan, int) { return std::nullopt; }
bool runs_on_device(const Pipeline&) { return false; }
bool inverse_runs_on_device(const Pipeline&) { return false; }

}  // namespace fz::engine
