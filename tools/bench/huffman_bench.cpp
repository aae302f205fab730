// Huffman alone, on what the cusz preset feeds it: 1-D Lorenzo codes of each
// real field at bounds of 1e-2, 1e-3 and 1e-4 x its value range, centred on 512
// and clamped into [1, 1023] (cusz's radius; code 0 marks outliers there),
// coded with the preset's config {1024, 16, 16384}. Prints the best-of-N encode
// and decode speeds on one thread, in MB/s of u16 symbols, after checking that
// the round trip is exact. With --chunk N the codes are cut into streams of N
// symbols, each coded on its own, as small HDF5 chunks are (h5py's default
// chunks give 6348 symbols for wmag91, 7875 for 999x999): this measures the
// fixed cost per stream.
//   fz_huffman_bench [--data DIR] [--reps N] [--chunk N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "huffman/huffman.hpp"

namespace {

using fz::Bytes;

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing " + path);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<double> values(const Bytes& raw, unsigned width) {
  std::vector<double> x(raw.size() / width);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = width == 4 ? static_cast<double>(fz::load_le<float>(raw.data() + 4 * i)) : fz::load_le<double>(raw.data() + 8 * i);
  }
  return x;
}

Bytes lorenzo_codes(const std::vector<double>& x, double relative_bound) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  const double eb = std::max(relative_bound * (*hi - *lo), 1e-30);
  Bytes codes(2 * x.size());
  double previous = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double q = std::round((x[i] - previous) / (2 * eb));
    fz::store_le<uint16_t>(codes.data() + 2 * i, static_cast<uint16_t>(std::clamp(q + 512, 1.0, 1023.0)));
    previous = x[i];
  }
  return codes;
}

template <typename F>
double best_seconds(int reps, F&& run) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = FZ_DEFAULT_DATA_DIR;
  int reps = 15;
  size_t chunk = 0;  // symbols per stream; 0: the whole field is one stream
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--data") == 0) data = argv[i + 1];
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--chunk") == 0) chunk = std::strtoull(argv[i + 1], nullptr, 10);
  }
  struct Field {
    const char* name;
    unsigned width;
  };
  const Field fields[] = {{"vorticity.128_128_41", 4}, {"vorticity.512_512", 4}, {"wmag91.float", 4},
                          {"999x999.float", 4},        {"const32x32x59.float", 4}, {"pressure.384_384.f64", 8}};
  const fz::huffman::Config config{1024, 16, 16384};
  std::printf("| field | bound | bits/symbol | encode MB/s | decode MB/s |\n|---|---:|---:|---:|---:|\n");
  for (const Field& f : fields) {
    const std::vector<double> x = values(read_file(data + "/" + f.name), f.width);
    for (double bound : {1e-2, 1e-3, 1e-4}) {
      const Bytes codes = lorenzo_codes(x, bound);
      const size_t per = chunk == 0 ? codes.size() : 2 * chunk;  // bytes of symbols per stream
      std::vector<Bytes> coded((codes.size() + per - 1) / per);
      Bytes decoded, round_trip;
      const auto part = [&](size_t k) {
        return fz::ByteSpan(codes.data() + k * per, std::min(per, codes.size() - k * per));
      };
      const double enc = best_seconds(reps, [&] {
        for (size_t k = 0; k < coded.size(); ++k) fz::huffman::encode(part(k), config, coded[k]);
      });
      const double dec = best_seconds(reps, [&] {
        for (size_t k = 0; k < coded.size(); ++k) fz::huffman::decode(coded[k], decoded, per);
      });
      size_t coded_bytes = 0;
      for (size_t k = 0; k < coded.size(); ++k) {
        fz::huffman::decode(coded[k], decoded, per);
        round_trip.insert(round_trip.end(), decoded.begin(), decoded.end());
        coded_bytes += coded[k].size();
      }
      if (round_trip != codes) throw std::runtime_error(std::string("round trip differs on ") + f.name);
      const double mb = static_cast<double>(codes.size()) / 1e6;
      std::printf("| %s | %.0e | %.2f | %.0f | %.0f |\n", f.name, bound, 8.0 * coded_bytes / (codes.size() / 2),
                  mb / enc, mb / dec);
    }
  }
  return 0;
}
