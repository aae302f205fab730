// Presets 3 (FZ-GPU design) and 4 (cuSZ design): Lorenzo dual quantization;
// fzgpu codes go through bit-shuffle and zero elimination, cusz codes through
// Huffman with the alphabet of cuSZ (radius 512). A predictor's error is
// absolute, so neither honours point-wise relative (REL) bounds. Also the
// Lorenzo pipeline preset 6 (cuszhi-cr) picks for chunks where it beats the
// spline: codes through ANS (predictor_choice.hpp).
#include "ans/interleaved_stage.hpp"
#include "bitshuffle/bitshuffle_stage.hpp"
#include "huffman/huffman_stage.hpp"
#include "lorenzo/lorenzo_stage.hpp"
#include "lossy_common.hpp"
#include "predictor_choice.hpp"
#include "rze/rze_stage.hpp"

namespace fz::engine {
namespace {

enum class LorenzoCoder { kBitPlanes, kHuffman, kAns };

Pipeline lorenzo_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                          const ChunkFacts& facts, LorenzoCoder coder) {
  const auto bound = predictor_bound(dtype, facts);
  if (!bound) return lossless_pipeline(dtype);
  const bool huffman = coder == LorenzoCoder::kHuffman;
  Pipeline p;
  lorenzo::Config l;
  l.width = dtype.size;
  l.eb = bound->working;
  l.radius = huffman ? 512 : coder == LorenzoCoder::kAns ? kCuszhiLorenzoRadius : 32768;
  const auto streams =
      p.add(make_lorenzo(l, bound->enforced, predictor_dims(dims)), {lossy_source(p, dtype, options, bound->facts)});
  if (coder == LorenzoCoder::kAns) {
    // The spline's code coder (cuszhi.cpp): zero-run tokens and interleaved rANS.
    p.add(make_ansi({2 * l.radius, 14}), {streams[0]});
  } else if (huffman) {
    // Huffman cannot go below one bit per element; on constant regions its
    // output is long runs of zero words, which zero elimination removes
    // (a constant float32 chunk: 32x -> far more). Elsewhere RZE stores its
    // sub-chunks raw at a cost of 2 bytes per 16 KiB.
    const uint8_t bits = p.add(make_huffman({1024, 16, 16384}), {streams[0]})[0];
    p.add(make_rze(1), {bits});
  } else {
    const uint8_t planes = p.add(make_bitshuffle(2), {streams[0]})[0];
    p.add(make_rze(1), {planes});
  }
  return p;  // outliers are stored as they are
}

}  // namespace

Pipeline cuszhi_lorenzo_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                 const ChunkFacts& facts) {
  return lorenzo_pipeline(dtype, dims, options, facts, LorenzoCoder::kAns);
}

Pipeline build_fzgpu(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                     const ChunkFacts& facts) {
  return lorenzo_pipeline(dtype, dims, options, facts, LorenzoCoder::kBitPlanes);
}

Pipeline build_cusz(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                    const ChunkFacts& facts) {
  return lorenzo_pipeline(dtype, dims, options, facts, LorenzoCoder::kHuffman);
}

}  // namespace fz::engine
