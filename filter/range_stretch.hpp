// A cheap look for a missing value nobody declared (netCDF land -1e10, -1e34,
// 9.97e36 fills) in a chunk compressed under NOA. NOA's bound is relative to
// the chunk's value range, so one such value alone stretches the range by
// orders of magnitude and every real value is then quantized against it:
// within the (now huge) bound, and all to nearly one number. The filter warns
// when it sees this (plugin.cpp); the frame bytes never depend on it.
//
// Pure code, no HDF5, so that it is tested without a file.
#pragma once

#include <cstddef>
#include <optional>

#include "fz/fz.hpp"

namespace fz::filter {

// The rule: an element value (the chunk's smallest or largest) lies further
// from the nearest quartile of the other values than kRangeStretchFactor times
// their interquartile spread (their whole spread when the quartiles coincide,
// their magnitude when they are all one value). Only the values NOA's range
// is taken over count (finite, not the fill value, not the missing value,
// not +0.0).
//
// Cost: a strided sample of at most kRangeStretchSample elements, sorted
// (about 15 us; 4096 elements took 0.2-0.3 ms, more than compressing a
// 64 KiB chunk); no pass over the whole chunk. A missing value that marks an
// area (land, a mask) is found; a lone element may fall between the samples.
constexpr double kRangeStretchFactor = 1e6;
constexpr size_t kRangeStretchSample = 1024;

struct RangeStretch {
  double value = 0;              // the value that stretches the range
  double rest_min = 0, rest_max = 0;  // the range of the sampled other values
};

// `chunk` holds `bytes` bytes of `dtype` elements (IEEE float32/float64; any
// other type gives nothing); `fill_value` (HDF5's) and `missing_value`
// (cd_values[4..5]) are one element each in the data's byte order, or empty.
std::optional<RangeStretch> find_range_stretch(const void* chunk, size_t bytes, const DataType& dtype,
                                               const Bytes& fill_value, const Bytes& missing_value = {});

}  // namespace fz::filter
