#include "presets.hpp"

namespace fz::engine {

unsigned lossless_word_width(const DataType& dtype) {
  const unsigned s = dtype.size;
  return (s == 1 || s == 2 || s == 4 || s == 8) ? s : 1;
}

namespace {

// Preset 1. Chain chosen by measurement (docs/PERFORMANCE.md, "lossless chain"):
// differences of neighbouring words turn smooth data into small numbers,
// negabinary keeps small numbers of either sign sparse in bits, bit-shuffle
// gathers the all-zero high bit planes, and byte-wise zero elimination drops
// them. Odd-sized elements are byte-transposed first. Big-endian words are swapped first so the arithmetic sees their value.
Pipeline lossless_pipeline(const DataType& dtype) {
  Pipeline p;
  const unsigned width = lossless_word_width(dtype);
  uint8_t current = Pipeline::kChunk;
  if (dtype.order == ByteOrder::Big && width > 1) current = p.add(make_byteswap(width), {current})[0];
  // Odd-sized elements (compound, array): gather each byte position first, so
  // the byte-wise stages below see one field's bytes side by side.
  if (width == 1 && dtype.size > 1) current = p.add(make_bytetranspose(dtype.size), {current})[0];
  current = p.add(make_diffnb(width), {current})[0];
  current = p.add(make_bitshuffle(width), {current})[0];
  p.add(make_rze(1), {current});
  return p;
}

}  // namespace

Pipeline build_pipeline(const DataType& dtype, const Options& options) {
  switch (options.preset) {
    case Preset::Default:
    case Preset::Lossless:
      return lossless_pipeline(dtype);
    default:
      break;
  }
  throw Error(std::string("preset '") + preset_name(options.preset) + "' is not available in this build");
}

}  // namespace fz::engine
