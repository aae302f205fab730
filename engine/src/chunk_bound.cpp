// fz::chunk_bound (fz.hpp): the bound a lossy preset enforces on one chunk,
// from the same facts the presets build their pipeline from (chunk_values,
// facts_from_range), so a tool that checks a round trip and the compressor
// cannot disagree on the range, the special values or the rounding.
#include "fz/fz.hpp"
#include "presets/lossy_common.hpp"
#include "presets/presets.hpp"

namespace fz {

ChunkBound chunk_bound(const void* data, size_t bytes, const DataType& dtype, const Options& options) {
  validate(options, dtype);
  if (bytes > 0 && data == nullptr) throw Error("chunk_bound: null data pointer");
  ChunkBound result;
  const bool quantizable =
      dtype.element_class == ElementClass::Float && (dtype.size == 4 || dtype.size == 8);
  if (!preset_is_lossy(options.preset) || !quantizable) return result;
  const engine::FiniteRange values = engine::chunk_values(
      dtype, options, ByteSpan(static_cast<const uint8_t*>(data), bytes), serial_executor());
  const engine::ChunkFacts facts = engine::facts_from_range(options, values);
  for (const auto& bits : {engine::fill_bits(dtype, options), engine::special_missing_bits(dtype, options)})
    if (bits) result.exact_bits.push_back(*bits);
  if (!facts.enforced) return result;  // stored losslessly
  result.lossy = true;
  result.mode = options.mode == ErrorMode::Rel ? ErrorMode::Rel : ErrorMode::Abs;
  result.bound = *facts.enforced;
  result.range_any = values.any;
  result.range_min = values.min;
  result.range_max = values.max;
  return result;
}

}  // namespace fz
