// The ans stage's CPU speed on one thread beside the Huffman stage's it
// replaced in cuszhi-cr (issue 30 item 2): the spline's u16 code groups of the
// real fields, as `fz_code_entropy_bench --dump DIR` writes them
// (<field>.<NOA>.g<group>.codes), each coded by fz::ans (A = 8192, M = 14,
// S = 8192), by the interleaved ANS (stage type 15, A = 8192, M = 14) and by
// fz::huffman (cuszhi-cr's settings) and decoded back; per
// bound, thread CPU time, best of --reps per group, MB/s of u16 codes (the sum
// of the groups' bytes over the sum of their best times). Also prints an
// FNV-1a digest of the ans and of the ansi streams per bound, so that a change to the coder
// can be checked to keep every byte. Links only fz_kernels. Not a test.
//   fz_code_entropy_bench --dump DIR; fz_ans_speed_bench --codes DIR [--reps N]
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "ans/ans.hpp"
#include "ans/interleaved.hpp"
#include "huffman/huffman.hpp"

namespace {

constexpr uint32_t kAlphabet = 8192;  // cuszhi-cr's radius 4096, both ways

double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

template <typename Fn>
double best_seconds(int reps, Fn fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double start = thread_seconds();
    fn();
    best = std::min(best, thread_seconds() - start);
  }
  return best;
}

uint64_t fnv1a(uint64_t h, const fz::Bytes& b) {
  for (const uint8_t c : b) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::vector<std::string> files_of(const std::string& dir, const std::string& tag) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.find(tag) != std::string::npos && name.size() > 6 && name.compare(name.size() - 6, 6, ".codes") == 0) {
        names.push_back(dir + "/" + name);
      }
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int reps = 15;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--codes") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::max(1, std::atoi(argv[i + 1]));
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: fz_ans_speed_bench --codes DIR [--reps N] (DIR from fz_code_entropy_bench --dump)\n");
    return 2;
  }
  std::printf("one thread, thread CPU time, best of %d per group; MB/s of u16 codes\n\n"
              "| NOA | groups | codes MB | ans enc | ans dec | ansi enc | ansi dec | huff enc | huff dec | ans digest | ansi digest |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n",
              reps);
  const fz::ans::Config config{kAlphabet, 14, 8192};
  const fz::ans::InterleavedConfig iconfig{kAlphabet, 14};
  for (const char* noa : {"0.01", "0.001", "0.0001"}) {
    const std::vector<std::string> names = files_of(dir, std::string(".") + noa + ".g");
    double bytes = 0, ans_enc = 0, ans_dec = 0, ansi_enc = 0, ansi_dec = 0, huff_enc = 0, huff_dec = 0;
    uint64_t digest = 0xcbf29ce484222325ull, idigest = digest;
    for (const std::string& name : names) {
      std::ifstream in(name, std::ios::binary);
      const fz::Bytes codes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (codes.empty()) continue;
      const unsigned group = unsigned(name[name.size() - 7] - '0');
      bytes += double(codes.size());
      fz::Bytes a, back, h;
      ans_enc += best_seconds(reps, [&] { fz::ans::encode(codes, config, a); });
      ans_dec += best_seconds(reps, [&] { fz::ans::decode(a, config, back, codes.size()); });
      if (back != codes) throw std::runtime_error("ans round trip differs: " + name);
      digest = fnv1a(digest, a);
      ansi_enc += best_seconds(reps, [&] { fz::ans::encode_interleaved(codes, iconfig, a); });
      ansi_dec += best_seconds(reps, [&] { fz::ans::decode_interleaved(a, iconfig, back, codes.size()); });
      if (back != codes) throw std::runtime_error("ansi round trip differs: " + name);
      idigest = fnv1a(idigest, a);
      const fz::huffman::Config hc{kAlphabet, 16, group == 0 ? 16384u : 4096u};
      huff_enc += best_seconds(reps, [&] { fz::huffman::encode(codes, hc, h); });
      huff_dec += best_seconds(reps, [&] { fz::huffman::decode(h, back, codes.size()); });
    }
    std::printf("| %s | %zu | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %016llx | %016llx |\n", noa, names.size(),
                bytes / 1e6, bytes / 1e6 / ans_enc, bytes / 1e6 / ans_dec, bytes / 1e6 / ansi_enc, bytes / 1e6 / ansi_dec,
                bytes / 1e6 / huff_enc, bytes / 1e6 / huff_dec, static_cast<unsigned long long>(digest),
                static_cast<unsigned long long>(idigest));
  }
  return 0;
}
