// Stages that transform one stream of fixed-width words into one stream, with a
// one-byte config holding the width: bit-shuffle, zigzag, difference/negabinary,
// byte swap, and the two elimination coders.
#include <cstring>
#include <functional>
#include <optional>

#include "bitshuffle/bitshuffle.hpp"
#include "byteswap/byteswap.hpp"
#include "common/elimination.hpp"
#include "common/error.hpp"
#include "diffnb/diffnb.hpp"
#include "rre/rre.hpp"
#include "rze/rze.hpp"
#include "stage.hpp"
#include "tcms/tcms.hpp"

#ifdef FZ_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "bitshuffle/bitshuffle_cuda.hpp"
#include "byteswap/byteswap_cuda.hpp"
#include "common/elimination_cuda.hpp"
#include "diffnb/diffnb_cuda.hpp"
#include "tcms/tcms_cuda.hpp"
#endif

namespace fz::engine {
namespace {

bool is_word_width(unsigned w) { return w == 1 || w == 2 || w == 4 || w == 8; }

using Transform = void (*)(ByteSpan, unsigned, Bytes&, const Executor&);
using Decoder = void (*)(ByteSpan, unsigned, Bytes&, size_t, const Executor&);
using DecoderInto = void (*)(ByteSpan, unsigned, uint8_t*, const Executor&);
using BlockCoderFor = BlockCoder (*)(unsigned);
// A stage's forward on the GPU (nullptr: none): fills `out` from `in`.
using DeviceForward = void (*)(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work);
// Its inverse on the GPU: rebuilds `in` from `out`, no stream above max_bytes.
using DeviceInverse = void (*)(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work,
                               size_t max_bytes);

#ifdef FZ_HAVE_CUDA
cudaStream_t stream_of(DeviceWork& work) { return static_cast<cudaStream_t>(work.stream()); }

void bitshuffle_device(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work) {
  out = {work.allocate(in.size), in.size, nullptr, nullptr};
  work.check(bitshuffle::cuda::encode(in.data, in.size, width, out.data, stream_of(work)), "bit-shuffle (GPU)");
}

void diffnb_device(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work) {
  out = {work.allocate(in.size), in.size, nullptr, nullptr};
  work.check(diffnb::cuda::encode(in.data, in.size, width, out.data, stream_of(work)), "diffnb (GPU)");
}

void tcms_device(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work) {
  out = {work.allocate(in.size), in.size, nullptr, nullptr};
  work.check(tcms::cuda::encode(in.data, in.size, width, out.data, stream_of(work)), "tcms (GPU)");
}

void tcms_device_inverse(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work, size_t) {
  in = {work.allocate(out.size), out.size, nullptr, nullptr};
  work.check(tcms::cuda::decode(out.data, out.size, width, in.data, stream_of(work)), "tcms inverse (GPU)");
}

// Its own inverse: one function serves both directions.
void byteswap_device(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work) {
  out = {work.allocate(in.size), in.size, nullptr, nullptr};
  work.check(byteswap::cuda::apply(in.data, in.size, width, out.data, stream_of(work)), "byteswap (GPU)");
}

void byteswap_device_inverse(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work, size_t) {
  byteswap_device(out, in, width, work);
}

void bitshuffle_device_inverse(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work, size_t) {
  in = {work.allocate(out.size), out.size, nullptr, nullptr};
  work.check(bitshuffle::cuda::decode(out.data, out.size, width, in.data, stream_of(work)), "bit-shuffle inverse (GPU)");
}

void diffnb_device_inverse(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work, size_t) {
  in = {work.allocate(out.size), out.size, nullptr, nullptr};
  work.check(diffnb::cuda::decode(out.data, out.size, width, in.data, stream_of(work)), "diffnb inverse (GPU)");
}

// The host checks the decoded length against the limit before allocating; the
// device checks everything else.
template <elimination::Rule rule>
void elimination_device_inverse(const DeviceBuffer& out, DeviceBuffer& in, unsigned width, DeviceWork& work,
                                size_t max_bytes) {
  require_format(out.size >= 8, "RZE/RRE: stream shorter than its header");
  // The decoded length is the stream's first 8 bytes: on the host for a frame
  // in host memory, else read back (a device-resident frame, or a stream an
  // earlier GPU inverse produced).
  uint8_t header[8];
  if (out.host) std::memcpy(header, out.host, 8);
  else work.read_back(out.data, 8, header);
  const uint64_t n = load_le<uint64_t>(header);
  require_format(n <= max_bytes, "RZE/RRE: decoded size exceeds the allowed maximum");
  in = {work.allocate(static_cast<size_t>(n)), static_cast<size_t>(n), nullptr, nullptr};
  uint64_t* decoded = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
  void* scratch = work.allocate(elimination::cuda::decode_scratch_bytes(out.size, static_cast<size_t>(n)));
  work.check(elimination::cuda::decode(out.data, out.size, width, rule, in.data, static_cast<size_t>(n), decoded,
                                       work.status_word(), scratch, stream_of(work)),
             rule == elimination::Rule::kNonZero ? "RZE inverse (GPU)" : "RRE inverse (GPU)");
}

template <elimination::Rule rule>
void elimination_device(const DeviceBuffer& in, DeviceBuffer& out, unsigned width, DeviceWork& work) {
  out.capacity = elimination::cuda::max_encoded_bytes(in.size);
  out.data = work.allocate(out.capacity);
  out.size = 0;
  out.device_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
  void* scratch = work.allocate(elimination::cuda::encode_scratch_bytes(in.size));
  work.check(elimination::cuda::encode(in.data, in.size, width, rule, out.data, out.device_size, scratch,
                                       stream_of(work)),
             rule == elimination::Rule::kNonZero ? "RZE (GPU)" : "RRE (GPU)");
}
#endif

// The elimination coders' output, decoded one sub-chunk at a time.
class EliminationSource final : public BlockSource {
 public:
  EliminationSource(ByteSpan stream, unsigned width, elimination::Rule rule, size_t max_out)
      : blocks_(stream, width, rule, max_out) {}
  size_t size() const override { return blocks_.size(); }
  void decode_block(size_t block, uint8_t* dst) const override { blocks_.decode_block(block, dst); }

