// How the lossless preset's chain was chosen: each candidate chain of stages,
// run straight on the kernels over every real field (one chunk per field),
// prints its ratio. The preset uses the best column-wise winner
// (engine/src/presets.cpp); docs/PERFORMANCE.md records the table.
//   fz_lossless_chains [--data DIR]
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "bitshuffle/bitshuffle.hpp"
#include "diffnb/diffnb.hpp"
#include "rre/rre.hpp"
#include "rze/rze.hpp"
#include "tcms/tcms.hpp"

namespace {

using fz::Bytes;

struct Field {
  const char* name;
  unsigned width;  // element size of the field
};

struct Chain {
  const char* name;
  std::function<Bytes(const Bytes&, unsigned)> run;
};

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing " + path);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Floats viewed as integers whose order follows the values (sign-magnitude to
// two's-complement-like order), to test whether differences gain from it.
Bytes monotone(const Bytes& in, unsigned w) {
  Bytes out = in;
  for (size_t i = 0; i + w <= out.size(); i += w) {
    const bool negative = out[i + w - 1] & 0x80;
    for (unsigned k = 0; k < w; ++k) out[i + k] = negative ? static_cast<uint8_t>(~out[i + k]) : out[i + k];
    if (!negative) out[i + w - 1] |= 0x80;
  }
  return out;
}

Bytes diff_shuffle(const Bytes& in, unsigned w) {
  Bytes d, s;
  fz::diffnb::encode(in, w, d);
  fz::bitshuffle::encode(d, w, s);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = FZ_DEFAULT_DATA_DIR;
  if (const char* env = std::getenv("FZ_DATA")) data = env;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--data") == 0) data = argv[i + 1];

  const std::vector<Field> fields = {{"vorticity.128_128_41", 4}, {"vorticity.512_512", 4}, {"wmag91.float", 4},
                                     {"999x999.float", 4},        {"const32x32x59.float", 4}, {"pressure.384_384.f64", 8}};
  const std::vector<Chain> chains = {
      {"bitshuffle(w) > rze(1)", [](const Bytes& in, unsigned w) { Bytes s, o; fz::bitshuffle::encode(in, w, s); fz::rze::encode(s, 1, o); return o; }},
      {"diffnb(w) > bitshuffle(w) > rze(1)", [](const Bytes& in, unsigned w) { Bytes o; fz::rze::encode(diff_shuffle(in, w), 1, o); return o; }},
      {"diffnb(w) > bitshuffle(w) > rre(1)", [](const Bytes& in, unsigned w) { Bytes o; fz::rre::encode(diff_shuffle(in, w), 1, o); return o; }},
      {"diffnb(w) > bitshuffle(w) > rze(2)", [](const Bytes& in, unsigned w) { Bytes o; fz::rze::encode(diff_shuffle(in, w), 2, o); return o; }},
      {"diffnb(w) > bitshuffle(w) > rze(4)", [](const Bytes& in, unsigned w) { Bytes o; fz::rze::encode(diff_shuffle(in, w), 4, o); return o; }},
      {"diffnb(w) > bitshuffle(w) > rze(1) > rze(1)", [](const Bytes& in, unsigned w) { Bytes a, b; fz::rze::encode(diff_shuffle(in, w), 1, a); fz::rze::encode(a, 1, b); return b; }},
      {"monotone > diffnb(w) > bitshuffle(w) > rze(1)", [](const Bytes& in, unsigned w) { Bytes o; fz::rze::encode(diff_shuffle(monotone(in, w), w), 1, o); return o; }},
      {"diffnb(1) > bitshuffle(1) > rze(1) (bytes)", [](const Bytes& in, unsigned) { Bytes o; fz::rze::encode(diff_shuffle(in, 1), 1, o); return o; }},
  };

  std::printf("lossless chain candidates: ratio per real field (whole field, one chunk; w = element size)\n\n");
  std::printf("| chain |");
  for (const auto& f : fields) std::printf(" %s |", f.name);
  std::printf("\n|---|");
  for (size_t i = 0; i < fields.size(); ++i) std::printf("---:|");
  std::printf("\n");
  std::vector<Bytes> inputs;
  for (const auto& f : fields) inputs.push_back(read_file(data + "/" + f.name));
  for (const auto& c : chains) {
    std::printf("| %s |", c.name);
    for (size_t i = 0; i < fields.size(); ++i)
      std::printf(" %.3f |", double(inputs[i].size()) / double(c.run(inputs[i], fields[i].width).size()));
    std::printf("\n");
  }
  return 0;
}
