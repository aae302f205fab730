// Which back end for cuszhi-cr's low-entropy codes (issue 30 item 2): the
// spline's u16 codes of every real field (whole field as one chunk, the
// preset's spline settings: radius 4096, offset form, ratio-first, alpha =
// beta = 1, at the absolute bound fz::chunk_bound gives for NOA), measured
// against what cuszhi-cr stores for them today (per code group Huffman ->
// rze(1)) and against bounds for other coders, computed here, per group as
// today (each group its own tables):
//   ans      real bytes of the ans stage (zero-run tokens, then static rANS
//            in lanes; kernels/ans/ans.hpp) at A = 8192, M = 14, S = 8192;
//   ansi     real bytes of the interleaved ANS stage (stage type 15,
//            kernels/ans/interleaved.hpp) at A = 8192, M = 14, and its ratio
//            to ans; "100k": both on the first 100000 codes of each group
//            (a small chunk: the fixed costs of tables, records and states);
//   H0+tab   order-0 entropy + a table of 12-bit normalised frequencies
//            (static rANS/tANS per group);
//   zrun+tab zero-run coding: the run of the most frequent code ahead of
//            every other code, from its own table, the other codes from a
//            second (run-length then ANS);
//   zrun>huff the same tokens through this project's Huffman stage (real
//            bytes: what zero-run ahead of today's Huffman would store);
//   o1b+tab  order-1 on a bucketed context: |previous code - mode| and
//            |code before it - mode| clamped to 0..3 (16 contexts), one table
//            each;
//   o1+tab   order-1 on the previous code itself, one table per context seen
//            (the tables are what make it lose).
//   H0       order-0 entropy without a table (no static coder reaches it);
//   ad0/ad1b an adaptive arithmetic/rANS coder (no table; escape for a new
//            symbol), order 0 and on the 16 bucketed contexts.
// A table costs, per used symbol, 12 bits of frequency plus the symbol's id:
// a bitmap over the 8192-symbol alphabet or 13 bits each, whichever is less.
// An adaptive coder pays no table but a learning cost of the same order.
// Huffman followed by Zstd (SZ3's chain) needs libzstd's header, which this
// project does not depend on: --dump DIR writes each Huffman stream (.huff) so that
// the zstd CLI can be run on them by hand, and the raw u16 codes (.codes).
// Prints a markdown table per bound and the geometric mean over fields of
// (best estimate / today's Huffman bytes). --sweep instead prints, per bound,
// the geo-mean over fields of ans / today's for M in 12..16 (12 is
// below 2^M >= A: a dash) and S in 2048..16384 (the choice of the ans stage's config). Not a test.
//   fz_code_entropy_bench [--data DIR] [--dump DIR] [--sweep]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "ans/ans.hpp"
#include "ans/interleaved.hpp"
#include "fz/fz.hpp"
#include "huffman/huffman.hpp"
#include "rze/rze.hpp"
#include "spline/spline.hpp"

