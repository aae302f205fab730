#include "quality.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "cli.hpp"

namespace h5fz {

namespace {

// Stage type ids and config layouts of docs/FORMAT.md section 2 (stable).
constexpr uint16_t kQuantizeStage = 9;  // u8 width, u8 mode, f64 user bound, u8 has fill, u64 fill bits
constexpr uint16_t kLorenzoStage = 10;  // u8 width, u32 radius, f64 eb, f64 enforced bound, u8 has fill, u64 fill

uint64_t load_le(const fz::Bytes& bytes, size_t offset, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) value |= static_cast<uint64_t>(bytes[offset + i]) << (8 * i);
  return value;
}

double load_f64(const fz::Bytes& bytes, size_t offset) {
  uint64_t bits = load_le(bytes, offset, 8);
  double value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Element i of a float array as its bits in native order (the tools run on
// little-endian machines, like the engine's raw files).
template <typename Bits>
Bits element_bits(const uint8_t* data, uint64_t i, bool big_endian) {
  Bits bits;
  std::memcpy(&bits, data + i * sizeof(Bits), sizeof(Bits));
  if (big_endian) {
    Bits swapped = 0;
    for (size_t k = 0; k < sizeof(Bits); ++k) swapped = static_cast<Bits>(swapped << 8 | ((bits >> (8 * k)) & 0xFF));
    bits = swapped;
  }
  return bits;
}

// NOA's absolute bound and range for the whole array as one chunk, by the
// engine's rule (fz::chunk_bound: finite values other than the fill and
// missing values and +0.0, the bound rounded down), so that a check here and
// the compressor never disagree on what NOA means.
struct NoaRule {
  double allowed = 0;  // 0: nothing may change (the engine stores such arrays exactly)
  double range = 0;
};

fz::Bytes element_of(uint64_t bits, const fz::DataType& dtype) {
  fz::Bytes element(dtype.size);
  for (size_t k = 0; k < element.size(); ++k) element[k] = static_cast<uint8_t>(bits >> (8 * k));
  if (dtype.order == fz::ByteOrder::Big) std::reverse(element.begin(), element.end());
  return element;
}

NoaRule noa_rule(const fz::Bytes& original, const fz::DataType& dtype, const BoundSpec& spec) {
  fz::Options options;
  options.preset = fz::Preset::Pfpl;  // any lossy preset: the rule is the engine's, not a preset's
  options.mode = fz::ErrorMode::Noa;
  options.bound = spec.bound;
  if (spec.has_fill) options.fill_value = element_of(spec.fill_bits, dtype);
  if (spec.has_missing) options.missing_value = element_of(spec.missing_bits, dtype);
  const fz::ChunkBound rule = fz::chunk_bound(original.data(), original.size(), dtype, options);
  NoaRule noa;
  if (rule.range_any) noa.range = rule.range_max - rule.range_min;
  if (rule.lossy) noa.allowed = rule.bound;
  return noa;
}

template <typename T, typename Bits>
void float_stats(const fz::Bytes& original, const fz::Bytes& decoded, bool big_endian, const BoundSpec& spec,
                 const NoaRule& noa, Quality& q) {
  static_assert(sizeof(T) == sizeof(Bits), "T and Bits differ in size");
  const uint64_t n = original.size() / sizeof(T);
  const Bits fill = static_cast<Bits>(spec.fill_bits);
  auto value = [](Bits bits) {
    T v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  };
  const Bits missing = static_cast<Bits>(spec.missing_bits);
  auto is_fill = [&](Bits bits) { return (spec.has_fill && bits == fill) || (spec.has_missing && bits == missing); };

  // Pass 1: ranges. PSNR uses every finite value; NOA leaves the fill out.
  long double lo = std::numeric_limits<long double>::infinity(), hi = -lo;
  for (uint64_t i = 0; i < n; ++i) {
    Bits bits = element_bits<Bits>(original.data(), i, big_endian);
    T x = value(bits);
    if (!std::isfinite(x)) continue;
    ++q.finite;
    lo = std::min<long double>(lo, x);
    hi = std::max<long double>(hi, x);
  }
  q.elements = n;
  q.min_value = q.finite ? static_cast<double>(lo) : 0;
  q.max_value = q.finite ? static_cast<double>(hi) : 0;

  long double allowed_abs = 0;
  if (spec.known) {
    q.bound_checked = true;
    if (spec.mode == fz::ErrorMode::Noa) {
      q.noa_range = noa.range;
      allowed_abs = noa.allowed;
    } else if (spec.mode == fz::ErrorMode::Abs) {
      allowed_abs = spec.bound;
    }
    q.abs_bound = static_cast<double>(allowed_abs);
  }

  // Pass 2: errors and violations.
  long double sum_sq = 0;
  for (uint64_t i = 0; i < n; ++i) {
    Bits xb = element_bits<Bits>(original.data(), i, big_endian);
    Bits yb = element_bits<Bits>(decoded.data(), i, big_endian);
    if (xb != yb) ++q.differing;
    T x = value(xb), y = value(yb);
    if (!std::isfinite(x)) {
      if (xb != yb) {
        ++q.non_finite_mismatch;
        if (q.bound_checked) ++q.violations;
      }
      continue;
    }
    long double err = std::isfinite(y) ? std::fabs(static_cast<long double>(x) - static_cast<long double>(y))
                                        : std::numeric_limits<long double>::infinity();
    q.max_abs_error = std::max(q.max_abs_error, static_cast<double>(err));
    sum_sq += err * err;
    if (x != 0) {
      q.any_nonzero = true;
      q.max_rel_error = std::max(q.max_rel_error, static_cast<double>(err / std::fabs(static_cast<long double>(x))));
    }
    if (q.bound_checked) {
      bool ok;
      if (is_fill(xb))
        ok = xb == yb;
      else if (spec.mode == fz::ErrorMode::Rel)
        ok = err <= static_cast<long double>(spec.bound) * std::fabs(static_cast<long double>(x));
      else
        ok = err <= allowed_abs;
      if (!ok) ++q.violations;
    }
  }
  const long double range = hi >= lo ? hi - lo : 0;
  q.rmse = q.finite ? static_cast<double>(std::sqrt(sum_sq / q.finite)) : 0;
  q.psnr = q.rmse > 0 && range > 0 ? static_cast<double>(20 * std::log10(range / q.rmse))
                                   : std::numeric_limits<double>::infinity();
  q.nrmse = range > 0 ? static_cast<double>(q.rmse / range) : 0;
}

const char* mode_words(fz::ErrorMode mode) {
  switch (mode) {
    case fz::ErrorMode::Abs: return "abs";
    case fz::ErrorMode::Noa: return "noa (relative to the value range)";
    case fz::ErrorMode::Rel: return "rel (point-wise relative)";
  }
  return "?";
}

}  // namespace

bool is_ieee_float(const fz::DataType& dtype) {
  return dtype.element_class == fz::ElementClass::Float && (dtype.size == 4 || dtype.size == 8);
}

BoundSpec bound_from_frame(const fz::FrameInfo& info) {
  BoundSpec spec;
  for (const fz::StageInfo& stage : info.stages) {
    const fz::Bytes& c = stage.config;
    if (stage.type_id == kQuantizeStage && c.size() >= 19) {
      unsigned mode = c[1];
      if (mode > static_cast<unsigned>(fz::ErrorMode::Rel)) continue;
      spec.known = true;
      spec.mode = static_cast<fz::ErrorMode>(mode);
      spec.bound = load_f64(c, 2);
      spec.has_fill = c[10] != 0;
      spec.fill_bits = load_le(c, 11, 8);
      spec.source = "from the frame's quantize stage";
      return spec;
    }
    if (stage.type_id == kLorenzoStage && c.size() >= 30) {
      spec.known = true;
      spec.mode = fz::ErrorMode::Abs;
      spec.bound = load_f64(c, 13);
      spec.has_fill = c[21] != 0;
      spec.fill_bits = load_le(c, 22, 8);
      spec.source = "the absolute bound the frame's lorenzo stage enforced (<= the requested bound; "
                    "give --mode/--bound to check the requested one)";
      return spec;
    }
  }
  return spec;
}

Quality assess(const fz::Bytes& original, const fz::Bytes& decoded, const fz::DataType& dtype,
               const BoundSpec& spec) {
  if (original.size() != decoded.size())
    throw ToolError("size mismatch: the original has " + std::to_string(original.size()) +
                    " bytes, the decoded array " + std::to_string(decoded.size()));
  Quality q;
  q.bytes = original.size();
  q.bit_exact = original.empty() || std::memcmp(original.data(), decoded.data(), original.size()) == 0;
  if (!q.bit_exact)
    while (original[q.first_differing_byte] == decoded[q.first_differing_byte]) ++q.first_differing_byte;
  if (is_ieee_float(dtype) && original.size() % dtype.size == 0) {
    q.float_stats = true;
    const bool big = dtype.order == fz::ByteOrder::Big;
    const NoaRule noa = spec.known && spec.mode == fz::ErrorMode::Noa ? noa_rule(original, dtype, spec) : NoaRule{};
    if (dtype.size == 4)
      float_stats<float, uint32_t>(original, decoded, big, spec, noa, q);
    else
      float_stats<double, uint64_t>(original, decoded, big, spec, noa, q);
  }
  return q;
}

namespace {

template <typename T, typename Bits>
ChunkCheck quick_float_check(const fz::Bytes& original, const fz::Bytes& decoded, bool big_endian,
                             const BoundSpec& spec, bool& needs_exact_check) {
  ChunkCheck check;
  const uint64_t n = original.size() / sizeof(T);
  const Bits fill = static_cast<Bits>(spec.fill_bits);
  const Bits missing = static_cast<Bits>(spec.missing_bits);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  double rel_excess = 0;  // largest err - bound * |x| (rel mode)
  for (uint64_t i = 0; i < n; ++i) {
    const Bits xb = element_bits<Bits>(original.data(), i, big_endian);
    const Bits yb = element_bits<Bits>(decoded.data(), i, big_endian);
    T x, y;
    std::memcpy(&x, &xb, sizeof x);
    std::memcpy(&y, &yb, sizeof y);
    if (!std::isfinite(x) || (spec.has_fill && xb == fill) || (spec.has_missing && xb == missing)) {
      if (xb != yb) ++check.mismatches;
      continue;
    }
    lo = std::min<double>(lo, x);
    hi = std::max<double>(hi, x);
    const double err = std::isfinite(y) ? std::fabs(static_cast<double>(x) - static_cast<double>(y))
                                        : std::numeric_limits<double>::infinity();
    check.max_abs_error = std::max(check.max_abs_error, err);
    if (spec.mode == fz::ErrorMode::Rel) rel_excess = std::max(rel_excess, err - spec.bound * std::fabs(double(x)));
  }
  if (!spec.known) return check;
  if (spec.mode == fz::ErrorMode::Rel) {
    needs_exact_check = rel_excess > -1e-9 * spec.bound * std::max(std::fabs(lo), std::fabs(hi));
  } else {
    const double allowed = spec.mode == fz::ErrorMode::Noa ? spec.bound * (hi >= lo ? hi - lo : 0.0) : spec.bound;
    needs_exact_check = check.max_abs_error > allowed * (1 - 1e-9);
  }
  return check;
}

}  // namespace

ChunkCheck check_chunk(const fz::Bytes& original, const fz::Bytes& decoded, const fz::DataType& dtype,
                       const BoundSpec& spec) {
  if (original.size() != decoded.size()) {
    throw fz::Error("check: the original has " + std::to_string(original.size()) + " bytes, the decoded chunk " +
                    std::to_string(decoded.size()));
  }
  ChunkCheck check;
  if (!spec.known || !is_ieee_float(dtype) || original.size() % dtype.size != 0) {
    // Exact data: any difference is a mismatch (counted once per chunk).
    if (std::memcmp(original.data(), decoded.data(), original.size()) != 0) check.mismatches = 1;
    if (is_ieee_float(dtype) && check.mismatches) check.max_abs_error = assess(original, decoded, dtype, spec).max_abs_error;
    return check;
  }
  bool needs_exact_check = false;
  const bool big = dtype.order == fz::ByteOrder::Big;
  check = dtype.size == 4 ? quick_float_check<float, uint32_t>(original, decoded, big, spec, needs_exact_check)
                          : quick_float_check<double, uint64_t>(original, decoded, big, spec, needs_exact_check);
  if (needs_exact_check) {
    const Quality exact = assess(original, decoded, dtype, spec);
    // assess() counts the NaN/Inf and fill elements that changed as violations too.
    check.violations = exact.violations - std::min(exact.violations, check.mismatches);
  }
  return check;
}

ChunkCheck check_chunk(const fz::Bytes& original, const fz::Bytes& decoded, const fz::DataType& dtype,
                       const fz::Options& options) {
  if (original.size() != decoded.size()) return check_chunk(original, decoded, dtype, BoundSpec{});  // says so
  // NOA arrives resolved into the chunk's absolute bound: the range is the
  // engine's, never taken again here.
  const fz::ChunkBound rule = fz::chunk_bound(original.data(), original.size(), dtype, options);
  BoundSpec spec;
  spec.known = rule.lossy;  // else every byte must come back
  spec.mode = rule.mode;
  spec.bound = rule.bound;
  if (!rule.exact_bits.empty()) {
    spec.has_fill = true;
    spec.fill_bits = rule.exact_bits[0];
  }
  if (rule.exact_bits.size() > 1) {
    spec.has_missing = true;
    spec.missing_bits = rule.exact_bits[1];
  }
  return check_chunk(original, decoded, dtype, spec);
}

void print_quality(const Quality& q, const BoundSpec& spec, const std::string& label) {
  std::printf("  compare with %s: %s\n", label.c_str(), q.bit_exact ? "bit-exact" : "DIFFERS");
  if (!q.float_stats) {
    if (!q.bit_exact) std::printf("  first differing byte at offset %zu\n", q.first_differing_byte);
    return;
  }
  std::printf("  differing elements %llu of %llu (finite %llu), value range %.6g .. %.6g\n",
              static_cast<unsigned long long>(q.differing), static_cast<unsigned long long>(q.elements),
              static_cast<unsigned long long>(q.finite), q.min_value, q.max_value);
  const double range = q.max_value - q.min_value;
  std::printf("  max abs error %.6g (%.6g of the value range)\n", q.max_abs_error,
              range > 0 ? q.max_abs_error / range : 0.0);
  if (q.any_nonzero)
    std::printf("  max point-wise rel error %.6g (over elements x != 0)\n", q.max_rel_error);
  else
    std::printf("  max point-wise rel error n/a (no element x != 0)\n");
  if (std::isinf(q.psnr))
    std::printf("  PSNR inf dB, NRMSE 0, RMSE 0\n");
  else
    std::printf("  PSNR %.2f dB, NRMSE %.6g, RMSE %.6g\n", q.psnr, q.nrmse, q.rmse);
  if (q.non_finite_mismatch)
    std::printf("  NaN/Inf NOT preserved bit for bit in %llu element(s)\n",
                static_cast<unsigned long long>(q.non_finite_mismatch));
  if (q.bound_checked) {
    std::printf("  bound %s %.6g", mode_words(spec.mode), spec.bound);
    if (spec.mode == fz::ErrorMode::Noa)
      std::printf(" x range %.6g = abs %.6g", q.noa_range, q.abs_bound);
    if (spec.has_fill) std::printf(", fill value excluded and kept exact");
    if (!spec.source.empty()) std::printf(" (%s)", spec.source.c_str());
    std::printf("\n  elements outside the bound: %llu%s\n", static_cast<unsigned long long>(q.violations),
                q.violations ? "  <-- BOUND VIOLATED" : "");
  } else if (!q.bit_exact) {
    std::printf("  elements outside the bound: not checked (no bound known; give --mode/--bound)\n");
  }
}

bool quality_passes(const Quality& q, bool lossy) {
  if (!lossy || !q.float_stats) return q.bit_exact;
  if (q.non_finite_mismatch) return false;
  return !q.bound_checked || q.violations == 0;
}

}  // namespace h5fz
