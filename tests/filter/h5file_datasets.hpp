// The datasets of the file-level hostile-chunk harness (h5file_harness.hpp):
// which datasets the in-memory file holds (one per dtype kind, chunk shape
// and preset: specs), their HDF5 file types (make_type) and the smooth,
// real-looking data written through the filter (make_data). Split from the
// harness because this is the fixture, the part one extends to cover a new
// dtype or preset; the harness's cases and checks do not change with it.
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace fz::h5file {

constexpr H5Z_filter_t kFilterId = 32850;

// The harness itself is broken (a dataset cannot be made, the filter cannot
// be registered): no case can run, so stop loudly.
[[noreturn]] inline void die(const std::string& message) {
  std::fprintf(stderr, "h5file harness: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

// How a dataset's bytes are generated, in the file type's own representation
// (reads and writes use the file type as memory type: no conversion).
enum class Gen { Float, Double, Int, Bool, Text, Opaque, Compound, FloatArray };

struct Spec {
  const char* name;
  Gen gen;
  int rank;
  std::array<hsize_t, 3> dims;
  std::array<hsize_t, 3> chunk;
  std::vector<unsigned> cd;  // user layout
  bool fill_marker = false;  // float with a user fill value (-1e34) present in the data
  // With fill_marker: a missing value (-999, cd_values[4..5]) present too, so
  // chunks hold two special values (two chained fillmask stages).
  bool missing_marker = false;
};


inline std::vector<unsigned> lossy(unsigned preset, unsigned mode, double bound) {
  uint64_t bits = 0;
  std::memcpy(&bits, &bound, sizeof bits);
  return {preset, mode, static_cast<unsigned>(bits & 0xFFFFFFFFu), static_cast<unsigned>(bits >> 32)};
}

// lossy() with the missing value's two words (cd[4..5]).
inline std::vector<unsigned> lossy_missing(unsigned preset, unsigned mode, double bound, double missing) {
  std::vector<unsigned> cd = lossy(preset, mode, bound);
  uint64_t bits = 0;
  std::memcpy(&bits, &missing, sizeof bits);
  cd.push_back(static_cast<unsigned>(bits & 0xFFFFFFFFu));
  cd.push_back(static_cast<unsigned>(bits >> 32));
  return cd;
}

struct Dataset {
  Spec spec;
  hid_t id = -1;
  hid_t type = -1;  // the file type, also used as memory type
  size_t element_size = 0;
  size_t chunk_bytes = 0;  // what HDF5 expects a chunk to decode to (edge chunks too)
  std::vector<std::array<hsize_t, 3>> chunk_offsets;
  std::vector<std::vector<uint8_t>> frames;  // the stored frame of each chunk, as written
  std::vector<uint8_t> data;                 // what was written
};

// Every dataset of the file, by name (the name says the type variant).
inline std::vector<Spec> specs() {
  using G = Gen;
  return {
      {"f32_lossless_1d", G::Float, 1, {1000, 1, 1}, {256, 1, 1}, {1}},
      {"f32_pfpl_abs_2d", G::Float, 2, {30, 20, 1}, {16, 8, 1}, lossy(2, 0, 1e-3)},
      {"f32_pfpl_noa_fill_1d", G::Float, 1, {700, 1, 1}, {200, 1, 1}, lossy(2, 1, 1e-3), true},
      {"f32_cuszhi_noa_fill_missing_1d", G::Float, 1, {700, 1, 1}, {200, 1, 1}, lossy_missing(6, 1, 1e-3, -999.0),
       true, true},
      {"f32_fzgpu_noa_3d", G::Float, 3, {9, 10, 11}, {4, 4, 4}, lossy(3, 1, 1e-3)},
      {"f32_fzgpu_abs_1d", G::Float, 1, {600, 1, 1}, {250, 1, 1}, lossy(3, 0, 1e-2)},
      {"f32_cusz_abs_2d", G::Float, 2, {33, 17, 1}, {16, 16, 1}, lossy(4, 0, 1e-2)},
      {"f32_cusz_noa_1d", G::Float, 1, {900, 1, 1}, {512, 1, 1}, lossy(4, 1, 1e-4)},
      {"f64_lossless_3d", G::Double, 3, {5, 6, 7}, {4, 4, 4}, {1}},
      {"f64_pfpl_abs_1d", G::Double, 1, {700, 1, 1}, {128, 1, 1}, lossy(2, 0, 1e-6)},
      {"f64_fzgpu_abs_2d", G::Double, 2, {20, 20, 1}, {8, 16, 1}, lossy(3, 0, 1e-5)},
      {"f64_cusz_noa_3d", G::Double, 3, {6, 6, 6}, {4, 4, 4}, lossy(4, 1, 1e-3)},
      {"f32be_pfpl_abs_1d", G::Float, 1, {500, 1, 1}, {128, 1, 1}, lossy(2, 0, 1e-3)},
      {"f64be_lossless_2d", G::Double, 2, {12, 13, 1}, {8, 8, 1}, {1}},
      {"i8_1d", G::Int, 1, {1000, 1, 1}, {300, 1, 1}, {1}},
      {"i16_2d", G::Int, 2, {40, 30, 1}, {16, 16, 1}, {1}},
      {"i32_fzgpu_3d", G::Int, 3, {8, 8, 8}, {4, 4, 4}, lossy(3, 0, 1.0)},
      {"i64_1d", G::Int, 1, {300, 1, 1}, {64, 1, 1}, {1}},
      {"u8_2d", G::Int, 2, {50, 50, 1}, {32, 32, 1}, {1}},
      {"u16be_1d", G::Int, 1, {300, 1, 1}, {100, 1, 1}, {1}},
      {"bool_16", G::Bool, 1, {16, 1, 1}, {16, 1, 1}, {1}},
      {"bool_big_1d", G::Bool, 1, {100000, 1, 1}, {65536, 1, 1}, {1}},
      {"bool_2d", G::Bool, 2, {50, 40, 1}, {32, 32, 1}, {1}},
      {"s1_1d", G::Text, 1, {1000, 1, 1}, {256, 1, 1}, {1}},
      {"s4_2d", G::Text, 2, {20, 20, 1}, {8, 8, 1}, {1}},
      {"v1_1d", G::Opaque, 1, {2000, 1, 1}, {1024, 1, 1}, {1}},
      {"v1_3d", G::Opaque, 3, {10, 10, 10}, {8, 8, 8}, {1}},
      {"compound_1d", G::Compound, 1, {100, 1, 1}, {32, 1, 1}, {1}},
      {"array_f32x3_1d", G::FloatArray, 1, {100, 1, 1}, {40, 1, 1}, lossy(2, 0, 1e-3)},
  };
}

// The file type for a spec (the name says which variant).
inline hid_t make_type(const Spec& spec) {
  const std::string name = spec.name;
  auto starts = [&](const char* prefix) { return name.rfind(prefix, 0) == 0; };
  if (starts("f32be")) return H5Tcopy(H5T_IEEE_F32BE);
  if (starts("f64be")) return H5Tcopy(H5T_IEEE_F64BE);
  if (starts("f32")) return H5Tcopy(H5T_IEEE_F32LE);
  if (starts("f64")) return H5Tcopy(H5T_IEEE_F64LE);
  if (starts("i8")) return H5Tcopy(H5T_STD_I8LE);
  if (starts("i16")) return H5Tcopy(H5T_STD_I16LE);
  if (starts("i32")) return H5Tcopy(H5T_STD_I32LE);
  if (starts("i64")) return H5Tcopy(H5T_STD_I64LE);
  if (starts("u8")) return H5Tcopy(H5T_STD_U8LE);
  if (starts("u16be")) return H5Tcopy(H5T_STD_U16BE);
  if (starts("bool")) {  // h5py's bool
    const hid_t type = H5Tenum_create(H5T_NATIVE_INT8);
    int8_t value = 0;
    H5Tenum_insert(type, "FALSE", &value);
    value = 1;
    H5Tenum_insert(type, "TRUE", &value);
    return type;
  }
  if (starts("s1") || starts("s4")) {  // h5py's fixed-length bytes
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, starts("s1") ? 1 : 4);
    H5Tset_strpad(type, H5T_STR_NULLPAD);
    return type;
  }
  if (starts("v1")) {
    const hid_t type = H5Tcreate(H5T_OPAQUE, 1);
    H5Tset_tag(type, "V1");
    return type;
  }
  if (starts("compound")) {  // packed, as h5py writes a numpy record
    const hid_t type = H5Tcreate(H5T_COMPOUND, 12);
    H5Tinsert(type, "depth", 0, H5T_STD_I32LE);
    H5Tinsert(type, "value", 4, H5T_IEEE_F64LE);
    return type;
  }
  if (starts("array")) {
    const hsize_t n = 3;
    return H5Tarray_create2(H5T_IEEE_F32LE, 1, &n);
  }
  die(std::string("no type for ") + spec.name);
}
// Smooth fields with a little noise, ramps, runs, text: what real chunks
// look like, so lossy presets take their real (non-raw) paths.
inline std::vector<uint8_t> make_data(const Spec& spec, hid_t type, size_t elements) {
  const size_t size = H5Tget_size(type);
  const bool big = H5Tget_class(type) != H5T_COMPOUND && H5Tget_class(type) != H5T_ARRAY &&
                   H5Tget_order(type) == H5T_ORDER_BE;
  std::vector<uint8_t> out(elements * size);
  uint32_t noise = 12345;
  auto rand01 = [&] {
    noise = noise * 1664525u + 1013904223u;
    return (noise >> 8) / double(1u << 24);
  };
  auto field = [&](size_t i) {
    const double x = double(i % 97), y = double(i / 97);
    return 20.0 * std::sin(0.11 * x) * std::cos(0.07 * y) + 0.05 * i / double(elements) + 0.01 * rand01();
  };
  auto put = [&](size_t at, const void* value, size_t bytes) {
    std::memcpy(out.data() + at, value, bytes);
    if (big) std::reverse(out.begin() + at, out.begin() + at + bytes);
  };
  static const char text[] = "sea surface temperature, salinity and chlorophyll a; ";
  for (size_t i = 0; i < elements; ++i) {
    switch (spec.gen) {
      case Gen::Float: {
        float v = static_cast<float>(field(i));
        if (spec.fill_marker && i % 37 == 5) v = -1e34f;
        if (spec.missing_marker && i % 41 == 7) v = -999.0f;
        put(i * size, &v, 4);
        break;
      }
      case Gen::Double: {
        const double v = field(i);
        put(i * size, &v, 8);
        break;
      }
      case Gen::Int: {
        const int64_t v = static_cast<int64_t>(i / 3) + static_cast<int64_t>(5 * rand01()) - 2;
        put(i * size, &v, size);  // little-endian low bytes (wraps for narrow types)
        break;
      }
      case Gen::Bool:
        out[i] = ((i / 7) % 3 == 0) ? 1 : 0;
        break;
      case Gen::Text:
        for (size_t k = 0; k < size; ++k) out[i * size + k] = static_cast<uint8_t>(text[(i * size + k) % (sizeof text - 1)]);
        break;
      case Gen::Opaque:
        out[i] = static_cast<uint8_t>((i * 7) ^ (i >> 5) ^ static_cast<size_t>(rand01() * 4));
        break;
      case Gen::Compound: {
        const int32_t depth = static_cast<int32_t>(i * 10);
        const double value = field(i);
        std::memcpy(out.data() + i * size, &depth, 4);
        std::memcpy(out.data() + i * size + 4, &value, 8);
        break;
      }
      case Gen::FloatArray:
        for (size_t k = 0; k < 3; ++k) {
          const float v = static_cast<float>(field(3 * i + k));
          std::memcpy(out.data() + i * size + 4 * k, &v, 4);
        }
        break;
    }
  }
  return out;
}

}  // namespace fz::h5file