namespace {

constexpr uint32_t kRadius = 4096;  // cuszhi-cr's (engine/src/presets/cuszhi.cpp)
constexpr uint32_t kAlphabet = 2 * kRadius;
constexpr size_t kPrefixCodes = 100000;  // the "100k" columns: a small chunk's codes

struct Field {
  const char* name;
  std::vector<uint64_t> dims;  // slowest first
  unsigned width;
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<uint16_t> symbols(const fz::Bytes& g) {
  std::vector<uint16_t> s(g.size() / 2);
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint16_t>(g[2 * i] | g[2 * i + 1] << 8);
  return s;
}

// Bytes of a frequency table for `used` symbols out of `alphabet`.
double table_bytes(size_t used, size_t alphabet) {
  if (used <= 1) return 2;  // a single symbol: its id
  const double ids = std::min<double>(double(alphabet), 13.0 * double(used));
  return (12.0 * double(used) + ids) / 8;
}

// Order-0 entropy of a histogram in bytes, plus its table unless told not.
double coded_bytes(const std::map<uint32_t, uint64_t>& hist, size_t alphabet, bool with_table = true) {
  uint64_t n = 0;
  for (const auto& [s, c] : hist) n += c;
  double bits = 0;
  for (const auto& [s, c] : hist) bits -= double(c) * std::log2(double(c) / double(n));
  return bits / 8 + (with_table ? table_bytes(hist.size(), alphabet) : 0);
}

uint16_t mode_of(const std::vector<uint16_t>& s) {
  std::vector<uint64_t> counts(65536, 0);
  for (uint16_t v : s) ++counts[v];
  return static_cast<uint16_t>(std::max_element(counts.begin(), counts.end()) - counts.begin());
}

double order0(const std::vector<uint16_t>& s, bool with_table = true) {
  std::map<uint32_t, uint64_t> h;
  for (uint16_t v : s) ++h[v];
  return coded_bytes(h, kAlphabet, with_table);
}

// Zero-run coding as JPEG and cuSZ's RLE do it: before every other code (and
// at the end) the length L >= 0 of the run of the mode ahead of it, from its
// own table (L < 32 itself, longer floor(log2 L) + that many raw bits); the
// other codes from a second table. estimate: the two order-0 entropies with
// their tables; huffman: both token streams through this project's Huffman
// stage (real bytes, its own tables and block index).
constexpr uint32_t kShortRun = 32;
struct ZeroRuns {
  double estimate = 0, huffman = 0;
};
ZeroRuns zero_runs(const std::vector<uint16_t>& s, uint16_t mode) {
  std::map<uint32_t, uint64_t> runs, others;
  fz::Bytes run_tokens, other_tokens;
  const auto put = [](fz::Bytes& out, uint32_t v) { out.push_back(uint8_t(v)), out.push_back(uint8_t(v >> 8)); };
  double raw_bits = 0;
  size_t run = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == mode) {
      ++run;
      continue;
    }
    uint32_t token = uint32_t(run);
    if (run >= kShortRun) {
      unsigned bucket = 0;
      while ((size_t(2) << bucket) <= run) ++bucket;
      token = kShortRun + bucket;
      raw_bits += bucket;
    }
    ++runs[token];
    put(run_tokens, token);
    if (i < s.size()) ++others[s[i]], put(other_tokens, s[i]);
    run = 0;
  }
  ZeroRuns z;
  z.estimate = coded_bytes(runs, kShortRun + 64) + coded_bytes(others, kAlphabet) + raw_bits / 8;
  fz::Bytes coded;
  fz::huffman::encode(run_tokens, {128, 16, 16384}, coded);
  z.huffman = double(coded.size()) + raw_bits / 8;
  if (!other_tokens.empty()) {
    fz::huffman::encode(other_tokens, {kAlphabet, 16, 16384}, coded);
    z.huffman += double(coded.size());
  }
  return z;
}

unsigned bucket_of(uint16_t v, uint16_t mode) { return std::min(3u, unsigned(std::abs(int(v) - int(mode)))); }

// Order-1: one table per context; `context` maps (previous, the one before) to
// a context id.
template <typename Context>
double order1(const std::vector<uint16_t>& s, Context context) {
  std::map<uint32_t, std::map<uint32_t, uint64_t>> h;
  uint16_t prev = 0, prev2 = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    ++h[i == 0 ? 0xFFFFFFFFu : context(prev, prev2)][s[i]];
    prev2 = prev;
    prev = s[i];
  }
  double bytes = 0;
  for (const auto& [c, hist] : h) bytes += coded_bytes(hist, kAlphabet);
  return bytes;
}

// An adaptive coder with no table: per context, a seen symbol costs
// -log2(c / (n + u)), a new one the escape -log2(u / (n + u)) (u >= 1) plus
// log2 of the symbols not yet seen (PPM's method C); bytes.
template <typename Context>
double adaptive(const std::vector<uint16_t>& s, Context context) {
  struct Model {
    std::vector<uint32_t> counts = std::vector<uint32_t>(kAlphabet, 0);
    uint64_t n = 0, used = 0;
  };
  std::map<uint32_t, Model> models;
  double bits = 0;
  uint16_t prev = 0, prev2 = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    Model& m = models[i == 0 ? 0xFFFFFFFFu : context(prev, prev2)];
    const double total = double(m.n + std::max<uint64_t>(m.used, 1));
    if (m.counts[s[i]] != 0) {
      bits -= std::log2(double(m.counts[s[i]]) / total);
    } else {
      bits -= std::log2(double(std::max<uint64_t>(m.used, 1)) / total);
      bits += std::log2(double(kAlphabet - m.used));
      ++m.used;
    }
    ++m.counts[s[i]];
    ++m.n;
    prev2 = prev;
    prev = s[i];
  }
  return bits / 8;
}

