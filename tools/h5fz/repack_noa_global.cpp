// --mode noa-global: one pass over a dataset's chunks for its finite value
// range (the values the filter keeps exactly left out), so that the bound
// times that range becomes an abs bound every chunk holds. Near the type's
// limits no such bound exists, and the dataset falls back to noa
// (repack_dataset.cpp says so at the end of the run).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "repack_run.hpp"

namespace h5fz {

Repack::GlobalBound Repack::global_abs_bound(hid_t in, const ChunkPlan& plan, const std::vector<fz::Bytes>& exclude,
                                             double noa, const std::string& path) {
  const ChunkGrid grid(plan.dims, plan.chunks);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  fz::Bytes chunk;
  // Padding takes all ones (a NaN), so it never counts.
  ChunkPlan unpadded = plan;
  unpadded.fill_element = fz::Bytes(plan.dtype.size, 0xFF);
  const bool big = plan.dtype.order == fz::ByteOrder::Big;
  for (uint64_t index = 0; index < grid.count(); ++index) {
    check_interrupted();
    read_chunk(in, unpadded, grid.offset(index), chunk, path);
    const size_t size = plan.dtype.size;
    for (size_t at = 0; at + size <= chunk.size(); at += size) {
      unsigned char element[8];
      for (size_t k = 0; k < size; ++k) element[k] = chunk[at + (big ? size - 1 - k : k)];
      if (std::any_of(exclude.begin(), exclude.end(),
                      [&](const fz::Bytes& e) { return std::memcmp(chunk.data() + at, e.data(), size) == 0; }))
        continue;
      double value;
      if (size == 4) {
        float f;
        std::memcpy(&f, element, 4);
        value = f;
      } else if (size == 8) {
        std::memcpy(&value, element, 8);
      } else {
        continue;  // float16: its range is not needed, noa-global binds float32/float64
      }
      if (!std::isfinite(value)) continue;
      lo = std::min(lo, value);
      hi = std::max(hi, value);
    }
    progress_->advance(0, path + " (range)");
  }
  GlobalBound global;
  if (!(hi > lo)) {  // one value (or none): every value comes back exactly
    global.bound = plan.dtype.size == 4 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
    return global;
  }
  // Near the type's limits the product leaves what the filter accepts: a
  // range of +-1.5e308 is inf, one of denormals gives a bound of 0.
  const double bound = noa * (hi - lo);
  if (!std::isfinite(bound)) {
    global.why = "the value range " + short_number(lo) + " .. " + short_number(hi) + " overflows a double";
  } else if (!(bound > 0)) {
    global.why = "the value range " + short_number(lo) + " .. " + short_number(hi) + " times " + short_number(noa) +
                 " is 0 in floating point";
  } else {
    global.bound = bound;
  }
  return global;
}

}  // namespace h5fz
