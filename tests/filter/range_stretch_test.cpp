// The NOA range-stretch check (filter/range_stretch.hpp): an undeclared
// missing value (netCDF land) is found, real fields and declared fill values
// are left alone.
#include "range_stretch.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace fz::filter {
namespace {

// A smooth field of n values in [10, 30] (sea temperatures).
template <typename T>
std::vector<T> sea(size_t n) {
  std::vector<T> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<T>(20.0 + 10.0 * std::sin(0.01 * static_cast<double>(i)));
  return values;
}

template <typename T>
std::optional<RangeStretch> check(const std::vector<T>& values, const Bytes& fill = {},
                                  ByteOrder order = ByteOrder::Little) {
  DataType dtype{ElementClass::Float, static_cast<uint32_t>(sizeof(T)), order};
  return find_range_stretch(values.data(), values.size() * sizeof(T), dtype, fill);
}

template <typename T>
Bytes element_bytes(T value) {
  Bytes bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

TEST(RangeStretch, LandBlockIsFound) {
  std::vector<float> field = sea<float>(100000);
  std::fill(field.begin() + 20000, field.begin() + 50000, -1e10f);  // 30% land
  const auto stretch = check(field);
  ASSERT_TRUE(stretch.has_value());
  EXPECT_EQ(stretch->value, static_cast<double>(-1e10f));
  EXPECT_GE(stretch->rest_min, 9.0);
  EXPECT_LE(stretch->rest_max, 31.0);
}

TEST(RangeStretch, MostlyLandIsFound) {
  // Deep ocean levels are mostly land: the quartiles of all values would be
  // land, so the rule looks at the values other than the extreme.
  std::vector<float> field = sea<float>(50000);
  std::fill(field.begin(), field.begin() + 45000, -1e10f);
  ASSERT_TRUE(check(field).has_value());
}

TEST(RangeStretch, HighFillIsFound) {
  std::vector<double> field = sea<double>(30000);
  std::fill(field.begin() + 1000, field.begin() + 9000, 9.969209968386869e36);  // netCDF's default float fill
  const auto stretch = check(field);
  ASSERT_TRUE(stretch.has_value());
  EXPECT_EQ(stretch->value, 9.969209968386869e36);
}

TEST(RangeStretch, DeclaredFillValueIsLeftOut) {
  std::vector<float> field = sea<float>(100000);
  std::fill(field.begin() + 20000, field.begin() + 50000, -1e10f);
  EXPECT_FALSE(check(field, element_bytes(-1e10f)).has_value());
}

// HDF5's fill value (padding, never-written elements) and the missing value
// (land) in one chunk: both declared, neither stretches the range; either
// alone still lets the other through (issue 28 item 1).
TEST(RangeStretch, FillAndMissingValuesAreBothLeftOut) {
  std::vector<float> field = sea<float>(100000);
  std::fill(field.begin() + 20000, field.begin() + 50000, -1e10f);  // land: the missing value
  std::fill(field.begin() + 90000, field.end(), 9.96921e36f);        // padding: netCDF's default fill
  const DataType dtype = DataType::of<float>();
  const size_t bytes = field.size() * sizeof(float);
  EXPECT_FALSE(find_range_stretch(field.data(), bytes, dtype, element_bytes(9.96921e36f), element_bytes(-1e10f)));
  const auto only_missing = find_range_stretch(field.data(), bytes, dtype, {}, element_bytes(-1e10f));
  ASSERT_TRUE(only_missing.has_value());
  EXPECT_EQ(only_missing->value, static_cast<double>(9.96921e36f));
  const auto only_fill = find_range_stretch(field.data(), bytes, dtype, element_bytes(9.96921e36f));
  ASSERT_TRUE(only_fill.has_value());
  EXPECT_EQ(only_fill->value, static_cast<double>(-1e10f));
}

TEST(RangeStretch, BigEndianElements) {
  std::vector<float> field = sea<float>(20000);
  std::fill(field.begin(), field.begin() + 5000, -1e34f);
  std::vector<uint32_t> swapped(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &field[i], 4);
    swapped[i] = __builtin_bswap32(bits);
  }
  const DataType big{ElementClass::Float, 4, ByteOrder::Big};
  const auto stretch = find_range_stretch(swapped.data(), swapped.size() * 4, big, {});
  ASSERT_TRUE(stretch.has_value());
  EXPECT_EQ(stretch->value, static_cast<double>(-1e34f));
}

TEST(RangeStretch, OrdinaryFieldsAreLeftAlone) {
  EXPECT_FALSE(check(sea<float>(100000)).has_value());
  EXPECT_FALSE(check(sea<double>(1000)).has_value());
  // Exactly two values (like const32x32x59.float): nothing stands out.
  std::vector<float> two(5000, 3.14f);
  std::fill(two.begin(), two.begin() + 2500, -3.14f);
  EXPECT_FALSE(check(two).has_value());
  // Several orders of magnitude, but spread out (a log-normal-like field).
  std::vector<double> wide(20000);
  for (size_t i = 0; i < wide.size(); ++i) wide[i] = std::pow(10.0, -3.0 + 8.0 * static_cast<double>(i) / 20000.0);
  EXPECT_FALSE(check(wide).has_value());
}

TEST(RangeStretch, ZerosNonFiniteAndPaddingDoNotCount) {
  std::vector<float> field = sea<float>(10000);
  std::fill(field.begin(), field.begin() + 3000, 0.0f);  // HDF5's edge padding
  field[5000] = std::numeric_limits<float>::infinity();
  field[6000] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(check(field).has_value());
}

TEST(RangeStretch, OtherTypesAndTinyChunksGiveNothing) {
  std::vector<int32_t> ints(1000, 5);
  ints[0] = -2000000000;
  const DataType int32{ElementClass::Signed, 4, ByteOrder::Little};
  EXPECT_FALSE(find_range_stretch(ints.data(), ints.size() * 4, int32, {}).has_value());
  std::vector<float> tiny = {1.0f, 2.0f, -1e10f};
  EXPECT_FALSE(check(tiny).has_value());
  EXPECT_FALSE(find_range_stretch(nullptr, 0, DataType::of<float>(), {}).has_value());
}

}  // namespace
}  // namespace fz::filter