fz::Bytes huffman_bytes(const fz::Bytes& codes, unsigned group) {
  fz::Bytes coded;
  fz::huffman::encode(codes, {kAlphabet, 16, group == 0 ? 16384u : 4096u}, coded);
  return coded;
}

struct Row {
  size_t n = 0, mode_count = 0, side = 0, frame = 0;
  double ansi = 0, ans_100k = 0, ansi_100k = 0;
  double huffman = 0, huffman_rze = 0, ans = 0, h0_bare = 0, h0 = 0, zrun = 0, zrun_huff = 0, o1b = 0, o1 = 0, a0 = 0, a1b = 0;
};

// The spline's code groups of a field at a NOA bound, as cuszhi-cr makes them.
fz::spline::Streams spline_codes(const std::vector<uint8_t>& raw, const Field& f, double noa) {
  const fz::DataType dtype = f.width == 4 ? fz::DataType::of<float>() : fz::DataType::of<double>();
  fz::Options o;
  o.preset = fz::Preset::CuszHiCr;
  o.mode = fz::ErrorMode::Noa;
  o.bound = noa;
  const fz::ChunkBound b = fz::chunk_bound(raw.data(), raw.size(), dtype, o);
  fz::spline::Config c;
  c.width = f.width;
  c.code_bytes = 2;
  c.radius = kRadius;
  c.code_form = fz::spline::CodeForm::kOffset;
  c.alpha = 1;
  c.beta = 1;
  c.tuning = fz::spline::Tuning::kRatioFirst;
  fz::spline::Streams st;
  fz::spline::encode(fz::ByteSpan(raw.data(), raw.size()), std::vector<size_t>(f.dims.begin(), f.dims.end()), c,
                     b.bound, st);
  return st;
}

// Bytes of today's Huffman > rze(1) and of ans at (M, S) for every code group.
void group_bytes(const fz::spline::Streams& st, unsigned prob_bits, uint32_t lane_symbols, double& today,
                 double& ans) {
  for (unsigned g = 0; g < fz::spline::kCodeGroups; ++g) {
    if (st.codes[g].empty()) continue;
    fz::Bytes z, a;
    fz::rze::encode(huffman_bytes(st.codes[g], g), 1, z);
    fz::ans::encode(st.codes[g], {kAlphabet, static_cast<uint8_t>(prob_bits), lane_symbols}, a);
    today += double(z.size());
    ans += double(a.size());
  }
}

