// The value hulls of a decoded chunk, as a reader checking a NOA frame needs
// them (filter/frame_check.hpp: the frame's enforced absolute bound against
// the stored NOA bound x the decoded range). One pass over the values, on the
// engine's threads: the check runs after every NOA chunk a reader decodes,
// and a single-threaded pass (two where the values came near 0) cost 11% of a
// two-thread read (docs/PERFORMANCE.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fz/fz.hpp"

namespace fz {

struct DecodedHulls {
  // Every finite value (+0.0 and the values kept exact included).
  bool any = false;
  double min = 0, max = 0;
  // The finite values whose magnitude exceeds `far` (compared in the element
  // type against `far` rounded up to it, so that a value within `far` of 0
  // never counts), other than the bit patterns in exact_bits.
  bool far_any = false;
  double far_min = 0, far_max = 0;
};

// dtype: float32 or float64, either byte order (else Error). exact_bits: bit
// patterns as native-order integers (the low dtype.size bytes). threads: CPU
// threads, 0 = all usable cores (as Options::threads). The result does not
// depend on the thread count (min and max do not depend on order).
DecodedHulls decoded_hulls(const void* data, size_t bytes, const DataType& dtype,
                           const std::vector<uint64_t>& exact_bits, double far, unsigned threads);

}  // namespace fz
