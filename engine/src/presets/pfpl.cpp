// Preset 2 (PFPL design): every element quantized on its own; the codes are
// smooth where the data is, so the lossless chain compresses them. Quantizing
// each element alone is what lets it honour point-wise relative (REL) bounds.
#include "bitshuffle/bitshuffle_stage.hpp"
#include "diffnb/diffnb_stage.hpp"
#include "lossy_common.hpp"
#include "quantize/quantize_stage.hpp"
#include "rze/rze_stage.hpp"

namespace fz::engine {

Pipeline build_pfpl(const DataType& dtype, const std::vector<uint64_t>&, const Options& options,
                    const ChunkFacts& facts) {
  if (!facts.enforced) return lossless_pipeline(dtype);
  Pipeline p;
  const unsigned width = dtype.size;
  quantize::Config q;
  q.width = width;
  // NOA arrives resolved into an absolute bound (facts_from_range).
  q.mode = options.mode == ErrorMode::Rel ? quantize::Mode::kRel : quantize::Mode::kAbs;
  q.bound = *facts.enforced;
  const auto streams = p.add(make_quantize(q), {lossy_source(p, dtype, options, facts)});
  const uint8_t differences = p.add(make_diffnb(width), {streams[0]})[0];
  const uint8_t planes = p.add(make_bitshuffle(width), {differences})[0];
  p.add(make_rze(1), {planes});
  return p;  // outliers and params are stored as they are
}

}  // namespace fz::engine
