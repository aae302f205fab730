// Presets 5 (cuSZ-Hi throughput design) and 6 (cuSZ-Hi ratio design): the
// G-Interp spline predictor (stage type 13), its codes then coded for speed
// (5: zigzag, bit planes, repetition elimination over 1-byte codes) or for
// ratio (6: Huffman, then the Huffman stream and the side stream merged
// through RRE4 -> TCMS8 -> RZE1). A predictor's error is absolute, so neither
// honours point-wise relative (REL) bounds.
//
// Work in progress (issue 14): the table lists both as not available until
// the stage has its CUDA part and the format is settled; tests build them
// through these functions directly.
#include <cmath>

#include "bitshuffle/bitshuffle_stage.hpp"
#include "huffman/huffman_stage.hpp"
#include "lossy_common.hpp"
#include "merge/merge_stage.hpp"
#include "rre/rre_stage.hpp"
#include "rze/rze_stage.hpp"
#include "spline/spline_stage.hpp"
#include "tcms/tcms_stage.hpp"

namespace fz::engine {
namespace {

// The per-level bound's growth alpha for a value-range-relative bound, as
// cuSZ-Hi's ratio-first tuning sets it: 2 at 1e-1 and above, then linear in
// log10 of the bound down to 1 at 1e-5 (1.75 at 1e-2, 1.5 at 1e-3, 1.25 at
// 1e-4). An absolute bound says nothing of the range: 1.5.
double alpha_for(const Options& options) {
  if (options.mode != ErrorMode::Noa) return 1.5;
  const double decades = std::log10(options.bound);  // -1 at 1e-1, -5 at 1e-5
  if (!(decades < -1)) return 2.0;
  if (!(decades > -5)) return 1.0;
  return 2.0 + (decades + 1) * 0.25;
}

enum class SplineCoder { kThroughput, kRatio };

Pipeline spline_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                         const ChunkFacts& facts, SplineCoder coder) {
  const auto bound = predictor_bound(dtype, facts);
  if (!bound) return lossless_pipeline(dtype);
  const bool ratio = coder == SplineCoder::kRatio;
  spline::Config s;
  s.width = dtype.size;
  s.code_bytes = ratio ? 2 : 1;
  s.radius = ratio ? 512 : 128;
  s.alpha = alpha_for(options);
  s.beta = 4;
  s.tuning = spline::Tuning::kRatioFirst;
  Pipeline p;
  const auto streams =
      p.add(make_spline(s, bound->enforced, predictor_dims(dims)), {lossy_source(p, dtype, options, bound->facts)});
  if (ratio) {
    const uint8_t bits = p.add(make_huffman({1024, 16, 16384}), {streams[0]})[0];
    const uint8_t merged = p.add(make_merge(2), {bits, streams[1]})[0];
    const uint8_t repeats = p.add(make_rre(4), {merged})[0];
    const uint8_t zigzag = p.add(make_tcms(8), {repeats})[0];
    p.add(make_rze(1), {zigzag});
  } else {
    const uint8_t zigzag = p.add(make_tcms(1), {streams[0]})[0];
    const uint8_t planes = p.add(make_bitshuffle(1), {zigzag})[0];
    p.add(make_rre(1), {planes});
    const uint8_t side_planes = p.add(make_bitshuffle(4), {streams[1]})[0];
    const uint8_t side_repeats = p.add(make_rre(2), {side_planes})[0];
    p.add(make_rze(1), {side_repeats});
  }
  return p;
}

}  // namespace

Pipeline build_cuszhi_tp(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                         const ChunkFacts& facts) {
  return spline_pipeline(dtype, dims, options, facts, SplineCoder::kThroughput);
}

Pipeline build_cuszhi_cr(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                         const ChunkFacts& facts) {
  return spline_pipeline(dtype, dims, options, facts, SplineCoder::kRatio);
}

}  // namespace fz::engine
