#include "range_stretch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fz::filter {
namespace {

bool host_is_little_endian() {
  const uint16_t one = 1;
  uint8_t first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// One element's bits in host order.
template <typename Bits>
Bits element_bits(const uint8_t* element, bool swap) {
  uint8_t bytes[sizeof(Bits)];
  std::memcpy(bytes, element, sizeof(Bits));
  if (swap) std::reverse(bytes, bytes + sizeof(Bits));
  Bits bits;
  std::memcpy(&bits, bytes, sizeof(Bits));
  return bits;
}

// The sampled values NOA's range is taken over, ascending.
template <typename Float, typename Bits>
std::vector<double> sorted_sample(const uint8_t* chunk, size_t count, bool swap, const Bytes& fill_value,
                                  const Bytes& missing_value) {
  const bool has_fill = fill_value.size() == sizeof(Bits);
  const Bits fill = has_fill ? element_bits<Bits>(fill_value.data(), swap) : Bits{0};
  const bool has_missing = missing_value.size() == sizeof(Bits);
  const Bits missing = has_missing ? element_bits<Bits>(missing_value.data(), swap) : Bits{0};
  const size_t taken = std::min(count, kRangeStretchSample);
  const size_t stride = count / taken;  // >= 1; the same elements every time
  std::vector<double> values;
  values.reserve(taken);
  for (size_t i = 0; i < taken; ++i) {
    const Bits bits = element_bits<Bits>(chunk + i * stride * sizeof(Bits), swap);
    // +0.0 and the special values are outside the range
    if (bits == 0 || (has_fill && bits == fill) || (has_missing && bits == missing)) continue;
    Float value;
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value)) continue;
    values.push_back(static_cast<double>(value));
  }
  std::sort(values.begin(), values.end());
  return values;
}

// How far the other values spread: interquartile, else whole, else magnitude.
double spread_of(const double* rest, size_t count) {
  const double quartiles = rest[(3 * count) / 4] - rest[count / 4];
  if (quartiles > 0) return quartiles;
  const double whole = rest[count - 1] - rest[0];
  if (whole > 0) return whole;
  return std::fabs(rest[0]);
}

}  // namespace

std::optional<RangeStretch> find_range_stretch(const void* chunk, size_t bytes, const DataType& dtype,
                                               const Bytes& fill_value, const Bytes& missing_value) {
  if (dtype.element_class != ElementClass::Float || (dtype.size != 4 && dtype.size != 8)) return std::nullopt;
  const size_t count = bytes / dtype.size;
  if (chunk == nullptr || count == 0) return std::nullopt;
  const bool swap = host_is_little_endian() != (dtype.order == ByteOrder::Little);
  const auto* data = static_cast<const uint8_t*>(chunk);
  const std::vector<double> values =
      dtype.size == 4 ? sorted_sample<float, uint32_t>(data, count, swap, fill_value, missing_value)
                      : sorted_sample<double, uint64_t>(data, count, swap, fill_value, missing_value);
  // Too few values to call any of them an outlier.
  constexpr size_t kFewest = 8;
  if (values.size() < kFewest) return std::nullopt;

  // The smallest value against the others (every element equal to it is the
  // same missing value, however many).
  const double low = values.front();
  const size_t first_other = static_cast<size_t>(std::upper_bound(values.begin(), values.end(), low) - values.begin());
  if (first_other == values.size()) return std::nullopt;  // one value only
  {
    const double* rest = values.data() + first_other;
    const size_t rest_count = values.size() - first_other;
    const double nearest_quartile = rest[rest_count / 4];
    if (nearest_quartile - low > kRangeStretchFactor * spread_of(rest, rest_count)) {
      return RangeStretch{low, rest[0], rest[rest_count - 1]};
    }
  }
  const double high = values.back();
  const size_t end_other = static_cast<size_t>(std::lower_bound(values.begin(), values.end(), high) - values.begin());
  {
    const double* rest = values.data();
    const size_t rest_count = end_other;  // >= 1: the values are not all one
    const double nearest_quartile = rest[(3 * rest_count) / 4];
    if (high - nearest_quartile > kRangeStretchFactor * spread_of(rest, rest_count)) {
      return RangeStretch{high, rest[0], rest[rest_count - 1]};
    }
  }
  return std::nullopt;
}

}  // namespace fz::filter
