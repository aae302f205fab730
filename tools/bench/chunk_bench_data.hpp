// fz_chunk_bench's data (wmag91 mirrored into chunks of any size), its
// preset cases and the check of each decoded chunk against its bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "environment.hpp"
#include "fz/fz.hpp"

namespace chunk_bench {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kSide = 91;  // wmag91 is 91 x 91 x 91

// ---- data -------------------------------------------------------------------

class TiledField {
 public:
  explicit TiledField(std::vector<float> cube) : cube_(std::move(cube)) {}

  // The dataset of planes ny x nx, planes [z_begin, z_begin + nz), C order.
  void fill(float* out, uint64_t z_begin, uint64_t nz, uint64_t ny, uint64_t nx) const {
    std::vector<uint64_t> mx(nx);
    for (uint64_t x = 0; x < nx; ++x) mx[x] = mirror(x);
    for (uint64_t z = 0; z < nz; ++z)
      for (uint64_t y = 0; y < ny; ++y) {
        const float* row = cube_.data() + (mirror(z_begin + z) * kSide + mirror(y)) * kSide;
        float* target = out + (z * ny + y) * nx;
        for (uint64_t x = 0; x < nx; ++x) target[x] = row[mx[x]];
      }
  }

 private:
  static uint64_t mirror(uint64_t i) {
    const uint64_t r = i % (2 * kSide);
    return r < kSide ? r : 2 * kSide - 1 - r;
  }
  std::vector<float> cube_;
};

// The shape of a chunk of `floats` elements (see the top of the file).
inline std::vector<uint64_t> chunk_dims(uint64_t floats) {
  if (floats >= 4096 && floats % 4096 == 0) return {floats / 4096, 64, 64};
  if (floats && (floats & (floats - 1)) == 0) {
    int k = 0;
    while ((uint64_t{1} << k) < floats) ++k;
    const int side = k / 3;
    return {uint64_t{1} << (k - 2 * side), uint64_t{1} << side, uint64_t{1} << side};
  }
  return {floats};
}

// `count` consecutive chunks of `chunk_bytes` each, one allocation.
struct Dataset {
  std::vector<float> values;
  std::vector<uint64_t> chunk;  // dims of one chunk
  uint64_t chunk_bytes = 0;
  size_t count = 0;
  const float* chunk_data(size_t i) const { return values.data() + i * (chunk_bytes / 4); }
};

inline Dataset make_dataset(const TiledField& field, uint64_t chunk_bytes, size_t count) {
  Dataset d;
  d.chunk = chunk_dims(chunk_bytes / 4);
  d.chunk_bytes = chunk_bytes;
  d.count = count;
  const uint64_t plane = d.chunk.size() == 3 ? d.chunk[1] * d.chunk[2] : 1;
  const uint64_t nz = chunk_bytes / 4 / plane * count;
  d.values.resize(chunk_bytes / 4 * count);
  if (d.chunk.size() == 3)
    field.fill(d.values.data(), 0, nz, d.chunk[1], d.chunk[2]);
  else
    field.fill(d.values.data(), 0, 1, 1, d.values.size());  // one long row
  return d;
}

// ---- presets and checks ------------------------------------------------------

struct Case {
  std::string label;
  fz::Options options;
};

inline std::vector<Case> known_cases() {
  // The backend and threads come from H5Z_FZ_DEVICE and H5Z_FZ_THREADS, as for the filter.
  const fz::Options& policy = fz::filter::policy_from_environment();
  auto lossy = [&](fz::Preset p, double bound) {
    fz::Options o = policy;
    o.preset = p;
    o.mode = fz::ErrorMode::Noa;
    o.bound = bound;
    return o;
  };
  return {{"lossless", policy},
          {"pfpl", lossy(fz::Preset::Pfpl, 1e-3)},
          {"fzgpu", lossy(fz::Preset::Fzgpu, 1e-3)},
          {"cusz", lossy(fz::Preset::Cusz, 1e-4)}};
}

inline std::string case_text(const Case& c) {
  if (!fz::preset_is_lossy(c.options.preset)) return c.label;
  char text[64];
  std::snprintf(text, sizeof text, "%s %s %g", c.label.c_str(), fz::mode_name(c.options.mode), c.options.bound);
  return text;
}

struct Check {
  double max_error = 0, allowed = 0;
  bool ok = true;
};

// Every element of `decoded` against `original` (n floats).
inline Check check_chunk(const float* original, const float* decoded, size_t n, size_t decoded_bytes,
                  const fz::Options& options) {
  Check c;
  if (decoded_bytes != n * sizeof(float)) {
    c.ok = false;
    return c;
  }
  if (!fz::preset_is_lossy(options.preset)) {
    c.ok = std::memcmp(original, decoded, n * sizeof(float)) == 0;
    if (!c.ok)
      for (size_t i = 0; i < n; ++i) c.max_error = std::max(c.max_error, std::fabs(double(original[i]) - decoded[i]));
    return c;
  }
  c.allowed = options.bound;
  if (options.mode == fz::ErrorMode::Noa) {
    double low = INFINITY, high = -INFINITY;
    for (size_t i = 0; i < n; ++i)
      if (std::isfinite(original[i])) low = std::min<double>(low, original[i]), high = std::max<double>(high, original[i]);
    c.allowed = high >= low ? options.bound * (high - low) : 0;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(original[i])) {
      if (std::memcmp(&original[i], &decoded[i], sizeof(float)) != 0) c.ok = false;
      continue;
    }
    const double error = std::fabs(double(original[i]) - double(decoded[i]));
    if (!(error <= c.allowed)) c.ok = false;  // NaN decoded counts as broken
    c.max_error = std::max(c.max_error, error);
  }
  return c;
}

inline bool read_field(const std::string& path, std::vector<float>& cube) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  cube.resize(kSide * kSide * kSide);
  in.read(reinterpret_cast<char*>(cube.data()), static_cast<std::streamsize>(cube.size() * 4));
  return in.gcount() == static_cast<std::streamsize>(cube.size() * 4) && in.peek() == EOF;
}

}  // namespace chunk_bench
