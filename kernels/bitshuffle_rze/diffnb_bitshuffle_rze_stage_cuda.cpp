// The fused triple DIFFNB -> BIT -> RZE1 (common/stage/stage_device.hpp,
// FusedDeviceTriple) over bitshuffle_rze_cuda.hpp's differenced coder, for
// pfpl's and lossless's chains of 4- and 8-byte words; compiled only in CUDA
// builds. Its streams are the pair's (bitshuffle_rze_stage_cuda.cpp): the
// coded length stays on the device, the decoded length is checked on the
// host against the limit before anything is allocated. Input the fused
// kernels cannot take (a length only the device knows, a pointer off 16
// bytes) runs DIFFNB's own GPU part and then the pair.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "bitshuffle_rze/bitshuffle_rze_cuda.hpp"
#include "common/stage/stage_device.hpp"
#include "word_stage/elimination_stage_device.hpp"
#include "word_stage/word_stage.hpp"

namespace fz::stage {

const FusedDevicePair& bitshuffle_rze_pair();  // (bitshuffle_rze_stage_cuda.cpp)

namespace {

const WordStage* word_stage(const Stage& stage, StageType type) {
  return stage.type() == type ? dynamic_cast<const WordStage*>(&stage) : nullptr;
}

class DiffnbBitshuffleRzeTriple final : public FusedDeviceTriple {
 public:
  bool accepts(const Stage& first, const Stage& second, const Stage& third) const override {
    const WordStage* diffnb = word_stage(first, StageType::DiffNb);
    const WordStage* shuffle = word_stage(second, StageType::BitShuffle);
    const WordStage* rze = word_stage(third, StageType::Rze);
    return diffnb && shuffle && rze && rze->width() == 1 && diffnb->width() == shuffle->width() &&
           (diffnb->width() == 4 || diffnb->width() == 8) && bitshuffle_rze_pair().accepts(second, third);
  }

  void forward(const Stage& first, const Stage& second, const Stage& third, const DeviceBuffer& in,
               DeviceBuffer& out, DeviceWork& work) const override {
    if (in.device_size != nullptr || !bitshuffle_rze::cuda::takes_pointer(in.data)) {
      std::vector<DeviceBuffer> differences;
      first.forward_device({in}, differences, work);
      bitshuffle_rze_pair().forward(second, third, differences.at(0), out, work);
      work.release(differences.at(0).data);
      return;
    }
    out = elimination_device::coded_output(in.size, work);
    void* scratch = work.allocate(bitshuffle_rze::cuda::encode_differenced_scratch_bytes(in.size));
    work.check(bitshuffle_rze::cuda::encode_differenced(in.data, in.size, width_of(first), out.data, out.device_size,
                                                        scratch, static_cast<cudaStream_t>(work.stream())),
               "DIFFNB + bit-shuffle + RZE (GPU)");
    work.release(scratch);
  }

  void inverse(const Stage& first, const Stage& second, const Stage& third, const DeviceBuffer& out,
               DeviceBuffer& in, DeviceWork& work, size_t max_stream_bytes) const override {
    const size_t n = elimination_device::decoded_length(out, work, max_stream_bytes);
    in = {work.allocate_rebuilt(n), n, nullptr, nullptr};
    if (!bitshuffle_rze::cuda::takes_pointer(in.data)) {
      work.release(in.data);
      DeviceBuffer differences;
      bitshuffle_rze_pair().inverse(second, third, out, differences, work, max_stream_bytes);
      std::vector<DeviceBuffer> rebuilt;
      first.inverse_device({differences}, rebuilt, work, max_stream_bytes);
      work.release(differences.data);
      in = rebuilt.at(0);
      return;
    }
    uint64_t* decoded = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    void* scratch = work.allocate(bitshuffle_rze::cuda::decode_scratch_bytes(out.size, n));
    work.check(bitshuffle_rze::cuda::decode_differenced(out.data, out.size, width_of(first), in.data, n, decoded,
                                                        work.status_word(), scratch,
                                                        static_cast<cudaStream_t>(work.stream())),
               "DIFFNB + bit-shuffle + RZE inverse (GPU)");
    work.release(scratch);
  }

 private:
  static unsigned width_of(const Stage& diffnb) { return static_cast<const WordStage&>(diffnb).width(); }
};

}  // namespace

const FusedDeviceTriple& diffnb_bitshuffle_rze_triple() {
  static const DiffnbBitshuffleRzeTriple triple;
  return triple;
}

}  // namespace fz::stage
