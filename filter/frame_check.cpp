#include "frame_check.hpp"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cd_values.hpp"
#include "environment.hpp"
#include "fz/decoded_range.hpp"

namespace fz::filter {
namespace {

// Stage type ids (docs/FORMAT.md section 2) whose configs carry a bound or a
// value kept exact.
constexpr uint16_t kQuantize = 9;
constexpr uint16_t kLorenzo = 10;
constexpr uint16_t kFillmask = 12;
constexpr uint16_t kSpline = 13;

// A bound printed so that it reads back exactly.
std::string exact_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

uint64_t load_le(const Bytes& bytes, size_t at, unsigned width) {
  uint64_t value = 0;
  for (unsigned i = 0; i < width; ++i) value |= uint64_t(bytes[at + i]) << (8 * i);
  return value;
}

double load_double(const Bytes& bytes, size_t at) {
  const uint64_t bits = load_le(bytes, at, 8);
  double value;
  std::memcpy(&value, &bits, 8);
  return value;
}

// The error bound a frame's lossy stage was configured with.
struct FrameBound {
  enum class Kind { kNone, kAbsolute, kRelative, kRangeRelative } kind = Kind::kNone;
  double value = 0;  // kAbsolute: the absolute bound enforced; otherwise the user's bound
};

FrameBound bound_of(const FrameInfo& info) {
  FrameBound found;
  for (const StageInfo& stage : info.stages) {
    const Bytes& c = stage.config;
    if (stage.type_id == kQuantize && c.size() == 19) {
      found.value = load_double(c, 2);
      found.kind = c[1] == 2   ? FrameBound::Kind::kRelative
                   : c[1] == 1 ? FrameBound::Kind::kRangeRelative
                               : FrameBound::Kind::kAbsolute;
    } else if (stage.type_id == kLorenzo && c.size() >= 21) {
      found = {FrameBound::Kind::kAbsolute, load_double(c, 13)};
    } else if (stage.type_id == kSpline && c.size() >= 15 && c[0] == 0x82) {  // config v2: the bound last
      found = {FrameBound::Kind::kAbsolute, load_double(c, c.size() - 8)};
    } else if (stage.type_id == kSpline && c.size() >= 14) {
      found = {FrameBound::Kind::kAbsolute, load_double(c, 6)};
    }
  }
  return found;
}

Preset normal(Preset p) { return p == Preset::Default ? Preset::Lossless : p; }

const char* kWhy =
    ": the chunk was written with other parameters than the dataset stores (in a parallel write, ranks that "
    "passed different filter parameters: every rank must pass the same)";

std::string stored_bound_text(const StoredParams& params) {
  return std::string(mode_name(params.user.mode)) + " " + exact_text(params.user.bound);
}

// Parameters the checks can use, or nothing for a layout this version does
// not know (the frame alone then says how to decode).
std::optional<StoredParams> stored(const unsigned cd[], size_t cd_count) {
  if (!is_stored_layout(cd, cd_count)) {
    // set_local rewrites every dataset's values into the stored layout
    // before any chunk is written; values in the user layout mean it never
    // ran (the filter was unavailable or refused the type), so no chunk of
    // this dataset can hold an H5Z-FZ frame.
    throw Error("cd_values are not in the stored layout, so H5Z-FZ never compressed a chunk of this dataset; "
                "the chunk is not an H5Z-FZ frame it wrote");
  }
  try {
    return decode_stored(cd, cd_count);
  } catch (const Error&) {
    return std::nullopt;  // a layout from a later version
  }
}

std::optional<uint64_t> chunk_size(const DatasetInfo& dataset) {
  if (dataset.chunk_dims.empty()) return std::nullopt;
  uint64_t bytes = dataset.dtype.size;
  for (uint32_t d : dataset.chunk_dims) {
    if (__builtin_mul_overflow(bytes, uint64_t{d}, &bytes)) return std::nullopt;
  }
  return bytes;
}

// A frame of plain bytes with another filter before ours holds that filter's
// output (the filter's byte fallback), whose length is not the chunk's.
// Layouts written before the first-filter flag existed cannot say which
// filter comes first; they get the same allowance.
bool byte_fallback(const StoredParams& params, const FrameInfo& info) {
  return !params.dataset.first_filter && info.dtype == bytes_type();
}

bool float_lossy(const StoredParams& params) {
  return preset_is_lossy(params.user.preset) && params.dataset.dtype.element_class == ElementClass::Float &&
         (params.dataset.dtype.size == 4 || params.dataset.dtype.size == 8);
}

// The element bit patterns kept exact, left out of NOA's range: the
// dataset's fill value and each fillmask stage's value.
std::vector<uint64_t> exact_values(const StoredParams& params, const FrameInfo& info) {
  std::vector<uint64_t> values;
  const Bytes& fill = params.dataset.fill_value;
  if (fill.size() == params.dataset.dtype.size && fill.size() <= 8) {
    uint64_t bits = 0;
    for (size_t i = 0; i < fill.size(); ++i) {
      const size_t byte = params.dataset.dtype.order == ByteOrder::Big ? fill.size() - 1 - i : i;
      bits |= uint64_t(fill[byte]) << (8 * i);
    }
    values.push_back(bits);
  }
  for (const StageInfo& stage : info.stages) {
    if (stage.type_id == kFillmask && stage.config.size() == 9) values.push_back(load_le(stage.config, 1, 8));
  }
  return values;
}

}  // namespace

FrameExpectation check_frame(const unsigned cd[], size_t cd_count, const FrameInfo& info) {
  const std::optional<StoredParams> params = stored(cd, cd_count);
  if (!params) return {};
  FrameExpectation target;
  target.chunk = chunk_size(params->dataset);
  if (byte_fallback(*params, info)) return target;
  const DataType& want = params->dataset.dtype;
  if (info.dtype.size != want.size) {
    throw Error("frame holds " + std::to_string(info.dtype.size) + "-byte elements but the dataset's are " +
                std::to_string(want.size) + " bytes (the frame's " + describe(info.dtype) + ", the dataset's " +
                describe(want) + ")");
  }
  if (!target.chunk || info.original_bytes != *target.chunk) {
    throw Error("frame decodes to " + std::to_string(info.original_bytes) + " bytes but a chunk of this dataset is " +
                (target.chunk ? std::to_string(*target.chunk) : std::string("over 2^64")) + " bytes");
  }
  target.exact = true;
  if (!(info.dtype == want)) {
    throw Error("frame holds " + describe(info.dtype) + " elements but the dataset's are " + describe(want));
  }
  if (normal(info.preset) != normal(params->user.preset)) {
    throw Error(std::string("frame was written with preset ") + preset_name(normal(info.preset)) +
                ", the dataset's cd_values say preset " + preset_name(normal(params->user.preset)) + kWhy);
  }
  if (!float_lossy(*params)) return target;
  const FrameBound frame = bound_of(info);
  const double bound = params->user.bound;
  using Kind = FrameBound::Kind;
  switch (frame.kind) {
    case Kind::kNone:
      return target;  // stored losslessly (no finite value, zero range, ...): nothing to compare
    case Kind::kRelative:
      if (params->user.mode != ErrorMode::Rel || frame.value != bound) {
        throw Error("frame was written with the point-wise relative bound REL " + exact_text(frame.value) +
                    ", the dataset's cd_values say " + stored_bound_text(*params) + kWhy);
      }
      return target;
    case Kind::kRangeRelative:
      if (params->user.mode != ErrorMode::Noa || frame.value != bound) {
        throw Error("frame was written with NOA " + exact_text(frame.value) + ", the dataset's cd_values say " +
                    stored_bound_text(*params) + kWhy);
      }
      return target;
    case Kind::kAbsolute:
      if (params->user.mode == ErrorMode::Abs) {
        if (frame.value != bound) {
          throw Error("frame was written with the absolute bound ABS " + exact_text(frame.value) +
                      ", the dataset's cd_values say " + stored_bound_text(*params) + kWhy);
        }
      } else if (params->user.mode != ErrorMode::Noa) {
        throw Error("frame was written with an absolute bound (" + exact_text(frame.value) +
                    "), the dataset's cd_values say " + stored_bound_text(*params) + kWhy);
      }
      return target;  // NOA: after decoding (check_decoded)
  }
  return target;
}

bool needs_decoded_check(const unsigned cd[], size_t cd_count, const FrameInfo& info) {
  if (!is_stored_layout(cd, cd_count) || info.raw) return false;
  StoredParams params;
  try {
    params = decode_stored(cd, cd_count);
  } catch (const Error&) {
    return false;
  }
  return !byte_fallback(params, info) && float_lossy(params) && params.user.mode == ErrorMode::Noa &&
         bound_of(info).kind == FrameBound::Kind::kAbsolute;
}

void check_decoded(const unsigned cd[], size_t cd_count, const FrameInfo& info, const void* decoded, size_t bytes) {
  check_decoded(cd, cd_count, info, decoded, bytes, policy_from_environment().threads);
}

void check_decoded(const unsigned cd[], size_t cd_count, const FrameInfo& info, const void* decoded, size_t bytes,
                   unsigned threads) {
  if (!needs_decoded_check(cd, cd_count, info)) return;
  const StoredParams params = decode_stored(cd, cd_count);
  const double enforced = bound_of(info).value;
  const double bound = params.user.bound;
  // Two hulls of the decoded values, in one pass on the engine's threads:
  // - all finite values. Every element of the original range decodes into
  //   it, whether or not the values kept exact and +0.0 (which NOA leaves
  //   out of the range) are in it: a small element may decode to +0.0, an
  //   element within the bound of an exact value to its bits. Its range plus
  //   twice the bound is at least the original range.
  // - the finite values farther than the bound from 0, not kept exact: each
  //   decodes an element of the original range, so the original range is at
  //   least their range minus twice the bound.
  const DecodedHulls h =
      decoded_hulls(decoded, bytes, params.dataset.dtype, exact_values(params, info), enforced, threads);
  // The engine's bound is the largest double <= bound x range: a relative
  // slack of 1e-9 covers the roundings here, far below any disagreement
  // worth naming (it stops nothing the coding error could explain).
  constexpr double kSlack = 1e-9;
  const double most = h.any ? (h.max - h.min) + 2 * enforced : 2 * enforced;
  const bool too_loose = enforced > bound * most * (1 + kSlack);
  // The engine takes a range past the largest double as the largest double.
  const double far = h.far_any ? std::fmin(h.far_max - h.far_min, DBL_MAX) : 0.0;
  const double least = far - 2 * enforced;
  const bool too_tight = least > 0 && enforced < bound * least * (1 - kSlack);
  if (!too_loose && !too_tight) return;
  // The bound the frame's enforced bound corresponds to, from the decoded range.
  const double range = h.any ? h.max - h.min : 0.0;
  throw Error("frame was written with an absolute bound of " + exact_text(enforced) + " over a value range of about " +
              exact_text(range) + " (NOA about " + exact_text(range > 0 ? enforced / range : 0.0) +
              "), the dataset's cd_values say " + stored_bound_text(params) + kWhy);
}

}  // namespace fz::filter
