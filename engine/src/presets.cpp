#include "presets.hpp"

#include <cfloat>
#include <cmath>
#include <optional>

#include "shape.hpp"
#include "value_range.hpp"

namespace fz::engine {

unsigned lossless_word_width(const DataType& dtype) {
  const unsigned s = dtype.size;
  return (s == 1 || s == 2 || s == 4 || s == 8) ? s : 1;
}

namespace {

// Big-endian words are swapped first so the arithmetic stages see their value.
uint8_t native_order(Pipeline& p, const DataType& dtype, unsigned width) {
  if (dtype.order == ByteOrder::Big && width > 1) return p.add(make_byteswap(width), {Pipeline::kChunk})[0];
  return Pipeline::kChunk;
}

// Preset 1. Chain chosen by measurement (docs/PERFORMANCE.md, "lossless chain"):
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

}  // namespace

std::optional<uint64_t> fill_bits(const DataType& dtype, const Options& options) {
  if (options.fill_value.size() != dtype.size || dtype.size > 8) return std::nullopt;
  uint64_t bits = 0;
  for (unsigned i = 0; i < dtype.size; ++i) {
    const unsigned byte = dtype.order == ByteOrder::Big ? dtype.size - 1 - i : i;
    bits |= uint64_t(options.fill_value[byte]) << (8 * i);
  }
  return bits;
}

namespace {

// What the lossy presets learn from one look at the chunk: the absolute bound
// to enforce (empty: store the chunk losslessly) and whether any element is the
// fill value.
struct ChunkFacts {
  std::optional<double> enforced;
  bool has_fill = false;
};

// The buffer a lossy stage quantizes: the chunk in native byte order, with the
// fill value's elements taken out by a fill mask when the chunk holds any (they
// come back exactly; stored as outliers they would cost 4-9 bytes each, and a
// land mask is often half a chunk). The mask is stored zero-eliminated. A chunk
// without fill elements skips the mask: it would cost a pass each way for
// nothing (HDF5's default fill value 0.0 rarely occurs inside data; decoding a
// float64 field took 30% longer with the mask).
uint8_t lossy_source(Pipeline& p, const DataType& dtype, const Options& options, const ChunkFacts& facts) {
  const uint8_t native = native_order(p, dtype, dtype.size);
  const auto fill = fill_bits(dtype, options);
  if (!fill || !facts.has_fill) return native;
  const auto streams = p.add(make_fillmask(dtype.size, *fill), {native});
  p.add(make_rze(1), {streams[1]});
  return streams[0];
}

// The absolute bound a lossy preset enforces for this chunk, from what is
// known of its values (`range`: NOA's range and the fill test, found on the
// host by chunk_values or on the GPU): the user's bound (ABS, REL), or the
// largest double <= bound x (max - min) over the chunk's finite values other
// than the fill value and +0.0 (NOA; see finite_range). Empty when NOA has
// nothing to be relative to (no such value, or zero range): the chunk is then
// stored losslessly.
ChunkFacts facts_from_range(const Options& options, const FiniteRange& range) {
  ChunkFacts facts;
  facts.has_fill = range.has_fill;
  if (options.mode != ErrorMode::Noa) {
    facts.enforced = options.bound;
    return facts;
  }
  const double eb = noa_absolute_bound(options.bound, range);
  if (eb > 0) facts.enforced = eb;
  return facts;
}

}  // namespace

FiniteRange chunk_values(const DataType& dtype, const Options& options, ByteSpan chunk, const Executor& exec) {
  if (facts_needed(dtype, options) == FactsNeeded::kNone) return {};
  const auto fill = fill_bits(dtype, options);
  const bool big_endian = dtype.order == ByteOrder::Big;
  if (options.mode == ErrorMode::Noa) return finite_range(chunk, dtype.size, big_endian, fill, exec);
  FiniteRange values;
  values.has_fill = fill && contains_element(chunk, dtype.size, big_endian, *fill);
  return values;
}

namespace {

// Preset 2 (PFPL design): every element quantized on its own; the codes are
// smooth where the data is, so the lossless chain compresses them. NOA is
// resolved here into an absolute bound (so that every preset shares one
// definition of the range); the quantizer then runs in ABS or REL mode.
std::optional<Pipeline> pfpl_pipeline(const DataType& dtype, const Options& options, const ChunkFacts& facts) {
  if (!facts.enforced) return std::nullopt;
  Pipeline p;
  const unsigned width = dtype.size;
  quantize::Config q;
  q.width = width;
  q.mode = options.mode == ErrorMode::Rel ? quantize::Mode::kRel : quantize::Mode::kAbs;
  q.bound = *facts.enforced;
  const auto streams = p.add(make_quantize(q), {lossy_source(p, dtype, options, facts)});
  const uint8_t differences = p.add(make_diffnb(width), {streams[0]})[0];
  const uint8_t planes = p.add(make_bitshuffle(width), {differences})[0];
  p.add(make_rze(1), {planes});
  return p;  // outliers and params are stored as they are
}

// A predictor's bounds: the absolute bound it enforces and its working bound
// (a value of the element type, rounded toward zero). Empty when the chunk
// cannot be quantized usefully (see facts_from_range; also a working bound below
// the smallest normal): the preset then stores it losslessly.
struct PredictorBound {
  double enforced = 0;
  double working = 0;
  ChunkFacts facts;
};
std::optional<PredictorBound> predictor_bound(const DataType& dtype, const ChunkFacts& facts) {
  if (!facts.enforced) return std::nullopt;
  PredictorBound b;
  b.enforced = *facts.enforced;
  b.facts = facts;
  if (dtype.size == 4) {
    float f = static_cast<float>(b.enforced);
    if (static_cast<double>(f) > b.enforced) f = std::nextafter(f, 0.0f);
    if (!(f >= FLT_MIN) || !std::isfinite(2.0f * f)) return std::nullopt;
    b.working = f;
  } else {
    if (!(b.enforced >= DBL_MIN) || !std::isfinite(2.0 * b.enforced)) return std::nullopt;
    b.working = b.enforced;
  }
  return b;
}

std::vector<size_t> size_t_dims(const std::vector<uint64_t>& dims) {
  std::vector<size_t> out;
  for (uint64_t d : predictor_shape(dims)) out.push_back(static_cast<size_t>(d));
  return out;
}

// Presets 3 (FZ-GPU design) and 4 (cuSZ design): Lorenzo dual quantization;
// fzgpu codes go through bit-shuffle and zero elimination, cusz codes through
// Huffman with the alphabet of cuSZ (radius 512).
std::optional<Pipeline> lorenzo_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims,
                                         const Options& options, const ChunkFacts& facts) {
  const auto bound = predictor_bound(dtype, facts);
  if (!bound) return std::nullopt;
  const bool huffman = options.preset == Preset::Cusz;
  Pipeline p;
  lorenzo::Config l;
  l.width = dtype.size;
  l.eb = bound->working;
  l.radius = huffman ? 512 : 32768;
  const auto streams = p.add(make_lorenzo(l, bound->enforced, size_t_dims(dims)), {lossy_source(p, dtype, options, bound->facts)});
  if (huffman) {
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

bool quantizable(const DataType& dtype) {
  return dtype.element_class == ElementClass::Float && (dtype.size == 4 || dtype.size == 8);
}

// The preset's pipeline once the chunk's facts are known.
Pipeline pipeline_for(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                      const ChunkFacts& facts) {
  switch (options.preset) {
    case Preset::Pfpl:
      if (auto p = pfpl_pipeline(dtype, options, facts)) return std::move(*p);
      return lossless_pipeline(dtype);
    case Preset::Fzgpu:
    case Preset::Cusz:
      if (auto p = lorenzo_pipeline(dtype, dims, options, facts)) return std::move(*p);
      return lossless_pipeline(dtype);
    default:
      break;
  }
  throw Error(std::string("preset '") + preset_name(options.preset) + "' is not available in this build");
}

}  // namespace

FactsNeeded facts_needed(const DataType& dtype, const Options& options) {
  if (!preset_is_lossy(options.preset) || !quantizable(dtype)) return FactsNeeded::kNone;
  if (options.mode == ErrorMode::Noa) return FactsNeeded::kRangeAndFill;
  return fill_bits(dtype, options) ? FactsNeeded::kFillOnly : FactsNeeded::kNone;
}

Pipeline build_pipeline(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                        ByteSpan chunk, const Executor& exec) {
  if (!preset_is_lossy(options.preset) || !quantizable(dtype)) return lossless_pipeline(dtype);
  return build_pipeline_from_range(dtype, dims, options, chunk_values(dtype, options, chunk, exec));
}

Pipeline build_pipeline_from_range(const DataType& dtype, const std::vector<uint64_t>& dims, const Options& options,
                                   const FiniteRange& range) {
  if (!preset_is_lossy(options.preset) || !quantizable(dtype)) return lossless_pipeline(dtype);
  return pipeline_for(dtype, dims, options, facts_from_range(options, range));
}

}  // namespace fz::engine
