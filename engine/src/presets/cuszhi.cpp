// Presets 5 (cuSZ-Hi throughput design) and 6 (cuSZ-Hi ratio design): the
// G-Interp spline predictor (stage type 13), its codes then coded for speed
// (5: zigzag, bit planes, zero elimination) or for ratio (6: zero-run
// tokens and rANS per code group). A predictor's error is absolute, so
// neither honours point-wise relative (REL) bounds.
#include <algorithm>
#include <cmath>

#include "ans/interleaved_stage.hpp"
#include "bitshuffle/bitshuffle_stage.hpp"
#include "lossy_common.hpp"
#include "merge/merge_stage.hpp"
#include "predictor_choice.hpp"
#include "rze/rze_stage.hpp"
#include "spline/spline_stage.hpp"

namespace fz::engine {
namespace {

// The per-level bounds eb_l = eb / min(alpha^l, beta) and the level tuning,
// from Options::spline_tuning and the bound relative to the chunk's value
// range (rel = eb / (max - min), ChunkFacts::range, taken in every mode for
// these presets). Ratio-first, measured with real bytes on the real fields
// (docs/PERFORMANCE.md, "Issue 30: level bounds for loose bounds"): one bound
// for every level (alpha = beta = 1) gives the smallest frames at rel 1e-3
// and below, but at 1e-2 and above tighter coarse levels (SZ3's own alpha
// 1.25, beta 2) store about as much (-3% .. +8%) at 0.4-2.5 dB better PSNR,
// and at 3e-2 both more ratio and PSNR: so alpha = 1 + 0.25 t and beta = 1 + t
// with t = log10(rel) + 3 clamped to [0, 1] (1 at rel 1e-3 and below, 1.25 / 2
// at 1e-2 and above, a line in log10(rel) between). Quality-first takes
// cuSZ-Hi's schedule for a value-range bound: alpha 2 at 1e-1 and above,
// then linear in log10 of the bound down to 1 at 1e-5 (1.75 at 1e-2, 1.5 at
// 1e-3, 1.25 at 1e-4; 1.5 for an absolute bound, which says nothing of the
// range), beta 4: better coarse levels predict the fine ones better, so more
// errors sit near 0.
struct LevelTuning {
  spline::Tuning tuning;
  double alpha;
  double beta;
};

LevelTuning ratio_first_levels(const ChunkFacts& facts) {
  if (!facts.enforced || !facts.range || !(*facts.range > 0)) return {spline::Tuning::kRatioFirst, 1, 1};
  const double t = std::min(1.0, std::max(0.0, std::log10(*facts.enforced / *facts.range) + 3));
  return {spline::Tuning::kRatioFirst, 1 + 0.25 * t, 1 + t};
}

LevelTuning level_tuning(const Options& options, const ChunkFacts& facts) {
  switch (options.spline_tuning) {
    case SplineTuning::kOff:
      return {spline::Tuning::kOff, 1, 1};
    case SplineTuning::kQualityFirst: {
      double alpha = 1.5;
      if (options.mode == ErrorMode::Noa) {
        const double decades = std::log10(options.bound);  // -1 at 1e-1, -5 at 1e-5
        alpha = !(decades < -1) ? 2.0 : !(decades > -5) ? 1.0 : 2.0 + (decades + 1) * 0.25;
      }
      return {spline::Tuning::kRatioFirst, alpha, 4};
    }
    case SplineTuning::kManual:
      return {spline::Tuning::kRatioFirst, options.spline_alpha, options.spline_beta};
    case SplineTuning::kRatioFirst:
    default:
      return ratio_first_levels(facts);
  }
}

enum class SplineCoder { kThroughput, kRatio };

// The codes leave the spline stage in three groups by level (spline.hpp).
// Ratio: each group through its own ANS stage (zero-run tokens, then static
// rANS with the group's own tables: the finest level is mostly q = 0, the
// coarse ones are not). At NOA 1e-2 three codes in four are the most frequent
// one; a run of it becomes one token and rANS spends a token's information
// content, where the Huffman > RZE1 chain this replaced spent at least a bit
// per code before RZE took back part of it: the codes' bytes are 0.889 /
// 0.971 / 0.990 of that chain's at NOA 1e-2 / 1e-3 / 1e-4 (geo-mean over the
// real fields, tools/bench/code_entropy_bench --sweep; docs/PERFORMANCE.md).
// The ANS is the interleaved one (stage type 15, ans/interleaved.hpp): the
// same tokens and tables in pairs, a warp of 32 rANS states per lane on the
// GPU, where type 14's one serial chain per lane of 8192 held cuszhi-cr to
// ~10 GB/s (H200: type 15 decodes 54M codes at 99-155 GB/s, type 14 at
// 21-31; fz_ans_device_bench). It costs 0.5-0.9% more code bytes (its lane
// records; docs/PERFORMANCE.md). M = 14: M 13 or 15 move less than 0.2%.
// Radius 4096 (alphabet 8192): as few outliers as 32768 on every field down
// to 1e-4. Throughput: the groups merged, q zigzagged by the
// spline itself (the zigzag code form: q = 0 a zero word, small |q| small
// words; the bytes a TCMS pass would give from the signed form, without the
// pass), then bit planes and zero elimination, 2-byte codes with radius
// 32768 so that outliers stay rare at any bound.
// The side stream (per-level steps, anchors, outliers) stays raw: anchors
// are one value in 4096 (3-D, 2-D) and outliers are rare, and no chain
// measured made it smaller by more than its own headers.
constexpr uint8_t kAnsProbBits = 14;

Pipeline spline_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                         const ChunkFacts& facts, SplineCoder coder) {
  const auto bound = predictor_bound(dtype, facts);
  if (!bound) return lossless_pipeline(dtype);
  const bool ratio = coder == SplineCoder::kRatio;
  spline::Config s;
  s.width = dtype.size;
  s.code_bytes = 2;
  s.radius = ratio ? 4096 : 32768;
  s.code_form = ratio ? spline::CodeForm::kOffset : spline::CodeForm::kZigzag;
  const LevelTuning levels = level_tuning(options, facts);
  s.alpha = levels.alpha;
  if (bound->rounding_margin) s.step_bound = bound->working;
  s.beta = levels.beta;
  s.tuning = levels.tuning;
  // The anchors (one point in 4096) predicted by coarse levels over the
  // anchor grid from one stored root, in the compact config v2 (spline.hpp):
  // 0.5-1.1% smaller frames at NOA 1e-2 on the real fields, 3.8% on
  // pressure, 15% on the piecewise constant field, 0.1-0.4% at 1e-4
  // (spline_coarse_test's table; docs/PERFORMANCE.md), and the same speed
  // on the GPU within 4% (one block runs the coarse levels).
  s.coarse_levels = true;
  s.compact_config = true;
  Pipeline p;
  // Fill elements (land, missing data) go into the spline too, which codes
  // them q = 0 with x' = its prediction: the field continues smoothly over
  // them instead of stepping at every coast to the fill mask's replacement
  // values (cuszhi-cr on levitus TEMP, -1e10 land: 13.34 -> 22.11 at NOA
  // 1e-3, 6.69 -> 11.20 at 1e-4; docs/PERFORMANCE.md).
  const LossySource source = lossy_source_and_mask(p, dtype, options, bound->facts);
  std::vector<uint8_t> inputs{source.values};
  if (source.fill_mask) inputs.push_back(*source.fill_mask);
  const auto streams =
      p.add(make_spline(s, bound->enforced, facts.fold ? fold_dims(predictor_dims(dims)) : predictor_dims(dims),
                        source.fill_mask.has_value()),
            inputs);
  if (source.fill_mask) store_fill_mask(p, streams[SplineStage::kFillPort]);
  if (ratio) {
    for (unsigned g = 0; g < spline::kCodeGroups; ++g) {
      p.add(make_ansi({2 * s.radius, kAnsProbBits}), {streams[g]});
    }
  } else {
    const uint8_t codes = p.add(make_merge(spline::kCodeGroups), {streams[0], streams[1], streams[2]})[0];
    const uint8_t planes = p.add(make_bitshuffle(2), {codes})[0];
    p.add(make_rze(1), {planes});
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
  // The chunk's sample chose Lorenzo (predictor_choice.hpp; only under the
  // ratio-first tuning, which chunk_facts alone sets it for).
  if (facts.lorenzo) return cuszhi_lorenzo_pipeline(dtype, dims, options, facts);
  return spline_pipeline(dtype, dims, options, facts, SplineCoder::kRatio);
}

}  // namespace fz::engine
