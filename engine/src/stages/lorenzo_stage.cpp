// LORENZO: dual-quantization Lorenzo predictor over a 1-3 axis chunk.
// Inputs: in (float32/float64 elements). Outputs: codes (u16 per element), outliers.
// Config (little-endian): u8 width | u32 radius | f64 working bound eb | f64 the
// absolute bound enforced | u8 has_fill | u64 fill bits | u8 rank | rank x u64 dims.
#include <cmath>
#include <limits>

#include "common/error.hpp"
#include "lorenzo/lorenzo.hpp"
#include "stage.hpp"

#ifdef FZ_HAVE_CUDA
#include "lorenzo/lorenzo_cuda.hpp"
#endif

namespace fz::engine {
namespace {

class LorenzoStage final : public Stage {
 public:
  LorenzoStage(const lorenzo::Config& config, double enforced_bound, std::vector<size_t> dims)
      : config_(config), enforced_bound_(enforced_bound), dims_(std::move(dims)) {
    if (dims_.empty() || dims_.size() > 3) throw UsageError("lorenzo: 1 to 3 axes");
  }
  StageType type() const override { return StageType::Lorenzo; }
  std::string name() const override { return "lorenzo" + std::to_string(dims_.size()) + "d"; }
  std::vector<std::string> output_ports() const override { return {"codes", "outliers"}; }
  Bytes config() const override {
    Bytes c;
    c.push_back(static_cast<uint8_t>(config_.width));
    append_le<uint32_t>(c, config_.radius);
    append_le<double>(c, config_.eb);
    append_le<double>(c, enforced_bound_);
    c.push_back(config_.has_fill ? 1 : 0);
    append_le<uint64_t>(c, config_.fill_bits);
    c.push_back(static_cast<uint8_t>(dims_.size()));
    for (size_t d : dims_) append_le<uint64_t>(c, d);
    return c;
  }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override {
    out.resize(2);  // the pipeline hands in pooled buffers; reuse their capacity
    lorenzo::Streams streams;
    streams.codes = std::move(out.at(0));
    streams.outliers = std::move(out.at(1));
    // Outliers stored as they are: once they alone reach the frame's limit the
    // chunk is stored raw anyway, and all-outlier chunks (noise under a tight
    // bound) would otherwise build a stream several times the chunk.
    const size_t outlier_limit = (ctx.stored_outputs & 2u) ? ctx.frame_limit : SIZE_MAX;
    lorenzo::encode(in.at(0), dims_, config_, enforced_bound_, streams, ctx.exec, outlier_limit);
    out[0] = std::move(streams.codes);
    out[1] = std::move(streams.outliers);
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    uint64_t elements = 1;
    for (size_t d : dims_) require_format(!__builtin_mul_overflow(elements, d, &elements), "lorenzo dims overflow");
    require_format(elements <= ctx.max_stream_bytes / config_.width, "lorenzo chunk larger than the frame allows");
    require_format(out.at(0).size == 2 * elements, "lorenzo codes do not match the chunk size");
    in.resize(1);
    lorenzo::decode(out.at(0), out.at(1), dims_, config_, in[0], ctx.exec);
  }
#ifdef FZ_HAVE_CUDA
  bool has_device_forward() const override { return true; }
  bool device_output_size_on_host(size_t port) const override { return port != 1; }  // outliers vary
  void forward_device(const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    size_t elements = 1;
    for (size_t d : dims_) elements *= d;
    auto* outliers_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    out.resize(2);
    out[0] = {work.allocate(2 * elements), 2 * elements, nullptr, nullptr};
    const size_t outliers_capacity = lorenzo::cuda::max_outliers_bytes(dims_, config_.width);
    out[1] = {work.allocate(outliers_capacity), 0, outliers_size, nullptr, outliers_capacity};
    void* scratch = work.allocate(lorenzo::cuda::encode_scratch_bytes(dims_, config_.width));
    work.check(lorenzo::cuda::encode(in.at(0).data, dims_, config_, enforced_bound_, out[0].data, out[1].data,
                                     outliers_size, scratch, static_cast<cudaStream_t>(work.stream())),
               "lorenzo (GPU)");
  }