Row measure(const std::vector<uint8_t>& raw, const Field& f, double noa, const std::string& dump,
            const std::string& tag) {
  const fz::DataType dtype = f.width == 4 ? fz::DataType::of<float>() : fz::DataType::of<double>();
  fz::Options o;
  o.preset = fz::Preset::CuszHiCr;
  o.mode = fz::ErrorMode::Noa;
  o.bound = noa;
  Row r;
  r.frame = fz::compress(raw.data(), raw.size(), dtype, f.dims, o).size();
  const fz::spline::Streams st = spline_codes(raw, f, noa);
  r.side = st.side.size();
  for (unsigned g = 0; g < fz::spline::kCodeGroups; ++g) {
    const std::vector<uint16_t> s = symbols(st.codes[g]);
    if (s.empty()) continue;
    const uint16_t mode = mode_of(s);
    r.n += s.size();
    r.mode_count += size_t(std::count(s.begin(), s.end(), mode));
    const fz::Bytes h = huffman_bytes(st.codes[g], g);
    fz::Bytes z;
    fz::rze::encode(h, 1, z);
    r.huffman += double(h.size());
    r.huffman_rze += double(z.size());
    fz::Bytes a, ai;
    fz::ans::encode(st.codes[g], {kAlphabet, 14, 8192}, a);
    fz::ans::encode_interleaved(st.codes[g], {kAlphabet, 14}, ai);
    r.ans += double(a.size());
    r.ansi += double(ai.size());
    const fz::ByteSpan head(st.codes[g].data(), std::min<size_t>(st.codes[g].size(), 2 * kPrefixCodes));
    fz::ans::encode(head, {kAlphabet, 14, 8192}, a);
    fz::ans::encode_interleaved(head, {kAlphabet, 14}, ai);
    r.ans_100k += double(a.size());
    r.ansi_100k += double(ai.size());
    if (!dump.empty()) {
      std::ofstream(dump + "/" + tag + ".g" + std::to_string(g) + ".huff", std::ios::binary)
          .write(reinterpret_cast<const char*>(h.data()), std::streamsize(h.size()));
      std::ofstream(dump + "/" + tag + ".g" + std::to_string(g) + ".codes", std::ios::binary)
          .write(reinterpret_cast<const char*>(st.codes[g].data()), std::streamsize(st.codes[g].size()));
    }
    const auto bucketed = [&](uint16_t p, uint16_t p2) { return bucket_of(p, mode) * 4 + bucket_of(p2, mode); };
    r.h0 += order0(s);
    r.h0_bare += order0(s, false);
    r.a0 += adaptive(s, [](uint16_t, uint16_t) { return 0u; });
    r.a1b += adaptive(s, bucketed);
    const ZeroRuns zr = zero_runs(s, mode);
    r.zrun += zr.estimate;
    r.zrun_huff += zr.huffman;
    r.o1b += order1(s, bucketed);
    r.o1 += order1(s, [](uint16_t p, uint16_t) { return uint32_t(p); });
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = FZ_DEFAULT_DATA_DIR, dump;
  bool sweep = false;
  if (const char* env = std::getenv("FZ_DATA")) data = env;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sweep") == 0) sweep = true;
    if (i + 1 == argc) break;
    if (std::strcmp(argv[i], "--data") == 0) data = argv[i + 1];
    if (std::strcmp(argv[i], "--dump") == 0) dump = argv[i + 1];
  }
  const std::vector<Field> fields = {{"wmag91.float", {91, 91, 91}, 4},
                                     {"999x999.float", {999, 999}, 4},
                                     {"vorticity.128_128_41", {41, 128, 128}, 4},
                                     {"vorticity.512_512", {512, 512}, 4},
                                     {"pressure.384_384.f64", {384, 384}, 8}};
  std::vector<std::vector<uint8_t>> inputs;
  for (const auto& f : fields) inputs.push_back(read_file(data + "/" + f.name));
  if (sweep) {
    std::printf("ans / today's huff > rze, geo-mean over fields, per (M, S)\n\n| NOA | M | S=2048 | 4096 | 8192 | 16384 |\n"
                "|---|---:|---:|---:|---:|---:|\n");
    for (const double noa : {1e-2, 1e-3, 1e-4}) {
      std::vector<fz::spline::Streams> codes;
      for (size_t i = 0; i < fields.size(); ++i) codes.push_back(spline_codes(inputs[i], fields[i], noa));
      for (unsigned m = 12; m <= 16; ++m) {
        std::printf("| %g | %u |", noa, m);
        for (const uint32_t lane : {2048u, 4096u, 8192u, 16384u}) {
          if ((1u << m) < kAlphabet) {  // the format needs 2^M >= A
            std::printf(" - |");
            continue;
          }
          double log_ratio = 0;
          for (const auto& st : codes) {
            double today = 0, ans = 0;
            group_bytes(st, m, lane, today, ans);
            log_ratio += std::log(ans / today);
          }
          std::printf(" %.4f |", std::exp(log_ratio / double(codes.size())));
        }
        std::printf("\n");
      }
    }
    return 0;
  }

  std::printf("cuszhi-cr's spline codes (whole field, one chunk), bytes per coder; huff: today's Huffman\n"
              "output of the 3 groups, +rze: what the frame stores for them (huff > rze(1)); side: the\n"
              "spline's raw side stream; frame: fz::compress, for reference. Estimates include tables.\n"
              "Huffman > zstd: libzstd's header is not installed and is no project dependency (see --dump).\n\n");
  for (const double noa : {1e-2, 1e-3, 1e-4}) {
    std::printf("NOA %g\n\n| field | codes | mode share | frame | side | huff | +rze | ans | ansi | ansi/ans | ans 100k | ansi 100k | ansi/ans 100k | H0 | H0+tab | zrun+tab | zrun>huff "
                "| o1b+tab | o1+tab | ad0 | ad1b | best / +rze |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
                "---:|---:|\n",
                noa);
    double log_ansi = 0, log_ansi_100k = 0, worst_ansi = 0, worst_ansi_100k = 0;
    const char* worst_field = "";
    const char* worst_field_100k = "";
    double log_best = 0, log_ans = 0, log_h0 = 0, log_zrun = 0, log_zh = 0, log_o1b = 0, log_a1b = 0;
    for (size_t i = 0; i < fields.size(); ++i) {
      char tag[96];
      std::snprintf(tag, sizeof tag, "%s.%g", fields[i].name, noa);
      const Row r = measure(inputs[i], fields[i], noa, dump, tag);
      const double best = std::min({r.h0, r.zrun, r.o1b, r.o1, r.a0, r.a1b});
      std::printf(
          "| %s | %zu | %.3f | %zu | %zu | %.0f | %.0f | %.0f | %.0f | %.4f | %.0f | %.0f | %.4f | %.0f | %.0f | %.0f | %.0f | %.0f "
          "| %.0f | %.0f | %.0f | %.3f |\n",
          fields[i].name, r.n, double(r.mode_count) / double(r.n), r.frame, r.side, r.huffman, r.huffman_rze, r.ans,
          r.ansi, r.ansi / r.ans, r.ans_100k, r.ansi_100k, r.ansi_100k / r.ans_100k, r.h0_bare,
          r.h0, r.zrun, r.zrun_huff, r.o1b, r.o1, r.a0, r.a1b, best / r.huffman_rze);
      log_ansi += std::log(r.ansi / r.ans);
      log_ansi_100k += std::log(r.ansi_100k / r.ans_100k);
      if (r.ansi / r.ans > worst_ansi) worst_ansi = r.ansi / r.ans, worst_field = fields[i].name;
      if (r.ansi_100k / r.ans_100k > worst_ansi_100k) worst_ansi_100k = r.ansi_100k / r.ans_100k, worst_field_100k = fields[i].name;
      log_best += std::log(best / r.huffman_rze);
      log_ans += std::log(r.ans / r.huffman_rze);
      log_h0 += std::log(r.h0 / r.huffman_rze);
      log_zrun += std::log(r.zrun / r.huffman_rze);
      log_zh += std::log(r.zrun_huff / r.huffman_rze);
      log_o1b += std::log(r.o1b / r.huffman_rze);
      log_a1b += std::log(r.a1b / r.huffman_rze);
    }
    const double k = double(fields.size());
    std::printf("\nNOA %g geo-mean over fields / today's huff > rze: ans %.3f, best %.3f, H0+tab %.3f, zrun+tab %.3f, "
                "zrun>huff %.3f, o1b+tab %.3f, ad1b %.3f\n\n",
                noa, std::exp(log_ans / k), std::exp(log_best / k), std::exp(log_h0 / k), std::exp(log_zrun / k), std::exp(log_zh / k),
                std::exp(log_o1b / k), std::exp(log_a1b / k));
    std::printf("NOA %g geo-mean over fields of ansi / ans: %.4f (worst %s %.4f); on 100k-code prefixes %.4f (worst %s "
                "%.4f)\n\n",
                noa, std::exp(log_ansi / k), worst_field, worst_ansi, std::exp(log_ansi_100k / k), worst_field_100k,
                worst_ansi_100k);
  }
  return 0;
}
