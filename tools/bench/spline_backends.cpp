// How cuszhi-tp's back end was chosen, and why it stays at 0.80x cuszhi-cr's
// ratio at NOA 1e-2: the spline's codes of every real field (one chunk, the
// presets' spline settings, ratio-first tuning) coded by each candidate
// chain, in bytes of codes plus the side stream, beside cuszhi-cr's coder
// (per-group Huffman -> rze(1)) and the codes' order-0 entropy. Chains on
// bit planes pay for every byte of a plane that holds a one; at 1e-2 three
// codes in four are zero and the rest mostly +-1, so each of the two low
// planes has a one in about 12% of its bits and in 64% of its bytes.
// Prints a markdown table; docs/PERFORMANCE.md records it.
//   fz_spline_backends [--data DIR]
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "bitshuffle/bitshuffle.hpp"
#include "huffman/huffman.hpp"
#include "merge/merge.hpp"
#include "rre/rre.hpp"
#include "rze/rze.hpp"
#include "spline/spline.hpp"
#include "tcms/tcms.hpp"

namespace {

using fz::Bytes;
using fz::ByteSpan;

struct Field {
  const char* name;
  std::vector<size_t> dims;
  unsigned width;
};

Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing " + path);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

double finite_range(const Bytes& raw, unsigned width) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i + width <= raw.size(); i += width) {
    double v;
    if (width == 4) {
      float f;
      std::memcpy(&f, raw.data() + i, 4);
      v = f;
    } else {
      std::memcpy(&v, raw.data() + i, 8);
    }
    if (std::isfinite(v)) lo = std::fmin(lo, v), hi = std::fmax(hi, v);
  }
  return hi - lo;
}

Bytes shuffled(const Bytes& in, unsigned width) {
  Bytes out;
  fz::bitshuffle::encode(in, width, out);
  return out;
}
Bytes zeros_out(const Bytes& in, unsigned word) {
  Bytes out;
  fz::rze::encode(in, word, out);
  return out;
}
Bytes runs_out(const Bytes& in, unsigned word) {
  Bytes out;
  fz::rre::encode(in, word, out);
  return out;
}
Bytes merged(const fz::spline::Streams& s) {
  Bytes out;
  fz::merge::encode({ByteSpan(s.codes[0]), ByteSpan(s.codes[1]), ByteSpan(s.codes[2])}, out);
  return out;
}

// Order-0 entropy of each group's u16 codes, summed, in bytes.
double entropy_bytes(const fz::spline::Streams& s) {
  double bits = 0;
  for (const Bytes& g : s.codes) {
    std::vector<uint64_t> counts(65536, 0);
    const size_t n = g.size() / 2;
    for (size_t i = 0; i < n; ++i) ++counts[g[2 * i] | g[2 * i + 1] << 8];
    for (uint64_t c : counts)
      if (c) bits -= double(c) * std::log2(double(c) / double(n));
  }
  return bits / 8;
}

fz::spline::Streams spline_codes(const Bytes& raw, const Field& f, double eb, unsigned code_bytes, uint32_t radius,
                                 fz::spline::CodeForm form) {
  fz::spline::Config c;
  c.width = f.width;
  c.code_bytes = code_bytes;
  c.radius = radius;
  c.alpha = 1;  // the presets' ratio-first settings (engine/src/presets/cuszhi.cpp)
  c.beta = 1;
  c.tuning = fz::spline::Tuning::kRatioFirst;
  c.code_form = form;
  fz::spline::Streams s;
  fz::spline::encode(raw, f.dims, c, eb, s);
  return s;
}

struct Chain {
  const char* name;
  std::function<size_t(const Bytes& raw, const Field& f, double eb)> bytes;  // codes + side stream
};

}  // namespace

