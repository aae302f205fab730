// HUFFMAN's stage adapter (huffman_stage.hpp).
#include "huffman/huffman_stage.hpp"

#include "common/error.hpp"
#include "huffman/huffman_format.hpp"
#include "common/stage/stage_samples.hpp"

namespace fz::stage {

HuffmanStage::HuffmanStage(const huffman::Config& config) : config_(config) {
  if (config.alphabet < 1 || config.alphabet > huffman::kMaxAlphabet || config.max_length < 1 ||
      config.max_length > huffman::kMaxLengthLimit || (uint64_t(1) << config.max_length) < config.alphabet ||
      config.block_symbols < 1 || config.block_symbols > huffman::kMaxBlockSymbols)
    throw UsageError("huffman: alphabet 1..65536, length limit 1..24 with 2^L >= A, block 1..2^24 symbols");
}

Bytes HuffmanStage::config() const {
  Bytes c;
  append_le<uint32_t>(c, config_.alphabet);
  c.push_back(static_cast<uint8_t>(config_.max_length));
  append_le<uint32_t>(c, config_.block_symbols);
  return c;
}

void HuffmanStage::check_stream_header(const uint8_t* header, size_t stream_size) const {
  // The header (docs/FORMAT.md, HUFFMAN "Stream"): u64 n | u32 A | u32 S | u8 L.
  require_format(stream_size >= huffman::format::kHeaderBytes && load_le<uint32_t>(header + 8) == config_.alphabet &&
                     load_le<uint32_t>(header + 12) == config_.block_symbols && header[16] == config_.max_length,
                 "huffman stream disagrees with its stage config");
}

void HuffmanStage::forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const {
  out.resize(1);
  huffman::encode(in.at(0), config_, out[0], ctx.exec);
}

void HuffmanStage::inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const {
  const ByteSpan stream = out.at(0);
  check_stream_header(stream.data, stream.size);
  in.resize(1);
  huffman::decode(stream, in[0], ctx.max_stream_bytes, ctx.exec);
}

std::unique_ptr<Stage> make_huffman(const huffman::Config& config) { return std::make_unique<HuffmanStage>(config); }

std::unique_ptr<Stage> parse_huffman(ByteSpan config) {
  require_format(config.size == 9, "huffman stage: config must be 9 bytes");
  huffman::Config c;
  c.alphabet = load_le<uint32_t>(config.data);
  c.max_length = config.data[4];
  c.block_symbols = load_le<uint32_t>(config.data + 5);
  return config_error_as_format_error("huffman", [&] { return make_huffman(c); });
}

// The raw bytes as symbols of a small and of a cusz-sized alphabet.
std::vector<StageSample> huffman_stage_samples() {
  std::vector<StageSample> samples;
  for (const huffman::Config config : {huffman::Config{256, 12, 16384}, huffman::Config{1024, 16, 4096},
                                       huffman::Config{65536, 24, 1}})
    samples.push_back({"huffman" + std::to_string(config.alphabet), [config](ByteSpan raw) {
                         StageCase c{make_huffman(config), {}};
                         c.inputs.push_back(u16_symbols(raw, config.alphabet));
                         return c;
                       }});
  return samples;
}

}  // namespace fz::stage
