// What the CPU encoder and decoder check of their arguments, and the block grid
// they share: the rules themselves (a decodable config, a valid shape) are
// lorenzo_rules.hpp's, shared with the GPU; this header turns a broken rule
// into the UsageError that lorenzo.hpp promises.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "lorenzo/lorenzo.hpp"
#include "lorenzo/lorenzo_rules.hpp"

namespace fz::lorenzo::detail {

using rules::kHeaderBytes;
using rules::Shape;

// Work-item grid of the encoder and of the decoder's carry pass.
constexpr size_t kBlockElems = size_t{1} << 15;
static_assert(kBlockElems <= 65536, "element offsets in a block are 16-bit");

inline Shape make_shape(const std::vector<size_t>& dims) {
  Shape s;
  switch (rules::shape_of(dims, s)) {
    case rules::ShapeCheck::kBadRank:
      throw UsageError("lorenzo: 1 to 3 extents expected, got " + std::to_string(dims.size()));
    case rules::ShapeCheck::kTooManyElements:
      throw UsageError("lorenzo: too many elements");
    case rules::ShapeCheck::kOk:
      break;
  }
  return s;
}

// The width, the shape and the config, checked in this order (the first
// broken rule names the error); returns the shape.
inline Shape checked_arguments(const std::vector<size_t>& dims, const Config& config) {
  if (config.width != 4 && config.width != 8)
    throw UsageError("lorenzo: element width must be 4 or 8, got " + std::to_string(config.width));
  const Shape s = make_shape(dims);
  if (const char* problem = config_problem(config)) throw UsageError(problem);
  return s;
}

}  // namespace fz::lorenzo::detail
