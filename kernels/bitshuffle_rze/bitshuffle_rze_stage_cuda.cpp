// The fused pair BIT -> RZE1 (common/stage/stage_device.hpp, FusedDevicePair)
// over bitshuffle_rze_cuda.hpp, compiled only in CUDA builds. Its streams
// are the RZE stage's GPU part's (word_stage/elimination_stage_device.hpp):
// the coded length stays on the device, the decoded length is checked on the
// host against the limit before anything is allocated. Input the fused
// kernels cannot take (a length only the device knows, a pointer off 16
// bytes) runs the two stages' own GPU parts one after the other.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "bitshuffle_rze/bitshuffle_rze_cuda.hpp"
#include "common/stage/stage_device.hpp"
#include "word_stage/elimination_stage_device.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {
namespace {

unsigned width_of(const Stage& bitshuffle) { return static_cast<const WordStage&>(bitshuffle).width(); }

class BitshuffleRzePair final : public FusedDevicePair {
 public:
  bool accepts(const Stage& first, const Stage& second) const override {
    const auto* rze = dynamic_cast<const WordStage*>(&second);
    return first.type() == StageType::BitShuffle && dynamic_cast<const WordStage*>(&first) != nullptr &&
           second.type() == StageType::Rze && rze != nullptr && rze->width() == 1;
  }

  void forward(const Stage& first, const Stage& second, const DeviceBuffer& in, DeviceBuffer& out,
               DeviceWork& work) const override {
    if (in.device_size != nullptr || !bitshuffle_rze::cuda::takes_pointer(in.data)) {
      std::vector<DeviceBuffer> shuffled, coded;
      first.forward_device({in}, shuffled, work);
      second.forward_device(shuffled, coded, work);
      work.release(shuffled.at(0).data);
      out = coded.at(0);
      return;
    }
    out = elimination_device::coded_output(in.size, work);
    void* scratch = work.allocate(bitshuffle_rze::cuda::encode_scratch_bytes(in.size));
    work.check(bitshuffle_rze::cuda::encode(in.data, in.size, width_of(first), out.data, out.device_size, scratch,
                                            static_cast<cudaStream_t>(work.stream())),
               "bit-shuffle + RZE (GPU)");
    work.release(scratch);
  }

  void inverse(const Stage& first, const Stage& second, const DeviceBuffer& out, DeviceBuffer& in, DeviceWork& work,
               size_t max_stream_bytes) const override {
    const size_t n = elimination_device::decoded_length(out, work, max_stream_bytes);
    in = {work.allocate_rebuilt(n), n, nullptr, nullptr};
    if (!bitshuffle_rze::cuda::takes_pointer(in.data)) {
      work.release(in.data);
      std::vector<DeviceBuffer> shuffled, rebuilt;
      second.inverse_device({out}, shuffled, work, max_stream_bytes);
      first.inverse_device(shuffled, rebuilt, work, max_stream_bytes);
      work.release(shuffled.at(0).data);
      in = rebuilt.at(0);
      return;
    }
    uint64_t* decoded = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    void* scratch = work.allocate(bitshuffle_rze::cuda::decode_scratch_bytes(out.size, n));
    work.check(bitshuffle_rze::cuda::decode(out.data, out.size, width_of(first), in.data, n, decoded,
                                            work.status_word(), scratch, static_cast<cudaStream_t>(work.stream())),
               "bit-shuffle + RZE inverse (GPU)");
    work.release(scratch);
  }
};

}  // namespace

const FusedDevicePair& bitshuffle_rze_pair() {
  static const BitshuffleRzePair pair;
  return pair;
}

}  // namespace fz::stage
