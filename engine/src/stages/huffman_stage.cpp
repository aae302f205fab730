// HUFFMAN: canonical, length-limited Huffman coding of u16 symbols.
// Config: u32 alphabet A | u8 length limit L | u32 block size S (the encoder's
// choice; the stream repeats them and the decoder checks they agree).
#include "common/error.hpp"
#include "huffman/huffman.hpp"
#include "stage.hpp"

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
