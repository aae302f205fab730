#include "shape.hpp"

namespace fz::engine {

std::vector<uint64_t> predictor_shape(const std::vector<uint64_t>& dims) {
  std::vector<uint64_t> kept;
  uint64_t product = 1;
  for (uint64_t d : dims) {
    product *= d;
    if (d != 1) kept.push_back(d);
  }
  if (product == 0) return {0};
  if (kept.empty()) return {product};
  while (kept.size() > 3) {
    kept[1] *= kept[0];
    kept.erase(kept.begin());
  }
  return kept;
}

}  // namespace fz::engine
