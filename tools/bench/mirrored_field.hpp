// The device benchmarks' field: a real 3-D field from FZ_DATA mirrored out to
// side^3, element (z, y, x) = field at (m_z(z), m_y(y), m_x(x)) with, for an
// extent n, m(i) = i mod 2n when that is < n, else 2n - 1 - i mod 2n, so the
// joins are smooth and the data is as compressible as the field itself.
// Shared by fz_device_bench and the cuSZp driver (cuszp_device_bench.cu), so
// both compress the same bytes.
//
// The field is wmag91.float (91^3 float32) unless FZ_BENCH_FIELD names
// another float32 file as NAME:ZxYxX (slowest extent first), e.g.
// FZ_BENCH_FIELD=vorticity.128_128_41:41x128x128: issue 31 asks for speed
// figures on more than the one field they were tuned on. Exits with status 2
// when the setting or the file cannot be read.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

struct MirroredField {
  std::string name;  // the file's name, for the table's title
  std::vector<float> values;
};

inline MirroredField mirrored_field(const std::string& dir, size_t side, const char* program) {
  const char* setting = std::getenv("FZ_BENCH_FIELD");
  std::string spec = setting && *setting ? setting : "wmag91.float:91x91x91";
  std::array<size_t, 3> dims{};
  const size_t colon = spec.rfind(':');
  const std::string name = spec.substr(0, colon);
  if (colon == std::string::npos ||
      std::sscanf(spec.c_str() + colon + 1, "%zux%zux%zu", &dims[0], &dims[1], &dims[2]) != 3 ||
      dims[0] == 0 || dims[1] == 0 || dims[2] == 0) {
    std::fprintf(stderr, "%s: FZ_BENCH_FIELD must be NAME:ZxYxX (float32, slowest extent first), not '%s'\n",
                 program, spec.c_str());
    std::exit(2);
  }
  std::ifstream in(dir + "/" + name, std::ios::binary);
  std::vector<float> f(dims[0] * dims[1] * dims[2]);
  if (!in.read(reinterpret_cast<char*>(f.data()), static_cast<std::streamsize>(f.size() * 4))) {
    std::fprintf(stderr, "%s: cannot read %zu float32 values from %s/%s\n", program, f.size(), dir.c_str(),
                 name.c_str());
    std::exit(2);
  }
  auto mirror = [](size_t i, size_t n) { const size_t r = i % (2 * n); return r < n ? r : 2 * n - 1 - r; };
  MirroredField out{name, std::vector<float>(side * side * side)};
  for (size_t z = 0; z < side; ++z)
    for (size_t y = 0; y < side; ++y) {
      const size_t row = (mirror(z, dims[0]) * dims[1] + mirror(y, dims[1])) * dims[2];
      for (size_t x = 0; x < side; ++x) out.values[(z * side + y) * side + x] = f[row + mirror(x, dims[2])];
    }
  return out;
}
