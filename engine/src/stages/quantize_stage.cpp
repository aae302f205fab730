// QUANTIZE: direct error-bounded quantizer (ABS / NOA / REL), float32 and float64.
// Inputs: in. Outputs: codes (one element-wide word each), outliers, params.
// Config (little-endian): u8 width | u8 mode | f64 user bound | u8 has_fill | u64 fill bits.
// The decoder needs only the params stream; the config records the request.
#include "common/error.hpp"
#include "quantize/quantize.hpp"
#include "stage.hpp"

#ifdef FZ_HAVE_CUDA
#include "quantize/quantize_cuda.hpp"
#endif

namespace fz::engine {
namespace {

// ABS/NOA codes decoded as a fused chain delivers them (quantize.hpp).
class QuantizeSink final : public BlockSink {
 public:
  QuantizeSink(ByteSpan outliers, ByteSpan params, size_t codes_bytes) : decoder_(outliers, params, codes_bytes) {}
  size_t size() const override { return decoder_.decoded_bytes(); }
  void consume(size_t block, const uint8_t* data, uint8_t* dst) override { decoder_.consume(block, data, dst); }
  void finish(uint8_t* dst) override { decoder_.finish(dst); }

 private:
  quantize::BlockwiseDecoder decoder_;
};

// The codes encoded block by block for a fused chain (quantize.hpp).
class QuantizeSource final : public ForwardSource {
 public:
  explicit QuantizeSource(std::unique_ptr<quantize::BlockwiseEncoder> encoder) : encoder_(std::move(encoder)) {}
  size_t size() const override { return encoder_->codes_bytes(); }
  void encode_block(size_t block, uint8_t* dst) override { encoder_->encode_block(block, dst); }
  void finish(std::vector<Bytes>& out) override {
    out.resize(3);
    encoder_->finish(out[1], out[2]);
  }

 private:
  std::unique_ptr<quantize::BlockwiseEncoder> encoder_;
};

class QuantizeStage final : public Stage {
 public:
  explicit QuantizeStage(const quantize::Config& config) : config_(config) {}
  StageType type() const override { return StageType::Quantize; }
  std::string name() const override { return "quantize"; }
  std::vector<std::string> output_ports() const override { return {"codes", "outliers", "params"}; }
  Bytes config() const override {
    Bytes c;
    c.push_back(static_cast<uint8_t>(config_.width));
    c.push_back(static_cast<uint8_t>(config_.mode));
    append_le<double>(c, config_.bound);
    c.push_back(config_.fill ? 1 : 0);
    append_le<uint64_t>(c, config_.fill.value_or(0));
    return c;
  }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override {
    out.resize(3);  // the pipeline hands in pooled buffers; reuse their capacity
    quantize::Streams streams;
    streams.codes = std::move(out.at(0));
    streams.outliers = std::move(out.at(1));
    streams.params = std::move(out.at(2));
    quantize::encode(in.at(0), config_, streams, ctx.exec);
    out[0] = std::move(streams.codes);
    out[1] = std::move(streams.outliers);
    out[2] = std::move(streams.params);
  }
  // Not for a LOSSLESS plan (no codes): forward() stores the elements then.
  std::unique_ptr<ForwardSource> forward_source(const std::vector<ByteSpan>& in,
                                                const StageContext& ctx) const override {
    auto encoder = std::make_unique<quantize::BlockwiseEncoder>(in.at(0), config_, ctx.exec);
    if (encoder->codes_bytes() == 0) return nullptr;
    return std::make_unique<QuantizeSource>(std::move(encoder));
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    in.resize(1);
    quantize::decode(out.at(0), out.at(1), out.at(2), in[0], ctx.max_stream_bytes, ctx.exec);
  }
#ifdef FZ_HAVE_CUDA
  // ABS and REL (the engine resolves NOA into ABS before this stage).
  bool has_device_forward() const override { return config_.mode != quantize::Mode::kNoa; }
  bool device_output_size_on_host(size_t port) const override { return port != 1; }  // outliers vary
  void forward_device(const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    const size_t n = in.at(0).size;
    const bool lossless = quantize::cuda::encode_method(config_) == quantize::Method::kLossless;
    auto* sizes = reinterpret_cast<uint64_t*>(work.allocate(2 * sizeof(uint64_t)));
    out.resize(3);
    out[0] = {work.allocate(n), lossless ? 0 : n, nullptr, nullptr};
    out[1] = {work.allocate(n), 0, sizes + 1, nullptr, n};
    out[2] = {work.allocate(quantize::kParamsBytes), quantize::kParamsBytes, nullptr, nullptr};
    void* scratch = work.allocate(quantize::cuda::encode_scratch_bytes(n, config_.width));
    work.check(quantize::cuda::encode(in[0].data, n, config_, out[0].data, out[1].data, out[2].data, sizes, scratch,
                                      static_cast<cudaStream_t>(work.stream())),
               "quantize (GPU)");
  }

