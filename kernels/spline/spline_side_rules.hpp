// What the spline stage decides once per chunk and writes to its side stream
// (spline.hpp states the format): the tuning's sample of tiles, the outlier
// index width, the side stream's byte layout, what a valid config is, and
// the per-level steps. Split from spline_rules.hpp (which includes it):
// these are per-chunk host decisions, where the other rules are per tile or
// per element. The GPU's host dispatch calls the same functions
// (encode_cuda.cu, decode_cuda.cu); sample_count, sample_tile,
// index_width_of and SideLayout::values_at are also device code.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "common/float_state.hpp"
#include "common/host_device.hpp"
#include "spline/spline.hpp"  // Config
#include "spline/spline_grid_rules.hpp"

namespace fz::spline::rules {

// Tuning::kRatioFirst's sample (spline.hpp): S = min(ceil(tiles / 16), 256)
// tiles, sample j being tile (j * 2654435761) mod tiles. A multiplicative
// stride spreads the sample over the chunk whatever its shape (a plain
// "every 16th tile" hits one column of tiles when a row holds a multiple of
// 16 of them). The cap bounds the tuning's cost for chunks above 64 MiB
// (float32 in 3-D), where it took a fifth of the GPU's time (512 MiB, 2048
// sample tiles: 0.84 of 4.35 ms on the H100; 0.26 ms with 512) to choose a
// few flags that 256 tiles (a million points) choose as well; smaller chunks
// are not affected.
constexpr unsigned kFlagChoices = 6;  // flags 0..5: both axis orders x three interpolations
constexpr size_t kMaxSampleTiles = 256;
FZ_HOST_DEVICE inline size_t sample_count(size_t tile_count) {
  const size_t s = (tile_count + 15) / 16;
  return s < kMaxSampleTiles ? s : kMaxSampleTiles;
}
FZ_HOST_DEVICE inline size_t sample_tile(size_t j, size_t tile_count) {
  return static_cast<size_t>((static_cast<uint64_t>(j) * uint64_t{2654435761u}) % tile_count);
}

// Outlier indices are u32 when N <= 2^32, else u64 (spline.hpp).
FZ_HOST_DEVICE inline size_t index_width_of(size_t n) { return n <= (uint64_t{1} << 32) ? 4 : 8; }

// Byte offsets of the side stream's parts (spline.hpp): u8 rank, u8 L,
// u32 radius, L x (u8 flags, step), anchors, u64 K, indices, values. With
// coarse levels L counts them too (extra_levels = C) and the anchors are the
// root alone (anchor_count 1; spline_coarse_rules.hpp, side_level_count and
// stored_anchor_count).
struct SideLayout {
  size_t levels_at = 6;
  size_t level_bytes = 0;  // 1 + W
  size_t anchors_at = 0;
  size_t count_at = 0;
  size_t indices_at = 0;  // count_at + 8
  FZ_HOST_DEVICE size_t values_at(size_t outliers, size_t index_width) const {
    return indices_at + outliers * index_width;
  }
};
inline SideLayout side_layout(unsigned rank, unsigned width, size_t anchor_count, unsigned extra_levels = 0) {
  SideLayout s;
  s.level_bytes = 1 + width;
  s.anchors_at = s.levels_at + (level_count(rank) + extra_levels) * s.level_bytes;
  s.count_at = s.anchors_at + anchor_count * width;
  s.indices_at = s.count_at + 8;
  return s;
}

// Why encode refuses a config, as its UsageError's message; nullptr when it is valid.
inline const char* config_problem(const Config& c) {
  if (c.width != 4 && c.width != 8) return "spline: width must be 4 or 8";
  if (c.code_bytes != 1 && c.code_bytes != 2) return "spline: code_bytes must be 1 or 2";
  if (c.radius < 1 || c.radius > max_radius(c.code_bytes)) return "spline: radius must be in [1, 128] for 1-byte codes, [1, 32768] for 2";
  if (!(c.alpha >= 1) || !std::isfinite(c.alpha)) return "spline: alpha must be >= 1 and finite";
  if (!(c.beta >= 1) || !std::isfinite(c.beta)) return "spline: beta must be >= 1 and finite";
  if (c.tuning != Tuning::kOff && c.tuning != Tuning::kRatioFirst) return "spline: unknown tuning";
  if (c.code_form != CodeForm::kOffset && c.code_form != CodeForm::kSigned && c.code_form != CodeForm::kZigzag)
    return "spline: unknown code form";
  return nullptr;
}

// Every step must be a positive, normal, finite value of T (the decoder's check).
template <typename T>
bool step_is_valid(T step) {
  return step >= std::numeric_limits<T>::min() && step <= std::numeric_limits<T>::max();
}

// The per-level steps, steps[l] for level l (0 finest): 2 * eb / min(alpha^l,
// beta) in double, clamped to [smallest normal, largest finite] of T, then
// rounded toward zero into T (so a step never exceeds 2 * eb unless clamped
// up). The clamp keeps every step positive, normal and finite: a step clamped
// up to the smallest normal only makes more elements fail the strict check
// (outliers), never breaks the bound. Host only; the steps travel in the side
// stream, so the decoder never recomputes them.
template <typename T>
void level_steps(double eb, double alpha, double beta, unsigned levels, T* steps) {
  FloatStateGuard guard;
  double power = 1;
  for (unsigned l = 0; l < levels; ++l) {
    const double divisor = power < beta ? power : beta;
    double raw = eb / divisor * 2;
    const double top = static_cast<double>(std::numeric_limits<T>::max());
    const double bottom = static_cast<double>(std::numeric_limits<T>::min());
    if (!(raw <= top)) raw = top;
    if (raw < bottom) raw = bottom;
    T step = static_cast<T>(raw);
    if (static_cast<double>(step) > raw) step = std::nextafter(step, T(0));
    steps[l] = step;
    power *= alpha;
  }
}

}  // namespace fz::spline::rules
