// HUFFMAN's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "common/error.hpp"
#include "huffman/huffman_cuda.hpp"
#include "huffman/huffman_stage.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

class HuffmanDevice final : public StageDeviceFor<HuffmanStage> {
 public:
  // The GPU forward comes back to the host once, for the histogram (the code
  // lengths are the CPU's host routine). The stream's length stays on the
  // device, where the stage after it (RZE in cusz and cuszhi-cr) reads it:
  // waiting for it cost each Huffman stage a drained queue (cuszhi-cr has
  // three), docs/PERFORMANCE.md.
  bool device_output_size_on_host(const HuffmanStage&, size_t) const override { return false; }

  void forward_device(const HuffmanStage& stage, const std::vector<DeviceBuffer>& in,
                      std::vector<DeviceBuffer>& out, DeviceWork& work) const override {
    const huffman::Config& config = stage.coder_config();
    const DeviceBuffer& symbols = in.at(0);
    if (symbols.size % 2 != 0) throw UsageError("Huffman input is u16 symbols: its length must be even");
    const uint64_t n = symbols.size / 2;
    const auto stream = static_cast<cudaStream_t>(work.stream());
    std::vector<uint64_t> counts;
    if (n > 0) {
      // Counts and the out-of-alphabet flag in one allocation, one copy back.
      const size_t flag_at = sizeof(uint64_t) * config.alphabet;
      uint8_t* device = work.allocate(flag_at + sizeof(uint64_t));
      work.check(huffman::cuda::histogram(symbols.data, n, config.alphabet, reinterpret_cast<uint64_t*>(device),
                                          reinterpret_cast<uint32_t*>(device + flag_at), stream),
                 "Huffman histogram (GPU)");
      counts.resize(config.alphabet + 1);
      work.read_back(device, flag_at + sizeof(uint64_t), reinterpret_cast<uint8_t*>(counts.data()));
      if (static_cast<uint32_t>(counts[config.alphabet]) != 0)
        throw UsageError("Huffman input holds a symbol outside the alphabet");
    }
    const huffman::cuda::EncodePlan plan = huffman::cuda::plan_encode(counts.data(), n, config);
    out.resize(1);
    out[0] = {work.allocate(plan.max_encoded_bytes), 0, nullptr, nullptr};
    auto* encoded_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    void* scratch = work.allocate(huffman::cuda::encode_scratch_bytes(plan));
    work.check(huffman::cuda::encode(symbols.data, plan, out[0].data, encoded_size, scratch, stream),
               "Huffman (GPU)");
    work.release(scratch);
    out[0].device_size = encoded_size;
    out[0].capacity = plan.max_encoded_bytes;
    // The encoder writes a length of 0 when the stream would need 2^32 words
    // or more; only inputs that could need that many are checked here (no
    // chunk that HDF5 or the engine takes comes near: n * L / 32 + blocks
    // words at most).
    const uint64_t most_words = n / 32 * config.max_length + config.max_length + plan.blocks;
    if (most_words >= (uint64_t{1} << 32)) {
      uint64_t size = 0;
      work.read_back(reinterpret_cast<const uint8_t*>(encoded_size), sizeof size, reinterpret_cast<uint8_t*>(&size));
      if (size == 0) throw UsageError("Huffman input too large: over 2^32 coded words");
      out[0].size = static_cast<size_t>(size);
      out[0].capacity = out[0].size;
    }
  }

  // The header, code-length table and block table are validated on the host
  // by the CPU decoder's own checks (FormatError); from the frame's bytes, or,
  // for a stream another GPU stage rebuilt, from a prefix read back from the
  // device. The device reports what it refuses in the blocks in a status word.
  void inverse_device(const HuffmanStage& stage, const std::vector<DeviceBuffer>& out,
                      std::vector<DeviceBuffer>& in, DeviceWork& work, size_t max_stream_bytes) const override {
    const DeviceBuffer& stream = out.at(0);
    const auto cuda_stream = static_cast<cudaStream_t>(work.stream());
    std::vector<uint8_t> downloaded;
    const uint8_t* prefix = stream.host;
    size_t prefix_size = stream.size;
    if (!prefix) {
      // One read back covers the header and block table of streams up to
      // about 64 Mi symbols (cusz's blocks); longer ones need a second.
      constexpr size_t kFirstRead = size_t{16} << 10;
      const auto read = [&](size_t bytes) {
        downloaded.resize(bytes);
        work.read_back(stream.data, bytes, downloaded.data());
      };
      read(std::min(stream.size, kFirstRead));
      const size_t needed = huffman::cuda::decode_prefix_bytes(downloaded.data(), downloaded.size(), stream.size);
      if (needed > downloaded.size()) read(needed);
      prefix = downloaded.data();
      prefix_size = downloaded.size();
    }
    stage.check_stream_header(prefix, stream.size);
    const huffman::cuda::DecodePlan plan =
        huffman::cuda::plan_decode(prefix, prefix_size, stream.size, max_stream_bytes);
    in.resize(1);
    const size_t bytes = static_cast<size_t>(2 * plan.n);
    in[0] = {work.allocate_rebuilt(bytes), bytes, nullptr, nullptr};
    void* scratch = work.allocate(huffman::cuda::decode_scratch_bytes(plan));
    work.check(huffman::cuda::decode(stream.data, plan, in[0].data, work.status_word(), scratch, cuda_stream),
               "Huffman inverse (GPU)");
    work.release(scratch);
  }
};

}  // namespace

const StageDevice& huffman_stage_device() {
  static const HuffmanDevice part;
  return part;
}

}  // namespace fz::stage
