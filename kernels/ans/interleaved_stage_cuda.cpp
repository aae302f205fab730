// ANS, interleaved (stage type 15, "ansi"): its GPU part
// (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
// Kernels and host dispatch: ans/interleaved_cuda.hpp.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "ans/ans_cuda.hpp"
#include "ans/interleaved_cuda.hpp"
#include "ans/interleaved_stage.hpp"
#include "ans/stage_cuda_prefix.hpp"
#include "common/error.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

namespace icuda = ans::interleaved_cuda;

class AnsInterleavedDevice final : public StageDeviceFor<AnsInterleavedStage> {
 public:
  // The forward comes back to the host twice (the symbol counts, for m; the
  // tile histograms, for the plan) and leaves the stream's length on the
  // device, where it chooses between method 1 and method 0.
  bool device_output_size_on_host(const AnsInterleavedStage&, size_t) const override { return false; }

  void forward_device(const AnsInterleavedStage& stage, const std::vector<DeviceBuffer>& in,
                      std::vector<DeviceBuffer>& out, DeviceWork& work) const override {
    const ans::InterleavedConfig& config = stage.coder_config();
    const DeviceBuffer& symbols = in.at(0);
    if (symbols.size % 2 != 0) throw UsageError("ANS input is u16 symbols: its length must be even");
    const uint64_t n = symbols.size / 2;
    const auto stream = static_cast<cudaStream_t>(work.stream());
    icuda::TilePlan tiles = icuda::plan_tiles(nullptr, 0, config);
    ans::interleaved_format::TileHistograms histograms;
    uint8_t* tile_counts = nullptr;
    if (n > 0) {
      // Counts and the out-of-alphabet flag in one allocation, one copy back.
      const size_t flag_at = sizeof(uint64_t) * config.alphabet;
      uint8_t* device = work.allocate(flag_at + sizeof(uint64_t));
      work.check(ans::cuda::symbol_histogram(symbols.data, n, config.alphabet, reinterpret_cast<uint64_t*>(device),
                                             reinterpret_cast<uint32_t*>(device + flag_at), stream),
                 "ANS interleaved histogram (GPU)");
      std::vector<uint64_t> counts(config.alphabet + 1);
      work.read_back(device, flag_at + sizeof(uint64_t), reinterpret_cast<uint8_t*>(counts.data()));
      if (static_cast<uint32_t>(counts[config.alphabet]) != 0)
        throw UsageError("ANS input holds a symbol outside the alphabet");
      tiles = icuda::plan_tiles(counts.data(), n, config);
      tile_counts = work.allocate(icuda::tile_counts_bytes(tiles));
      work.check(icuda::count_tiles(symbols.data, tiles, tile_counts, stream), "ANS interleaved tiles (GPU)");
      work.read_back(tile_counts, icuda::kHistogramBytes, reinterpret_cast<uint8_t*>(&histograms));
    }
    const icuda::EncodePlan plan = icuda::plan_encode(tiles, histograms, config);
    out.resize(1);
    out[0] = {work.allocate(plan.max_encoded_bytes), 0, nullptr, nullptr};
    auto* encoded_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    void* scratch = work.allocate(icuda::encode_scratch_bytes(plan));
    work.check(icuda::encode(symbols.data, tile_counts, plan, out[0].data, encoded_size, scratch, stream),
               "ANS interleaved (GPU)");
    work.release(scratch);
    out[0].device_size = encoded_size;
    out[0].capacity = plan.max_encoded_bytes;
  }

  // The head, tables and lane records are validated on the host by the CPU
  // decoder's own checks (FormatError), from the frame's bytes or a prefix
  // read back (interleaved_format::parse says how long, twice at most); the
  // device reports what it refuses in the lanes in the status word.
  void inverse_device(const AnsInterleavedStage& stage, const std::vector<DeviceBuffer>& out,
                      std::vector<DeviceBuffer>& in, DeviceWork& work, size_t max_stream_bytes) const override {
    const ans::InterleavedConfig& config = stage.coder_config();
    const DeviceBuffer& stream = out.at(0);
    const icuda::DecodePlan plan = plan_from_stream_head(
        stream, work, icuda::kFirstPrefixBytes, 2, "ANS interleaved: parse asked for a prefix three times",
        [&](const uint8_t* head, size_t bytes) {
          return icuda::plan_decode(head, bytes, stream.size, config, max_stream_bytes);
        });
    in.resize(1);
    const size_t bytes = static_cast<size_t>(2 * plan.n);
    in[0] = {work.allocate_rebuilt(bytes), bytes, nullptr, nullptr};
    void* scratch = work.allocate(icuda::decode_scratch_bytes(plan));
    work.check(icuda::decode(stream.data, plan, in[0].data, work.status_word(), scratch,
                             static_cast<cudaStream_t>(work.stream())),
               "ANS interleaved inverse (GPU)");
    work.release(scratch);
  }
};

}  // namespace

const StageDevice& ansi_stage_device() {
  static const AnsInterleavedDevice part;
  return part;
}

}  // namespace fz::stage