 private:
  elimination::StreamBlocks blocks_;
};

// How a stage takes part in fused chains (Pipeline::forward, run_inverse).
struct Blockwise {
  BlockCoderFor encoder = nullptr;            // block-local forward and
  BlockCoderFor decoder = nullptr;            // inverse, or
  std::optional<elimination::Rule> stream;      // an elimination stream (ends a forward chain, starts an inverse one)
};

struct OnDevice {
  DeviceForward forward = nullptr;
  bool sizes_on_host = true;
  DeviceInverse inverse = nullptr;
  bool inverse_reads_host = false;
};

// A one-in, one-out stage described by its kernels. Length-preserving kernels
// take no output bound; the elimination decoders do (`decode_bounded`).
class WordStage final : public Stage {
 public:
  WordStage(StageType type, const char* name, unsigned width, Transform encode, Transform decode,
            Decoder decode_bounded, DecoderInto decode_into = nullptr, Blockwise blockwise = {},
            OnDevice on_device = {})
      : type_(type), name_(name), width_(width), encode_(encode), decode_(decode),
        decode_bounded_(decode_bounded), decode_into_(decode_into), blockwise_(blockwise), on_device_(on_device) {
    if (!is_word_width(width)) throw UsageError(std::string(name) + ": width must be 1, 2, 4 or 8");
  }
  StageType type() const override { return type_; }
  std::string name() const override { return name_ + std::to_string(width_); }
  Bytes config() const override { return Bytes{static_cast<uint8_t>(width_)}; }

  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override {
    out.resize(1);
    encode_(in.at(0), width_, out[0], ctx.exec);
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    in.resize(1);
    if (decode_bounded_) {
      decode_bounded_(out.at(0), width_, in[0], ctx.max_stream_bytes, ctx.exec);
    } else {
      require_format(out.at(0).size <= ctx.max_stream_bytes, "stream larger than the frame allows");
      decode_(out.at(0), width_, in[0], ctx.exec);
    }
  }
  std::optional<size_t> inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                     const StageContext& ctx) const override {
    if (!decode_into_ || out.at(0).size > capacity) return std::nullopt;  // same length as its input
    decode_into_(out.at(0), width_, dst, ctx.exec);
    return out.at(0).size;
  }
  bool has_device_forward() const override { return on_device_.forward != nullptr; }
  bool device_output_size_on_host(size_t) const override { return on_device_.sizes_on_host; }
  void forward_device(const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    if (!on_device_.forward) Stage::forward_device(in, out, work);
    out.resize(1);
    on_device_.forward(in.at(0), out[0], width_, work);
  }
  bool has_device_inverse() const override { return on_device_.inverse != nullptr; }
  bool device_inverse_reads_host_bytes() const override { return on_device_.inverse_reads_host; }
  void inverse_device(const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in, DeviceWork& work,
                      size_t max_stream_bytes) const override {
    if (!on_device_.inverse) Stage::inverse_device(out, in, work, max_stream_bytes);
    // The limit applies where the CPU applies it: to the stream a
    // length-preserving stage rebuilds (its input's length); a bounded
    // decoder checks the length it decodes to itself. Refusing more than the
    // CPU refuses would send valid chunks to the CPU.
    if (!decode_bounded_) require_format(out.at(0).size <= max_stream_bytes, "stream larger than the frame allows");
    in.resize(1);
    on_device_.inverse(out.at(0), in[0], width_, work, max_stream_bytes);
  }
  BlockCoder forward_block_coder() const override {
    return blockwise_.encoder ? blockwise_.encoder(width_) : nullptr;
  }
  bool forward_from_blocks(size_t n, const std::function<const uint8_t*(size_t, uint8_t*)>& produce,
                           std::vector<Bytes>& out, const StageContext& ctx) const override {
    if (!blockwise_.stream) return false;
    out.resize(1);
    elimination::encode_stream_blocks(n, width_, *blockwise_.stream, out[0], ctx.exec, produce);
    return true;
  }
  BlockCoder inverse_block_coder() const override {
    return blockwise_.decoder ? blockwise_.decoder(width_) : nullptr;
  }
  std::unique_ptr<BlockSource> inverse_source(ByteSpan output, const StageContext& ctx) const override {
    if (!blockwise_.stream) return nullptr;
    return std::make_unique<EliminationSource>(output, width_, *blockwise_.stream, ctx.max_stream_bytes);
  }

