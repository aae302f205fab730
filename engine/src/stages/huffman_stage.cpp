// HUFFMAN: canonical, length-limited Huffman coding of u16 symbols.
// Config: u32 alphabet A | u8 length limit L | u32 block size S (the encoder's
// choice; the stream repeats them and the decoder checks they agree).
#include <algorithm>
#include <vector>

#include "common/error.hpp"
#include "huffman/huffman.hpp"
#include "stage.hpp"

#ifdef FZ_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "huffman/huffman_cuda.hpp"
#endif

namespace fz::engine {
namespace {

class HuffmanStage final : public Stage {
 public:
  explicit HuffmanStage(const huffman::Config& config) : config_(config) {
    if (config.alphabet < 1 || config.alphabet > huffman::kMaxAlphabet || config.max_length < 1 ||
        config.max_length > huffman::kMaxLengthLimit || (uint64_t(1) << config.max_length) < config.alphabet ||
        config.block_symbols < 1 || config.block_symbols > huffman::kMaxBlockSymbols)
      throw UsageError("huffman: alphabet 1..65536, length limit 1..24 with 2^L >= A, block 1..2^24 symbols");
  }
  StageType type() const override { return StageType::Huffman; }
  std::string name() const override { return "huffman" + std::to_string(config_.alphabet); }
  Bytes config() const override {
    Bytes c;
    append_le<uint32_t>(c, config_.alphabet);
    c.push_back(static_cast<uint8_t>(config_.max_length));
    append_le<uint32_t>(c, config_.block_symbols);
    return c;
  }
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override {
    out.resize(1);
    huffman::encode(in.at(0), config_, out[0], ctx.exec);
  }
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override {
    const ByteSpan stream = out.at(0);
    require_format(stream.size >= 17 && load_le<uint32_t>(stream.data + 8) == config_.alphabet &&
                       load_le<uint32_t>(stream.data + 12) == config_.block_symbols &&
                       stream.data[16] == config_.max_length,
                   "huffman stream disagrees with its stage config");
    in.resize(1);
    huffman::decode(stream, in[0], ctx.max_stream_bytes, ctx.exec);
  }

#ifdef FZ_HAVE_CUDA
  // The GPU forward comes back to the host twice: for the histogram (the code
  // lengths are the CPU's host routine) and for the stream's length, which the
  // stage that consumes it (RZE in cusz) needs on the host.
  bool has_device_forward() const override { return true; }
  bool device_output_size_on_host(size_t) const override { return true; }
  void forward_device(const std::vector<DeviceBuffer>& in, std::vector<DeviceBuffer>& out,
                      DeviceWork& work) const override {
    const DeviceBuffer& symbols = in.at(0);
    if (symbols.size % 2 != 0) throw UsageError("Huffman input is u16 symbols: its length must be even");
    const uint64_t n = symbols.size / 2;
    const auto stream = static_cast<cudaStream_t>(work.stream());
    std::vector<uint64_t> counts;
    if (n > 0) {
      // Counts and the out-of-alphabet flag in one allocation, one copy back.
      const size_t flag_at = sizeof(uint64_t) * config_.alphabet;
      uint8_t* device = work.allocate(flag_at + sizeof(uint64_t));
      work.check(huffman::cuda::histogram(symbols.data, n, config_.alphabet, reinterpret_cast<uint64_t*>(device),
                                          reinterpret_cast<uint32_t*>(device + flag_at), stream),
                 "Huffman histogram (GPU)");
      counts.resize(config_.alphabet + 1);
      work.read_back(device, flag_at + sizeof(uint64_t), reinterpret_cast<uint8_t*>(counts.data()));
      if (static_cast<uint32_t>(counts[config_.alphabet]) != 0)
        throw UsageError("Huffman input holds a symbol outside the alphabet");
    }
    const huffman::cuda::EncodePlan plan = huffman::cuda::plan_encode(counts.data(), n, config_);
    out.resize(1);
    out[0] = {work.allocate(plan.max_encoded_bytes), 0, nullptr, nullptr};
    auto* encoded_size = reinterpret_cast<uint64_t*>(work.allocate(sizeof(uint64_t)));
    void* scratch = work.allocate(huffman::cuda::encode_scratch_bytes(plan));
    work.check(huffman::cuda::encode(symbols.data, plan, out[0].data, encoded_size, scratch, stream),
               "Huffman (GPU)");
    uint64_t size = 0;
    work.read_back(reinterpret_cast<const uint8_t*>(encoded_size), sizeof size, reinterpret_cast<uint8_t*>(&size));
    if (size == 0) throw UsageError("Huffman input too large: over 2^32 coded words");
    out[0].size = static_cast<size_t>(size);
  }

  // The header, code-length table and block table are validated on the host
  // by the CPU decoder's own checks (FormatError); from the frame's bytes, or,
  // for a stream another GPU stage rebuilt, from a prefix read back from the
  // device. The device reports what it refuses in the blocks in a status word.
  bool has_device_inverse() const override { return true; }
  bool device_inverse_reads_host_bytes() const override { return false; }
  void inverse_device(const std::vector<DeviceBuffer>& out, std::vector<DeviceBuffer>& in, DeviceWork& work,
                      size_t max_stream_bytes) const override {
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
    require_format(stream.size >= 17 && load_le<uint32_t>(prefix + 8) == config_.alphabet &&
                       load_le<uint32_t>(prefix + 12) == config_.block_symbols && prefix[16] == config_.max_length,
                   "huffman stream disagrees with its stage config");
    const huffman::cuda::DecodePlan plan =
        huffman::cuda::plan_decode(prefix, prefix_size, stream.size, max_stream_bytes);
    in.resize(1);
    const size_t bytes = static_cast<size_t>(2 * plan.n);
    in[0] = {work.allocate(bytes), bytes, nullptr, nullptr};
    void* scratch = work.allocate(huffman::cuda::decode_scratch_bytes(plan));
    work.check(huffman::cuda::decode(stream.data, plan, in[0].data, work.status_word(), scratch, cuda_stream),
               "Huffman inverse (GPU)");
  }
#endif

 private:
  huffman::Config config_;
};

}  // namespace

std::unique_ptr<Stage> make_huffman(const huffman::Config& config) { return std::make_unique<HuffmanStage>(config); }

std::unique_ptr<Stage> parse_huffman(ByteSpan config) {
  require_format(config.size == 9, "huffman stage: config must be 9 bytes");
  huffman::Config c;
  c.alphabet = load_le<uint32_t>(config.data);
  c.max_length = config.data[4];
  c.block_symbols = load_le<uint32_t>(config.data + 5);
  try {
    return make_huffman(c);
  } catch (const UsageError& e) {
    throw FormatError(std::string("invalid huffman stage config: ") + e.what());
  }
}

}  // namespace fz::engine
