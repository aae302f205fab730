// The frame-digest matrix shared by frame_digest_test.cpp (CPU) and
// frame_digest_gpu_test.cpp (CUDA): the chunks (blocks of the real fields of
// ../shared/data, ragged and with special values), the cases (every preset of
// the preset table, every mode it honours, three bounds), a 64-bit FNV-1a
// digest of each frame, and the digest file tests/golden/frame_digests.txt
// that pins the encoder's bytes (docs/FORMAT.md, "Frames pinned by digests").
// One matrix for both tests, so the GPU's frames are checked against the very
// lines the CPU wrote.
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/testing/fnv1a.hpp"
#include "common/testing/test_data.hpp"
#include "fz/fz.hpp"

namespace fz::digest {

inline std::string digest_file() { return std::string(FZ_GOLDEN_DIR) + "/frame_digests.txt"; }

inline std::string hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, v);
  return text;
}

// One chunk of the matrix.
struct Chunk {
  std::string name;  // no spaces: it starts every case name
  DataType dtype;
  std::vector<uint64_t> dims;
  Bytes data;
  Bytes fill_value, missing_value;  // empty = none
  double abs_scale = 0;             // ABS bound = level x abs_scale (about the chunk's range); 0: lossless only
};

// The block [begin, begin + extent) of a C-order array of `width`-byte elements.
inline Bytes block(const Bytes& raw, const std::vector<uint64_t>& dims, size_t width,
                   const std::vector<uint64_t>& begin, const std::vector<uint64_t>& extent) {
  std::vector<uint64_t> stride(dims.size(), 1);
  for (size_t a = dims.size() - 1; a > 0; --a) stride[a - 1] = stride[a] * dims[a];
  uint64_t rows = 1;
  for (size_t a = 0; a + 1 < dims.size(); ++a) rows *= extent[a];
  const size_t run = static_cast<size_t>(extent.back()) * width;
  Bytes out;
  out.reserve(static_cast<size_t>(rows) * run);
  for (uint64_t r = 0; r < rows; ++r) {
    uint64_t rest = r, offset = begin.back();
    for (size_t a = dims.size() - 1; a-- > 0;) {
      offset += (begin[a] + rest % extent[a]) * stride[a];
      rest /= extent[a];
    }
    const uint8_t* from = raw.data() + offset * width;
    out.insert(out.end(), from, from + run);
  }
  return out;
}

