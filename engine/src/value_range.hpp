// The value range NOA bounds are relative to: min and max over the finite
// elements that are neither special value (HDF5's fill value, the missing
// value) nor +0.0 (docs/FORMAT.md section 0, rule 6: special values are left
// out of NOA's range). Exact and independent of the thread count (min and
// max do not depend on order).
#pragma once

#include <cstdint>
#include <optional>

#include "common/bytes.hpp"
#include "common/executor.hpp"

namespace fz::engine {

struct FiniteRange {
  bool any = false;  // false: no finite element other than the special values and +0.0
  double min = 0, max = 0;
  bool has_fill = false;     // some element is the fill value
  bool has_missing = false;  // some element is the missing value (never set when it equals the fill value)
  // Not a range fact: cuszhi-cr's predictor choice for the chunk (true: the
  // Lorenzo pipeline), found with the facts (presets/predictor_choice.hpp).
  bool lorenzo = false;
  // Likewise: cuszhi-cr's spline over the folded shape, the slowest two axes
  // of a 3-D chunk merged into one (a stack of 2-D slices).
  bool fold = false;
};

// width 4 (float32) or 8 (float64); big_endian: elements are stored big-endian;
// fill: the fill value's bits in native order (low `width` bytes). Elements
// whose bits are +0.0 are left out too: HDF5 pads ragged edge chunks with its
// own fill value, which is zero whenever the dataset defines none (and also
// when a missing value given in cd_values replaces it), and the padding must not
// widen the range. Leaving values out only shrinks the range, so the bound
// derived from it only gets tighter.
// missing: the missing value's bits, left out as the fill value is (the
// caller drops it when it equals the fill value).
FiniteRange finite_range(ByteSpan data, unsigned width, bool big_endian, std::optional<uint64_t> fill,
                         std::optional<uint64_t> missing, const Executor& exec);
inline FiniteRange finite_range(ByteSpan data, unsigned width, bool big_endian, std::optional<uint64_t> fill,
                                const Executor& exec) {
  return finite_range(data, width, big_endian, fill, std::nullopt, exec);
}

// True iff some element's bits equal `bits` (native order; width 4 or 8).
bool contains_element(ByteSpan data, unsigned width, bool big_endian, uint64_t bits);

// The largest double <= bound * (max - min), computed with error-free steps so
// that rounding can never loosen the user's bound.
double noa_absolute_bound(double bound, const FiniteRange& range);

}  // namespace fz::engine