  // Sizes and the config are checked on the host as the CPU checks them,
  // before anything is allocated; the outlier stream (header, records) and
  // the codes are validated on the device, so no stream is read back.
  bool has_device_inverse() const override { return true; }
  void inverse_device(const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in, DeviceWork& work,
                      size_t max_stream_bytes) const override {
    uint64_t elements = 1;
    for (size_t d : dims_) require_format(!__builtin_mul_overflow(elements, d, &elements), "lorenzo dims overflow");
    require_format(elements <= max_stream_bytes / config_.width, "lorenzo chunk larger than the frame allows");
    require_format(out.at(0).size == 2 * elements, "lorenzo codes do not match the chunk size");
    // lorenzo::decode refuses these (UsageError) and the kernel would too
    // (cudaErrorInvalidValue): a frame's config is data, so the CPU names it.
    require_format(elements <= std::numeric_limits<size_t>::max() / 32, "lorenzo: too many elements");
    require_format(decodable_config(), "lorenzo: config the decoder refuses");
    const size_t bytes = static_cast<size_t>(elements) * config_.width;
    in.resize(1);
    in[0] = {work.allocate(bytes), bytes, nullptr, nullptr};
    const DeviceBuffer& outliers = out.at(1);
    void* scratch = work.allocate(lorenzo::cuda::decode_scratch_bytes(dims_, config_.width, outliers.size));
    work.check(lorenzo::cuda::decode(out[0].data, outliers.data, outliers.size, dims_, config_, in[0].data,
                                     work.status_word(), scratch, static_cast<cudaStream_t>(work.stream())),
               "lorenzo inverse (GPU)");
  }
#endif
  std::optional<size_t> inverse_into(const std::vector<ByteSpan>& out, uint8_t* dst, size_t capacity,
                                     const StageContext& ctx) const override {
    uint64_t elements = 1;
    for (size_t d : dims_)
      if (__builtin_mul_overflow(elements, d, &elements)) return std::nullopt;  // inverse() reports it
    if (elements > capacity / config_.width || elements > ctx.max_stream_bytes / config_.width) return std::nullopt;
    require_format(out.at(0).size == 2 * elements, "lorenzo codes do not match the chunk size");
    lorenzo::decode_into(out.at(0), out.at(1), dims_, config_, dst, ctx.exec);
    return static_cast<size_t>(elements * config_.width);
  }

 private:
#ifdef FZ_HAVE_CUDA
  // What lorenzo::decode requires of the config (lorenzo_cpu.cpp,
  // check_config): the working bound a normal value of the element type with
  // 2 * eb finite, the radius in [1, 32768], float32 fill bits in 32 bits.
  bool decodable_config() const {
    if (config_.radius < 1 || config_.radius > 32768) return false;
    if (config_.width == 4) {
      const float eb = static_cast<float>(config_.eb);
      return static_cast<double>(eb) == config_.eb && eb >= std::numeric_limits<float>::min() &&
             std::isfinite(eb + eb) && (config_.fill_bits >> 32) == 0;
    }
    const double eb = config_.eb;
    return eb >= std::numeric_limits<double>::min() && std::isfinite(eb + eb);
  }
#endif
  lorenzo::Config config_;
  double enforced_bound_;
  std::vector<size_t> dims_;
};

}  // namespace

std::unique_ptr<Stage> make_lorenzo(const lorenzo::Config& config, double enforced_bound, std::vector<size_t> dims) {
  return std::make_unique<LorenzoStage>(config, enforced_bound, std::move(dims));
}

std::unique_ptr<Stage> parse_lorenzo(ByteSpan c) {
  require_format(c.size >= 31, "lorenzo stage: config too short");
  lorenzo::Config config;
  config.width = c.data[0];
  config.radius = load_le<uint32_t>(c.data + 1);
  config.eb = load_le<double>(c.data + 5);
  const double enforced = load_le<double>(c.data + 13);
  require_format(c.data[21] <= 1, "lorenzo stage: bad fill flag");
  config.has_fill = c.data[21] == 1;
  config.fill_bits = load_le<uint64_t>(c.data + 22);
  const unsigned rank = c.data[30];
  require_format(rank >= 1 && rank <= 3 && c.size == 31 + 8 * size_t(rank), "lorenzo stage: bad rank or config size");
  std::vector<size_t> dims;
  for (unsigned i = 0; i < rank; ++i) dims.push_back(static_cast<size_t>(load_le<uint64_t>(c.data + 31 + 8 * i)));
  require_format((config.width == 4 || config.width == 8) && config.radius >= 1 && config.radius <= 32768,
                 "lorenzo stage: bad width or radius");
  return make_lorenzo(config, enforced, std::move(dims));
}

}  // namespace fz::engine