int main(int argc, char** argv) {
  std::string data = FZ_DEFAULT_DATA_DIR;
  if (const char* env = std::getenv("FZ_DATA")) data = env;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--data") == 0) data = argv[i + 1];

  using fz::spline::CodeForm;
  const auto tp_codes = [](const Bytes& raw, const Field& f, double eb) {
    return spline_codes(raw, f, eb, 2, 32768, CodeForm::kZigzag);
  };
  const std::vector<Chain> chains = {
      {"tp: merge > bitshuffle(2) > rze(1) (the preset)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = tp_codes(raw, f, eb);
         return zeros_out(shuffled(merged(s), 2), 1).size() + s.side.size();
       }},
      {"tp: merge > bitshuffle(2) > rze(1) > rze(1)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = tp_codes(raw, f, eb);
         return zeros_out(zeros_out(shuffled(merged(s), 2), 1), 1).size() + s.side.size();
       }},
      {"tp: merge > bitshuffle(2) > rze(2)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = tp_codes(raw, f, eb);
         return zeros_out(shuffled(merged(s), 2), 2).size() + s.side.size();
       }},
      {"tp: merge > bitshuffle(2) > rre(1)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = tp_codes(raw, f, eb);
         return runs_out(shuffled(merged(s), 2), 1).size() + s.side.size();
       }},
      {"tp: each group bitshuffle(2) > rze(1)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = tp_codes(raw, f, eb);
         size_t total = s.side.size();
         for (const Bytes& g : s.codes) total += zeros_out(shuffled(g, 2), 1).size();
         return total;
       }},
      {"issue's: 1-byte signed codes, radius 128 > tcms(1) > bitshuffle(1) > rre(1)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = spline_codes(raw, f, eb, 1, 128, CodeForm::kSigned);
         Bytes folded;
         fz::tcms::encode(merged(s), 1, folded);
         return runs_out(shuffled(folded, 1), 1).size() + s.side.size();
       }},
      {"cr: each group huffman > rze(1) (the preset)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = spline_codes(raw, f, eb, 2, 4096, CodeForm::kOffset);
         size_t total = s.side.size();
         for (unsigned g = 0; g < fz::spline::kCodeGroups; ++g) {
           Bytes coded;
           fz::huffman::encode(s.codes[g], {8192, 16, g == 0 ? 16384u : 4096u}, coded);
           total += zeros_out(coded, 1).size();
         }
         return total;
       }},
      {"order-0 entropy of the tp codes (no coder reaches it)",
       [&](const Bytes& raw, const Field& f, double eb) {
         const auto s = tp_codes(raw, f, eb);
         return static_cast<size_t>(std::ceil(entropy_bytes(s))) + s.side.size();
       }},
  };
  const std::vector<Field> fields = {{"wmag91.float", {91, 91, 91}, 4},
                                     {"999x999.float", {999, 999}, 4},
                                     {"vorticity.128_128_41", {41, 128, 128}, 4},
                                     {"vorticity.512_512", {512, 512}, 4},
                                     {"pressure.384_384.f64", {384, 384}, 8}};
  std::vector<Bytes> inputs;
  for (const auto& f : fields) inputs.push_back(read_file(data + "/" + f.name));

  std::printf("spline codes + side stream, ratio per real field (whole field, one chunk); last column: the\n"
              "geometric mean of the chain's ratio over cuszhi-cr's\n\n");
  for (const double noa : {1e-2, 1e-3, 1e-4}) {
    std::printf("NOA %g\n\n| chain |", noa);
    for (const auto& f : fields) std::printf(" %s |", f.name);
    std::printf(" / cr |\n|---|");
    for (size_t i = 0; i <= fields.size(); ++i) std::printf("---:|");
    std::printf("\n");
    std::vector<std::vector<double>> ratios;
    for (const auto& c : chains) {
      std::vector<double> r;
      for (size_t i = 0; i < fields.size(); ++i) {
        const double eb = noa * finite_range(inputs[i], fields[i].width);
        r.push_back(double(inputs[i].size()) / double(c.bytes(inputs[i], fields[i], eb)));
      }
      ratios.push_back(r);
    }
    const std::vector<double>& cr = ratios[chains.size() - 2];
    for (size_t k = 0; k < chains.size(); ++k) {
      std::printf("| %s |", chains[k].name);
      double log_sum = 0;
      for (size_t i = 0; i < fields.size(); ++i) {
        std::printf(" %.2f |", ratios[k][i]);
        log_sum += std::log(ratios[k][i] / cr[i]);
      }
      std::printf(" %.3f |\n", std::exp(log_sum / double(fields.size())));
    }
    std::printf("\n");
  }
  return 0;
}
