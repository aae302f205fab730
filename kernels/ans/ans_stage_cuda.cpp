// ANS's GPU part (kernels/common/stage/stage_device.hpp), compiled only in CUDA builds.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "ans/ans_cuda.hpp"
#include "ans/ans_stage.hpp"
#include "ans/stage_cuda_prefix.hpp"
#include "common/error.hpp"
#include "common/stage/stage_device.hpp"

namespace fz::stage {
namespace {

class AnsDevice final : public StageDeviceFor<AnsStage> {
 public:
  // The forward comes back to the host twice (the symbol counts, for m and
  // the symbol table; the run-token counts) and leaves the stream's length on
  // the device, where it chooses between method 1 and method 0.
  bool device_output_size_on_host(const AnsStage&, size_t) const override { return false; }

  void forward_device(const AnsStage& stage, const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    const ans::Config& config = stage.coder_config();
    const DeviceBuffer& symbols = in.at(0);
    if (symbols.size % 2 != 0) throw UsageError("ANS input is u16 symbols: its length must be even");
    const uint64_t n = symbols.size / 2;
    const auto stream = static_cast<cudaStream_t>(work.stream());
    ans::cuda::TokenPlan tokens = ans::cuda::plan_tokens(nullptr, 0, config);
    std::vector<uint64_t> runs(ans::kRunTokens, 0);
    uint32_t* mask = nullptr;
    if (n > 0) {
      // Counts and the out-of-alphabet flag in one allocation, one copy back.
      const size_t flag_at = sizeof(uint64_t) * config.alphabet;
      uint8_t* device = work.allocate(flag_at + sizeof(uint64_t));
      work.check(ans::cuda::symbol_histogram(symbols.data, n, config.alphabet, reinterpret_cast<uint64_t*>(device),
                                             reinterpret_cast<uint32_t*>(device + flag_at), stream),
                 "ANS histogram (GPU)");
      std::vector<uint64_t> counts(config.alphabet + 1);
      work.read_back(device, flag_at + sizeof(uint64_t), reinterpret_cast<uint8_t*>(counts.data()));
      if (static_cast<uint32_t>(counts[config.alphabet]) != 0)
        throw UsageError("ANS input holds a symbol outside the alphabet");
      tokens = ans::cuda::plan_tokens(counts.data(), n, config);
      mask = reinterpret_cast<uint32_t*>(work.allocate(ans::cuda::mask_bytes(n, config)));
      auto* run_counts = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t) * ans::kRunTokens));
      work.check(ans::cuda::count_run_tokens(symbols.data, tokens, config, mask, run_counts, stream),
                 "ANS run tokens (GPU)");
      work.read_back(reinterpret_cast<const uint8_t*>(run_counts), sizeof(uint64_t) * ans::kRunTokens,
                     reinterpret_cast<uint8_t*>(runs.data()));
    }
    const ans::cuda::EncodePlan plan = ans::cuda::plan_encode(tokens, runs.data(), config);
    out.resize(1);
    out[0] = {work.allocate(plan.max_encoded_bytes), 0, nullptr, nullptr};
    auto* encoded_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    void* scratch = work.allocate(ans::cuda::encode_scratch_bytes(plan));
    work.check(ans::cuda::encode(symbols.data, mask, plan, out[0].data, encoded_size, scratch, stream), "ANS (GPU)");
    work.release(scratch);
    out[0].device_size = encoded_size;
    out[0].capacity = plan.max_encoded_bytes;
  }

  // The head, tables and lane arrays are validated on the host by the CPU
  // decoder's own checks (FormatError), from the frame's bytes or a prefix
  // read back (format::parse says how long); the device reports what it
  // refuses in the lanes in the status word.
  void inverse_device(const AnsStage& stage, const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in,
                      DeviceWork& work, size_t max_stream_bytes) const override {
    const ans::Config& config = stage.coder_config();
    const DeviceBuffer& stream = out.at(0);
    const ans::cuda::DecodePlan plan = plan_from_stream_head(
        stream, work, ans::cuda::kFirstPrefixBytes, 1, "ANS: format::parse asked for a prefix twice",
        [&](const uint8_t* head, size_t bytes) {
          return ans::cuda::plan_decode(head, bytes, stream.size, config, max_stream_bytes);
        });
    in.resize(1);
    const size_t bytes = static_cast<size_t>(2 * plan.n);
    in[0] = {work.allocate_rebuilt(bytes), bytes, nullptr, nullptr};
    void* scratch = work.allocate(ans::cuda::decode_scratch_bytes(plan));
    work.check(ans::cuda::decode(stream.data, plan, in[0].data, work.status_word(), scratch,
                                 static_cast<cudaStream_t>(work.stream())),
               "ANS inverse (GPU)");
    work.release(scratch);
  }
};

}  // namespace

const StageDevice& ans_stage_device() {
  static const AnsDevice part;
  return part;
}

}  // namespace fz::stage
