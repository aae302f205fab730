// The lossless family: presets 0 (default) and 1 (lossless), and the chain
// every lossy preset falls back to for what it cannot quantize.
#include "bitshuffle/bitshuffle_stage.hpp"
#include "bytetranspose/bytetranspose_stage.hpp"
#include "diffnb/diffnb_stage.hpp"
#include "lossy_common.hpp"
#include "presets.hpp"
#include "rze/rze_stage.hpp"

namespace fz::engine {

unsigned lossless_word_width(const DataType& dtype) {
  const unsigned s = dtype.size;
  return (s == 1 || s == 2 || s == 4 || s == 8) ? s : 1;
}

// Chain chosen by measurement (docs/PERFORMANCE.md, "lossless chain"):
// differences of neighbouring words turn smooth data into small numbers,
// negabinary keeps small numbers of either sign sparse in bits, bit-shuffle
// gathers the all-zero high bit planes, and byte-wise zero elimination drops
// them. Odd-sized elements are byte-transposed first.
Pipeline lossless_pipeline(const DataType& dtype) {
  Pipeline p;
  const unsigned width = lossless_word_width(dtype);
  uint8_t current = native_order(p, dtype, width);
  // Odd-sized elements (compound, array): gather each byte position first, so
  // the byte-wise stages below see one field's bytes side by side.
  if (width == 1 && dtype.size > 1) current = p.add(make_bytetranspose(dtype.size), {current})[0];
  current = p.add(make_diffnb(width), {current})[0];
  current = p.add(make_bitshuffle(width), {current})[0];
  p.add(make_rze(1), {current});
  return p;
}

// The table's builder for presets 0 and 1.
Pipeline build_lossless(const DataType& dtype, const std::vector<uint64_t>&, const Options&, const ChunkFacts&) {
  return lossless_pipeline(dtype);
}

}  // namespace fz::engine