 private:
  StageType type_;
  std::string name_;
  unsigned width_;
  Transform encode_, decode_;
  Decoder decode_bounded_;
  DecoderInto decode_into_;
  Blockwise blockwise_;
  OnDevice on_device_;
};

#ifdef FZ_HAVE_CUDA
constexpr OnDevice kBitshuffleOnDevice{bitshuffle_device, true, bitshuffle_device_inverse, false};
constexpr OnDevice kDiffnbOnDevice{diffnb_device, true, diffnb_device_inverse, false};
constexpr OnDevice kTcmsOnDevice{tcms_device, true, tcms_device_inverse, false};
constexpr OnDevice kByteswapOnDevice{byteswap_device, true, byteswap_device_inverse, false};
constexpr OnDevice kRzeOnDevice{elimination_device<elimination::Rule::kNonZero>, false,
                                elimination_device_inverse<elimination::Rule::kNonZero>, false};
constexpr OnDevice kRreOnDevice{elimination_device<elimination::Rule::kChanged>, false,
                                elimination_device_inverse<elimination::Rule::kChanged>, false};
#else
constexpr OnDevice kBitshuffleOnDevice{}, kDiffnbOnDevice{}, kTcmsOnDevice{}, kByteswapOnDevice{}, kRzeOnDevice{},
    kRreOnDevice{};
#endif

void byteswap_apply(ByteSpan in, unsigned w, Bytes& out, const Executor& e) { byteswap::apply(in, w, out, e); }

}  // namespace

std::unique_ptr<Stage> make_bitshuffle(unsigned w) {
  return std::make_unique<WordStage>(StageType::BitShuffle, "bitshuffle", w, bitshuffle::encode, bitshuffle::decode,
                                     nullptr, nullptr, Blockwise{bitshuffle::block_encoder, bitshuffle::block_decoder, {}},
                                     kBitshuffleOnDevice);
}
std::unique_ptr<Stage> make_tcms(unsigned w) {
  return std::make_unique<WordStage>(StageType::Tcms, "tcms", w, tcms::encode, tcms::decode, nullptr, nullptr,
                                     Blockwise{}, kTcmsOnDevice);
}
std::unique_ptr<Stage> make_diffnb(unsigned w) {
  return std::make_unique<WordStage>(StageType::DiffNb, "diffnb", w, diffnb::encode, diffnb::decode, nullptr,
                                     diffnb::decode_into, Blockwise{diffnb::block_encoder, diffnb::block_decoder, {}}, kDiffnbOnDevice);
}
std::unique_ptr<Stage> make_byteswap(unsigned w) {
  return std::make_unique<WordStage>(StageType::ByteSwap, "byteswap", w, byteswap_apply, byteswap_apply, nullptr,
                                     nullptr, Blockwise{}, kByteswapOnDevice);
}
std::unique_ptr<Stage> make_rze(unsigned w) {
  return std::make_unique<WordStage>(StageType::Rze, "rze", w, rze::encode, nullptr, rze::decode, nullptr,
                                     Blockwise{nullptr, nullptr, elimination::Rule::kNonZero}, kRzeOnDevice);
}
std::unique_ptr<Stage> make_rre(unsigned w) {
  return std::make_unique<WordStage>(StageType::Rre, "rre", w, rre::encode, nullptr, rre::decode, nullptr,
                                     Blockwise{nullptr, nullptr, elimination::Rule::kChanged}, kRreOnDevice);
}

}  // namespace fz::engine
