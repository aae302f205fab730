// HUFFMAN: canonical, length-limited Huffman coding of u16 symbols.
// Config: u32 alphabet A | u8 length limit L | u32 block size S (the encoder's
// choice; the stream repeats them and the decoder checks they agree)
// (docs/FORMAT.md, stage type 11). The stage over huffman.hpp; its GPU
// part is huffman_stage_cuda.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "huffman/huffman.hpp"
#include "common/stage/stage.hpp"

namespace fz::stage {

class HuffmanStage final : public Stage {
 public:
  // Throws UsageError for a config the coder refuses.
  explicit HuffmanStage(const huffman::Config& config);
  StageType type() const override { return StageType::Huffman; }
  std::string name() const override { return "huffman" + std::to_string(config_.alphabet); }
  Bytes config() const override;
  void forward(const std::vector<ByteSpan>& in, std::vector<Bytes>& out, const StageContext& ctx) const override;
  void inverse(const std::vector<ByteSpan>& out, std::vector<Bytes>& in, const StageContext& ctx) const override;
  const huffman::Config& coder_config() const { return config_; }
  // Throws FormatError unless the stream (stream_size bytes, starting with
  // `header`, which holds at least its first 17 bytes when stream_size does)
  // repeats this stage's A, S and L.
  void check_stream_header(const uint8_t* header, size_t stream_size) const;

 private:
  huffman::Config config_;
};

std::unique_ptr<Stage> make_huffman(const huffman::Config& config);

}  // namespace fz::stage