template <typename T>
std::vector<T> values_of(const Bytes& b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

template <typename T>
Bytes bytes_of(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T>
Bytes one_value(T v) {
  return bytes_of(std::vector<T>{v});
}

// Marks "land" (every element whose fastest index is below `land`) with the
// fill value, and sprinkles the missing value, NaN, infinities and -0.
template <typename T>
Bytes with_special_values(const Bytes& data, uint64_t fastest_extent, uint64_t land, T fill, T missing) {
  std::vector<T> v = values_of<T>(data);
  const T odd[] = {missing, T(NAN), T(INFINITY), T(-INFINITY), T(-0.0)};
  for (size_t i = 0; i < v.size(); ++i) {
    if (i % fastest_extent < land) v[i] = fill;
    else if (i % 101 == 7) v[i] = odd[(i / 101) % 5];
  }
  return bytes_of(v);
}

// The chunks: moderate blocks (a few hundred KiB to 1 MiB) so the whole
// matrix runs in seconds, ASan included. Missing fields throw (the test fails).
inline const std::vector<Chunk>& chunks() {
  static const std::vector<Chunk> all = [] {
    const Bytes wmag = testing::read_field("wmag91.float");
    const Bytes vort = testing::read_field("vorticity.128_128_41");
    const Bytes wide = testing::read_field("999x999.float");
    const Bytes pressure = testing::read_field("pressure.384_384.f64");
    const DataType f32 = DataType::of<float>(), f64 = DataType::of<double>();
    std::vector<Chunk> c;
    c.push_back({"wmag91.64x64x64.f32", f32, {64, 64, 64},
                 block(wmag, {91, 91, 91}, 4, {13, 13, 13}, {64, 64, 64}), {}, {}, 1e2});
    c.push_back({"vorticity.41x64x64.f32", f32, {41, 64, 64},
                 block(vort, {41, 128, 128}, 4, {0, 32, 32}, {41, 64, 64}), {}, {}, 1e-4});
    // The ragged bottom edge of a 2-D field: the last 99 rows, 999 wide.
    c.push_back({"999x999.edge99x999.f32", f32, {99, 999},
                 block(wide, {999, 999}, 4, {900, 0}, {99, 999}), {}, {}, 1e2});
    // Ragged in every axis, with a fill value, a missing value and non-finite elements.
    c.push_back({"wmag91.45x61x37.f32.special", f32, {45, 61, 37},
                 with_special_values<float>(block(wmag, {91, 91, 91}, 4, {20, 11, 40}, {45, 61, 37}), 37, 5,
                                            -1e34f, -999.0f),
                 one_value(-1e34f), one_value(-999.0f), 1e2});
    c.push_back({"pressure.128x384.f64", f64, {128, 384},
                 block(pressure, {384, 384}, 8, {128, 0}, {128, 384}), {}, {}, 1});
    // A 3-D float64 chunk (wmag91 widened) with a fill value and specials.
    {
      std::vector<double> v;
      for (const float x : values_of<float>(block(wmag, {91, 91, 91}, 4, {30, 30, 30}, {40, 40, 40})))
        v.push_back(x);
      c.push_back({"wmag91.40x40x40.f64.special", f64, {40, 40, 40},
                   with_special_values<double>(bytes_of(v), 40, 3, -1e300, 9.96921e36), one_value(-1e300),
                   one_value(9.96921e36), 1e2});
    }
    // Piecewise constant (exactly two values: NOA's range from two values).
    c.push_back({"const.59x32x32.f32", f32, {59, 32, 32}, testing::read_field("const32x32x59.float"), {}, {}, 1});
    // Big-endian float32 (a byte-swap stage first).
    {
      DataType big = f32;
      big.order = ByteOrder::Big;
      Bytes data = block(testing::read_field("vorticity.512_512"), {512, 512}, 4, {128, 128}, {256, 256});
      for (size_t i = 0; i < data.size(); i += 4) std::reverse(data.begin() + i, data.begin() + i + 4);
      c.push_back({"vorticity.256x256.f32be", big, {256, 256}, data, {}, {}, 1e-4});
    }
    // Integer and opaque chunks (lossless only): the fields quantized, and
    // 12-byte records (a byte-transpose stage).
    {
      std::vector<int32_t> v;
      for (const float x : values_of<float>(c[0].data)) v.push_back(static_cast<int32_t>(std::lround(x * 1000)));
      c.push_back({"wmag91.64x64x64.i32", DataType::of<int32_t>(), {64, 64, 64}, bytes_of(v), {}, {}, 0});
    }
    {
      std::vector<uint16_t> v;
      for (const float x : values_of<float>(c[2].data)) v.push_back(static_cast<uint16_t>(std::lround(x * 200)));
      c.push_back({"999x999.edge99x999.u16", DataType::of<uint16_t>(), {99, 999}, bytes_of(v), {}, {}, 0});
    }
    c.push_back({"pressure.128x256.opaque12", DataType{ElementClass::Opaque, 12, ByteOrder::Little}, {128, 256},
                 c[4].data, {}, {}, 0});
    return c;
  }();
  return all;
}

struct Case {
  std::string name;  // "<chunk>/<preset>[/<mode>/<level>]"
  const Chunk* chunk;
  Options options;   // policy left at its defaults: each test sets threads and device
  double level = 0;  // kLevels entry of a lossy case; 0 for a lossless one
};

inline const double kLevels[] = {1e-2, 1e-3, 1e-4};

// Every chunk under every available preset of the table (lossless ones once;
// lossy ones, on float chunks, in every mode they honour at each level).
// A preset or mode added to the table adds cases, which then need digests.
inline std::vector<Case> cases() {
  std::vector<Case> out;
  for (const Chunk& chunk : chunks())
    for (const PresetInfo& preset : preset_table()) {
      if (!preset.available) continue;
      Options o;
      o.preset = preset.id;
      if (!preset.lossy) {
        out.push_back({chunk.name + "/" + preset.name, &chunk, o});
        continue;
      }
      if (chunk.abs_scale == 0) continue;
      o.fill_value = chunk.fill_value;
      o.missing_value = chunk.missing_value;
      for (unsigned m = 0; m <= static_cast<unsigned>(ErrorMode::Rel); ++m) {
        o.mode = static_cast<ErrorMode>(m);
        if (!preset.honours(o.mode)) continue;
        for (const double level : kLevels) {
          o.bound = o.mode == ErrorMode::Abs ? level * chunk.abs_scale : level;
          char bound[32];
          std::snprintf(bound, sizeof bound, "%.0e", level);
          out.push_back({chunk.name + "/" + preset.name + "/" + mode_name(o.mode) + "/" + bound, &chunk, o, level});
        }
      }
    }
  return out;
}

struct Digest {
  uint64_t frame_bytes = 0;
  std::string fnv1a64;
  bool operator==(const Digest& o) const { return frame_bytes == o.frame_bytes && fnv1a64 == o.fnv1a64; }
  bool operator!=(const Digest& o) const { return !(*this == o); }
};

inline Digest digest_of(const Bytes& frame) {
  return {frame.size(), hex64(testing::fnv1a64(frame.data(), frame.size()))};
}

// The file: '#' comments, then "<case> <frame bytes> <fnv1a64 hex>" per line,
// in case order. Throws if it is missing or a line is malformed or repeated.
inline std::vector<std::pair<std::string, Digest>> read_digests() {
  std::ifstream in(digest_file());
  if (!in) throw std::runtime_error("missing " + digest_file());
  std::vector<std::pair<std::string, Digest>> lines;
  std::map<std::string, int> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, extra;
    Digest d;
    if (!(fields >> name >> d.frame_bytes >> d.fnv1a64) || (fields >> extra) || d.fnv1a64.size() != 16)
      throw std::runtime_error(digest_file() + ":" + std::to_string(number) + ": malformed line: " + line);
    if (seen[name]++) throw std::runtime_error(digest_file() + ":" + std::to_string(number) + ": " + name + " twice");
    lines.emplace_back(name, d);
  }
  return lines;
}

inline void write_digests(const std::vector<std::pair<std::string, Digest>>& lines) {
  std::ofstream out(digest_file());
  out << "# Frame digests: the encoder's bytes, pinned (docs/FORMAT.md, \"Frames pinned by digests\").\n"
         "# Written by FZ_UPDATE_DIGESTS=1 frame_digest_test from the cases of tests/engine/frame_digests.hpp;\n"
         "# checked by frame_digest_test (CPU, 1 and all threads) and frame_digest_gpu_test (CUDA).\n"
         "# A change here is a change of the format's bytes: it comes with docs/FORMAT.md and a note of why.\n"
         "# case  frame_bytes  fnv1a64\n";
  for (const auto& [name, d] : lines) out << name << ' ' << d.frame_bytes << ' ' << d.fnv1a64 << '\n';
  if (!out) throw std::runtime_error("cannot write " + digest_file());
}

// What to do when bytes differ, for every failure message.
inline std::string regenerate_advice() {
  return "The encoder's bytes changed. If that is a bug, fix it. If it is deliberate, regenerate the digests\n"
         "with `FZ_UPDATE_DIGESTS=1 <build>/tests/frame_digest_test` (CPU build) and commit\n" +
         digest_file() +
         " in the same commit as the docs/FORMAT.md change that describes the new bytes, with a note of why\n"
         "they changed (docs/FORMAT.md, \"Frames pinned by digests\"). The GPU must then give the same digests.\n";
}

}  // namespace fz::digest