  // Every method and mode the format allows (NOA, CONSTANT and LOSSLESS
  // included: frames written elsewhere may hold them). The 40 params bytes are
  // read on the host, with the CPU decoder's own checks, before anything is
  // allocated; the device checks the codes and the outlier count.
  bool has_device_inverse() const override { return true; }
  void inverse_device(const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in, DeviceWork& work,
                      size_t max_stream_bytes) const override {
    const DeviceBuffer& codes = out.at(0);
    const DeviceBuffer& outliers = out.at(1);
    uint8_t downloaded[quantize::kParamsBytes];
    const quantize::Params p = quantize::read_params(host_params(out.at(2), downloaded, work));
    require_format(p.count <= max_stream_bytes / p.width, "quantize: chunk larger than allowed");
    const size_t bytes = static_cast<size_t>(p.count) * p.width;
    // As the CPU: the stream that holds one word per element must match
    // before the chunk is allocated (and the kernel reads no further).
    require_format(bytes == (p.method == quantize::Method::kLossless ? outliers.size : codes.size),
                   "quantize: streams do not match the element count");
    in.resize(1);
    in[0] = {work.allocate(bytes), bytes, nullptr, nullptr};
    void* scratch = work.allocate(quantize::cuda::decode_scratch_bytes(p));
    work.check(quantize::cuda::decode(codes.data, codes.size, outliers.data, outliers.size, p, in[0].data,
                                      work.status_word(), scratch, static_cast<cudaStream_t>(work.stream())),
               "quantize inverse (GPU)");
  }
#endif
  std::unique_ptr<BlockSink> inverse_sink(const std::vector<ByteSpan>& out, size_t port, size_t port_bytes,
                                          const StageContext& ctx) const override {
    if (port != 0 || !quantize::BlockwiseDecoder::is_blockwise(out.at(2))) return nullptr;
    require_format(port_bytes <= ctx.max_stream_bytes, "quantize: codes larger than the frame allows");
    return std::make_unique<QuantizeSink>(out.at(1), out.at(2), port_bytes);
  }
  std::optional<size_t> inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                     const StageContext& ctx) const override {
    const uint64_t bytes = quantize::decoded_bytes(out.at(2));
    if (bytes > capacity || bytes > ctx.max_stream_bytes) return std::nullopt;  // inverse() reports it
    quantize::decode_into(out.at(0), out.at(1), out.at(2), dst, ctx.exec);
    return static_cast<size_t>(bytes);
  }

 private:
#ifdef FZ_HAVE_CUDA
  // The params stream's bytes on the host: the frame's copy when it was
  // stored, else (a frame whose params pass through another stage) read back
  // from the device into `downloaded` (one synchronisation). A wrong length is
  // refused before reading.
  static ByteSpan host_params(const DeviceBuffer& params, uint8_t (&downloaded)[quantize::kParamsBytes],
                              DeviceWork& work) {
    require_format(params.size == quantize::kParamsBytes, "quantize: params have the wrong size");
    if (params.host) return ByteSpan(params.host, params.size);
    work.read_back(params.data, quantize::kParamsBytes, downloaded);
    return ByteSpan(downloaded, quantize::kParamsBytes);
  }
#endif
  quantize::Config config_;
};

}  // namespace

std::unique_ptr<Stage> make_quantize(const quantize::Config& config) { return std::make_unique<QuantizeStage>(config); }

std::unique_ptr<Stage> parse_quantize(ByteSpan c) {
  require_format(c.size == 19, "quantize stage: config must be 19 bytes");
  quantize::Config config;
  config.width = c.data[0];
  require_format(c.data[1] <= 2 && (config.width == 4 || config.width == 8) && c.data[10] <= 1,
                 "quantize stage: bad width, mode or fill flag");
  config.mode = static_cast<quantize::Mode>(c.data[1]);
  config.bound = load_le<double>(c.data + 2);
  if (c.data[10]) config.fill = load_le<uint64_t>(c.data + 11);
  return make_quantize(config);
}

}  // namespace fz::engine
