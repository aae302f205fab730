// Writes the golden corpus of this format version: frames plus the exact bytes
// they must decode to. Run once per released format version; every later
// version must decode every committed corpus bit-exactly (golden_test.cpp).
//   fz_make_golden <out_dir> <data_dir>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "fz/fz.hpp"

namespace {

void write_file(const std::string& path, const fz::Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

fz::Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing " + path);
  return fz::Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Cuts a sub-block (slow..fast extents `sub`) out of a C-order array.
fz::Bytes sub_block(const fz::Bytes& all, const std::vector<uint64_t>& dims, const std::vector<uint64_t>& sub,
                    unsigned elem) {
  fz::Bytes out;
  const uint64_t ny = dims[1], nx = dims[2];
  for (uint64_t z = 0; z < sub[0]; ++z)
    for (uint64_t y = 0; y < sub[1]; ++y) {
      const size_t at = ((z * ny + y) * nx) * elem;
      out.insert(out.end(), all.begin() + at, all.begin() + at + sub[2] * elem);
    }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <out_dir> <data_dir>\n", argv[0]);
    return 2;
  }
  const std::string out = argv[1], data = argv[2];
  std::ofstream manifest(out + "/MANIFEST");
  manifest << "# name element_class element_size byte_order dims...  (written by fz_make_golden, H5Z-FZ "
           << fz::version() << ")\n";
  // Lossy frames are kept with what they decoded to when written: a later
  // version must reproduce those bytes exactly.
  auto add = [&](const std::string& name, const fz::Bytes& raw, fz::DataType t, std::vector<uint64_t> dims,
                 const fz::Options& options = fz::Options{}) {
    const fz::Bytes frame = fz::compress(raw.data(), raw.size(), t, dims, options);
    write_file(out + "/" + name + ".fzm", frame);
    write_file(out + "/" + name + ".raw", fz::decompress(frame.data(), frame.size()).data);
    manifest << name << ' ' << int(t.element_class) << ' ' << t.size << ' ' << int(t.order);
    for (auto d : dims) manifest << ' ' << d;
    manifest << '\n';
    std::printf("%-28s %8zu -> %8zu bytes\n", name.c_str(), raw.size(), frame.size());
  };

  const fz::Bytes wmag = read_file(data + "/wmag91.float");
  add("wmag_f32_24x24x24", sub_block(wmag, {91, 91, 91}, {24, 24, 24}, 4), fz::DataType::of<float>(), {24, 24, 24});
  const fz::Bytes pressure = read_file(data + "/pressure.384_384.f64");
  add("pressure_f64_64x64", sub_block(pressure, {1, 384, 384}, {1, 64, 64}, 8), fz::DataType::of<double>(), {64, 64});

  std::mt19937_64 rng(2026);
  fz::Bytes i16be;
  for (int i = 0; i < 5000; ++i) {
    const int16_t v = static_cast<int16_t>(1000 * std::sin(i * 0.003) + (rng() % 7));
    i16be.push_back(static_cast<uint8_t>(uint16_t(v) >> 8));
    i16be.push_back(static_cast<uint8_t>(v));
  }
  add("int16_be_5000", i16be, {fz::ElementClass::Signed, 2, fz::ByteOrder::Big}, {5000});
  fz::Bytes u64;
  for (uint64_t i = 0; i < 3000; ++i)
    for (int k = 0; k < 8; ++k) u64.push_back(static_cast<uint8_t>((i * i * 977) >> (8 * k)));
  add("uint64_3000", u64, fz::DataType::of<uint64_t>(), {30, 100});
  fz::Bytes compound;  // {int32 id; float x; double y} = 16 bytes, as h5py packs it
  for (int i = 0; i < 1000; ++i) {
    const int32_t id = i;
    const float x = float(i) * 0.5f;
    const double y = std::cos(i * 0.01);
    compound.insert(compound.end(), reinterpret_cast<const uint8_t*>(&id), reinterpret_cast<const uint8_t*>(&id) + 4);
    compound.insert(compound.end(), reinterpret_cast<const uint8_t*>(&x), reinterpret_cast<const uint8_t*>(&x) + 4);
    compound.insert(compound.end(), reinterpret_cast<const uint8_t*>(&y), reinterpret_cast<const uint8_t*>(&y) + 8);
  }
  add("compound16_1000", compound, {fz::ElementClass::Opaque, 16, fz::ByteOrder::Little}, {1000});
  fz::Bytes odd(12 * 333);
  for (size_t i = 0; i < odd.size(); ++i) odd[i] = static_cast<uint8_t>((i % 12) * 3 + (i / 97));
  add("opaque12_333", odd, {fz::ElementClass::Opaque, 12, fz::ByteOrder::Little}, {333});
  fz::Bytes noise(4000);
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  add("raw_noise_u8_4000", noise, fz::DataType::of<uint8_t>(), {4000});
  add("empty_f32", {}, fz::DataType::of<float>(), {0});
  fz::Bytes half;  // float16 bits of a ramp
  for (int i = 0; i < 2048; ++i) {
    const uint16_t h = static_cast<uint16_t>(0x3C00 + i);
    half.push_back(static_cast<uint8_t>(h));
    half.push_back(static_cast<uint8_t>(h >> 8));
  }
  add("float16_2048", half, {fz::ElementClass::Float, 2, fz::ByteOrder::Little}, {2, 32, 32});
  auto lossy = [](fz::Preset preset, fz::ErrorMode mode, double bound) {
    fz::Options o;
    o.preset = preset;
    o.mode = mode;
    o.bound = bound;
    return o;
  };
  const fz::Bytes wmag24 = sub_block(wmag, {91, 91, 91}, {24, 24, 24}, 4);
  add("pfpl_noa_f32_24x24x24", wmag24, fz::DataType::of<float>(), {24, 24, 24},
      lossy(fz::Preset::Pfpl, fz::ErrorMode::Noa, 1e-3));
  add("pfpl_rel_f32_24x24x24", wmag24, fz::DataType::of<float>(), {24, 24, 24},
      lossy(fz::Preset::Pfpl, fz::ErrorMode::Rel, 1e-3));
  add("fzgpu_noa_f32_24x24x24", wmag24, fz::DataType::of<float>(), {24, 24, 24},
      lossy(fz::Preset::Fzgpu, fz::ErrorMode::Noa, 1e-3));
  add("cusz_noa_f32_24x24x24", wmag24, fz::DataType::of<float>(), {24, 24, 24},
      lossy(fz::Preset::Cusz, fz::ErrorMode::Noa, 1e-4));
  const fz::Bytes p64 = sub_block(pressure, {1, 384, 384}, {1, 64, 64}, 8);
  add("fzgpu_abs_f64_64x64", p64, fz::DataType::of<double>(), {64, 64}, lossy(fz::Preset::Fzgpu, fz::ErrorMode::Abs, 1e-4));
  add("cusz_abs_f64_64x64", p64, fz::DataType::of<double>(), {64, 64}, lossy(fz::Preset::Cusz, fz::ErrorMode::Abs, 1e-4));
  // The spline presets (stage type 13): both code forms, the three code
  // groups, float32 3-D and float64 2-D, and a ragged 1-D chunk.
  add("cuszhi_tp_noa_f32_24x24x24", wmag24, fz::DataType::of<float>(), {24, 24, 24},
      lossy(fz::Preset::CuszHiTp, fz::ErrorMode::Noa, 1e-3));
  add("cuszhi_cr_noa_f32_24x24x24", wmag24, fz::DataType::of<float>(), {24, 24, 24},
      lossy(fz::Preset::CuszHiCr, fz::ErrorMode::Noa, 1e-3));
  add("cuszhi_cr_abs_f64_64x64", p64, fz::DataType::of<double>(), {64, 64},
      lossy(fz::Preset::CuszHiCr, fz::ErrorMode::Abs, 1e-4));
  fz::Options quality = lossy(fz::Preset::CuszHiTp, fz::ErrorMode::Abs, 1e-4);
  quality.spline_tuning = fz::SplineTuning::kQualityFirst;
  add("cuszhi_tp_abs_quality_f64_64x64", p64, fz::DataType::of<double>(), {64, 64}, quality);
  add("cuszhi_cr_noa_f32_1000", fz::Bytes(wmag.begin(), wmag.begin() + 4 * 1000), fz::DataType::of<float>(),
      {1000}, lossy(fz::Preset::CuszHiCr, fz::ErrorMode::Noa, 1e-2));
  // cuszhi-tp in the zigzag code form (no TCMS stage after the merge).
  add("cuszhi_tp_zigzag_noa_f64_64x64", p64, fz::DataType::of<double>(), {64, 64},
      lossy(fz::Preset::CuszHiTp, fz::ErrorMode::Noa, 1e-3));
  // A land mask (fill value -1e10 over a corner "continent"): the spline
  // reads the fill mask (its config's trailing byte 1) and codes land q = 0.
  fz::Bytes land = wmag24;
  const float land_value = -1e10f;
  for (size_t z = 0; z < 24; ++z)
    for (size_t y = 0; y < 24; ++y)
      for (size_t x = 0; x < 24; ++x)
        if (x + y + z / 2 < 20) std::memcpy(land.data() + 4 * ((z * 24 + y) * 24 + x), &land_value, 4);
  for (fz::Preset preset : {fz::Preset::CuszHiTp, fz::Preset::CuszHiCr}) {
    fz::Options o = lossy(preset, fz::ErrorMode::Noa, 1e-3);
    o.fill_value.resize(4);
    std::memcpy(o.fill_value.data(), &land_value, 4);
    add(preset == fz::Preset::CuszHiTp ? "cuszhi_tp_fill_f32_24x24x24" : "cuszhi_cr_fill_f32_24x24x24", land,
        fz::DataType::of<float>(), {24, 24, 24}, o);
  }
  return 0;
}
