// The shape a predictor sees: HDF5 chunks come in any rank; predictors work on
// 1 to 3 axes. Extents of 1 carry no neighbours and are dropped; ranks above 3
// are folded into the slowest axis (the fastest axes keep their neighbours,
// which is where smooth fields correlate most). docs/FORMAT.md section 3.
#pragma once

#include <cstdint>
#include <vector>

namespace fz::engine {

// Slowest first, 1 to 3 extents, product unchanged. An empty or all-ones shape
// becomes {product} (a single element or none).
std::vector<uint64_t> predictor_shape(const std::vector<uint64_t>& dims);

}  // namespace fz::engine
