// The device benchmarks' field: the real wmag91 (91^3 float32) mirrored out
// to side^3, element (z, y, x) = wmag91 at (m(z), m(y), m(x)) with m(i) =
// i mod 182 for i mod 182 < 91, else 181 - i mod 182, so the joins are smooth
// and the data is as compressible as the field itself. Shared by
// fz_device_bench and the cuSZp driver (cuszp_device_bench.cu), so both
// compress the same bytes. Exits with status 2 when the file cannot be read.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

inline std::vector<float> mirrored_wmag(const std::string& dir, size_t side, const char* program) {
  std::ifstream in(dir + "/wmag91.float", std::ios::binary);
  std::vector<float> w(91 * 91 * 91);
  if (!in.read(reinterpret_cast<char*>(w.data()), static_cast<std::streamsize>(w.size() * 4))) {
    std::fprintf(stderr, "%s: cannot read %s/wmag91.float\n", program, dir.c_str());
    std::exit(2);
  }
  auto m = [](size_t i) { const size_t r = i % 182; return r < 91 ? r : 181 - r; };
  std::vector<float> out(side * side * side);
  for (size_t z = 0; z < side; ++z)
    for (size_t y = 0; y < side; ++y)
      for (size_t x = 0; x < side; ++x) out[(z * side + y) * side + x] = w[(m(z) * 91 + m(y)) * 91 + m(x)];
  return out;
}
