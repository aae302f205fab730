// CPU Lorenzo dual quantization (stream format: lorenzo.hpp, docs/FORMAT.md).
//
// Encoding runs in three passes over a fixed grid of element blocks, so the bytes
// do not depend on the thread count:
//   1. prequantize every element to an integer p (specials get p = 0 and are
//      listed per block with their kind and bits);
//   2. Lorenzo deltas from the already-prequantized neighbours (the prediction
//      never uses reconstructed values, so every element is independent), codes,
//      and per-block outlier records in index order;
//   3. gather the records: per-block counts, a prefix sum, parallel copies.
// Pass 1 takes four elements at a time with SSE2 where all four are on classify's
// common path (same operations, same p; float64 converts its integers exactly
// with the 1.5 * 2^52 addend, so only |x * inv| < 2^51 qualifies). Pass 2 works
// on chunks of 2048 elements that stay in L1: the deltas 16 bytes at a time,
// then four codes at once where none is a record.
// Decoding inverts the delta operator with inclusive prefix sums along x, y and z
// (any order gives the same p), fused into one pass per slab of whole units of
// the slowest axis with extent > 1 (planes, rows, or x segments for 1-D). Per
// row chunk: codes -> deltas (code = zigzag(delta); code 0 is delta 0), the
// stored deltas written over the outlier positions (whose code must be 0), then
// per element the running x sum, plus the running y sum of the plane's rows,
// plus the running z sum of the slab's planes, and x' = (T)p * eb2 with the range
// check, all while the row is in cache. Slab 0 converts at once; a later slab's
// sums start from zero, so they are stored as integers and a second pass adds
// its carry (the last units of all earlier slabs, summed) and converts. One
// thread gets one slab and no second pass; the slab count changes only speed.
// Specials are patched last.
// All integer work is modulo 2^(8*width) (unsigned), which is exact because
// every final p fits the signed type; it also keeps hostile streams free of UB.
#include "lorenzo/lorenzo.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "common/error.hpp"
#include "common/float_state.hpp"
#include "lorenzo/lorenzo_rules.hpp"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace fz::lorenzo {
namespace {

using namespace rules;  // the per-element rules the GPU shares

// Work-item grid of the encoder and of the decoder's carry pass.
constexpr size_t kBlockElems = size_t{1} << 15;
static_assert(kBlockElems <= 65536, "element offsets in a block are 16-bit");
// Elements whose deltas the encoder computes and codes at a time (8-16 KiB).
constexpr size_t kEncodeChunk = 2048;
constexpr size_t kHeaderBytes = 24;

struct Shape {
  size_t nz = 1, ny = 1, nx = 1, n = 0;
};

Shape make_shape(const std::vector<size_t>& dims) {
  if (dims.empty() || dims.size() > 3)
    throw UsageError("lorenzo: 1 to 3 extents expected, got " + std::to_string(dims.size()));
  size_t ext[3] = {1, 1, 1};
  std::copy(dims.begin(), dims.end(), ext + (3 - dims.size()));
  Shape s;
  s.nz = ext[0];
  s.ny = ext[1];
  s.nx = ext[2];
  // Bounded so that N * 16 (codes, outliers, temporaries) never overflows.
  constexpr size_t kMaxElements = std::numeric_limits<size_t>::max() / 32;
  size_t n = 1;
  for (size_t e : ext) {
    if (e == 0) return Shape{s.nz, s.ny, s.nx, 0};
    if (n > kMaxElements / e) throw UsageError("lorenzo: too many elements");
    n *= e;
  }
  s.n = n;
  return s;
}

template <typename T>
void check_config(const Config& c) {
  const T eb = static_cast<T>(c.eb);
  if (!(static_cast<double>(eb) == c.eb))
    throw UsageError("lorenzo: working bound must be exactly representable in the element type");
  if (!(eb >= std::numeric_limits<T>::min()) || !std::isfinite(eb + eb))
    throw UsageError("lorenzo: working bound must be normal, with 2*eb finite");
  if (c.radius < 1 || c.radius > 32768) throw UsageError("lorenzo: radius must be in [1, 32768]");
  if (sizeof(T) == 4 && (c.fill_bits >> 32) != 0) throw UsageError("lorenzo: fill bits wider than the element");
}


#ifdef __SSE2__
// Four float elements on classify's common path at once: none is the fill value,
// a NaN/Inf, a denormal or -0; |x * inv| < PMAX; and the rounded q passes the
// first test, |x - (T)q * eb2| < bound in double. These are the same operations
// classify performs (mulps, truncation, the half-up step, cvtdq2ps, mulps,
// cvtps2pd, subpd), so p is the same; on false nothing is stored and classify
// decides each element.
inline bool quantize4_sse2(const Quantizer<float>& quantizer, const uint8_t* src, uint32_t* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  const __m128i zero = _mm_setzero_si128();
  const __m128i exponent = _mm_and_si128(_mm_srli_epi32(bits, 23), _mm_set1_epi32(0xFF));
  __m128i special = _mm_cmpeq_epi32(exponent, _mm_set1_epi32(0xFF));
  // exponent 0: only +0 (p = 0) stays on this path
  special = _mm_or_si128(special, _mm_andnot_si128(_mm_cmpeq_epi32(bits, zero), _mm_cmpeq_epi32(exponent, zero)));
  if (quantizer.has_fill)
    special = _mm_or_si128(special, _mm_cmpeq_epi32(bits, _mm_set1_epi32(static_cast<int>(quantizer.fill))));
  const __m128 x = _mm_castsi128_ps(bits);
  const __m128 s = _mm_mul_ps(x, _mm_set1_ps(quantizer.inv));
  const __m128 a = _mm_and_ps(s, _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF)));
  const __m128 small = _mm_cmplt_ps(a, _mm_set1_ps(static_cast<float>(Traits<float>::kPMax)));
  __m128i t = _mm_cvttps_epi32(a);
  const __m128 half_up = _mm_cmpge_ps(_mm_sub_ps(a, _mm_cvtepi32_ps(t)), _mm_set1_ps(0.5f));
  t = _mm_sub_epi32(t, _mm_castps_si128(half_up));
  // s < 0 and the sign bit differ only at s = -0, where t = 0 anyway.
  const __m128i negative = _mm_srai_epi32(_mm_castps_si128(s), 31);
  const __m128i q = _mm_sub_epi32(_mm_xor_si128(t, negative), negative);
  const __m128 y = _mm_mul_ps(_mm_cvtepi32_ps(q), _mm_set1_ps(quantizer.eb2));
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m128d bound = _mm_set1_pd(quantizer.bound);
  const __m128d low = _mm_and_pd(_mm_sub_pd(_mm_cvtps_pd(x), _mm_cvtps_pd(y)), abs_mask);
  const __m128d high = _mm_and_pd(_mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(x, x)), _mm_cvtps_pd(_mm_movehl_ps(y, y))), abs_mask);
  const int accepted = _mm_movemask_pd(_mm_cmplt_pd(low, bound)) | (_mm_movemask_pd(_mm_cmplt_pd(high, bound)) << 2);
  if (_mm_movemask_epi8(special) != 0 || _mm_movemask_ps(small) != 0xF || accepted != 0xF) return false;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), q);
  return true;
}

// Codes of four float deltas when all four fit (no records among them);
// otherwise nothing is stored and the caller takes them one by one.
inline bool codes4_sse2(const uint32_t* deltas, uint32_t code_limit, uint8_t* codes) {
  const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(deltas));
  const __m128i z = _mm_xor_si128(_mm_slli_epi32(d, 1), _mm_srai_epi32(d, 31));
  // unsigned z < code_limit, as a signed compare with both sign bits flipped
  const __m128i flip = _mm_set1_epi32(static_cast<int>(0x80000000u));
  const __m128i fits = _mm_cmplt_epi32(_mm_xor_si128(z, flip), _mm_xor_si128(_mm_set1_epi32(static_cast<int>(code_limit)), flip));
  if (_mm_movemask_epi8(fits) != 0xFFFF) return false;
  // z < 65536: sign-extending the low half makes the saturating pack exact
  const __m128i low = _mm_srai_epi32(_mm_slli_epi32(z, 16), 16);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(codes), _mm_packs_epi32(low, low));
  return true;
}

// 64-bit lane equality from 32-bit compares: both halves equal.
inline __m128i cmpeq_epi64_sse2(__m128i a, __m128i b) {
  const __m128i eq = _mm_cmpeq_epi32(a, b);
  return _mm_and_si128(eq, _mm_shuffle_epi32(eq, _MM_SHUFFLE(2, 3, 0, 1)));
}

// Each 64-bit lane filled with its sign bit (SSE2 has no srai_epi64).
inline __m128i sign_epi64_sse2(__m128i v) {
  return _mm_shuffle_epi32(_mm_srai_epi32(v, 31), _MM_SHUFFLE(3, 3, 1, 1));
}

// Quantizer<double>'s parameters in vector registers (one per work item).
struct QuantizerSse2 {
  __m128d inv, eb2, bound;
  __m128i fill;
  bool has_fill;
  explicit QuantizerSse2(const Quantizer<double>& q)
      : inv(_mm_set1_pd(q.inv)),
        eb2(_mm_set1_pd(q.eb2)),
        bound(_mm_set1_pd(q.bound)),
        fill(_mm_set1_epi64x(static_cast<long long>(q.fill))),
        has_fill(q.has_fill) {}
};

// Two double elements: p in q, and an all-ones mask in the lanes on classify's
// common path. Such a lane is +0 or a normal number that is not the fill value,
// |s| = |x * inv| < 2^51 (so the integers below convert exactly with the
// 1.5 * 2^52 addend), and its rounded q passes the first test, |x - q * eb2| <
// bound. The operations are classify's: s = x * inv (mulpd), a = |s|; q is a
// rounded half away from zero, the same integer as classify's truncation plus
// half-up step (r = a + 1.5 * 2^52 - 1.5 * 2^52 is the nearest integer, ties to
// even, exactly; it differs only when a - r == 0.5 exactly, where the half goes
// up); (double)q * eb2 (mulpd) and the difference in double. Infinities and NaNs
// fail |s| < 2^51, denormals and -0 fail the first test.
inline __m128d quantize2_sse2(const QuantizerSse2& quantizer, __m128i bits, __m128i& q) {
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  const __m128d x = _mm_castsi128_pd(bits);
  const __m128i is_zero = cmpeq_epi64_sse2(bits, _mm_setzero_si128());  // +0 only
  __m128d ok = _mm_or_pd(_mm_cmpge_pd(_mm_and_pd(x, abs_mask), _mm_set1_pd(std::numeric_limits<double>::min())),
                         _mm_castsi128_pd(is_zero));
  if (quantizer.has_fill) ok = _mm_andnot_pd(_mm_castsi128_pd(cmpeq_epi64_sse2(bits, quantizer.fill)), ok);
  const __m128d s = _mm_mul_pd(x, quantizer.inv);
  const __m128d a = _mm_and_pd(s, abs_mask);
  ok = _mm_and_pd(ok, _mm_cmplt_pd(a, _mm_set1_pd(0x1p51)));
  const __m128d magic = _mm_set1_pd(0x1.8p52);
  const __m128d m = _mm_add_pd(a, magic);
  const __m128d r = _mm_sub_pd(m, magic);
  const __m128d tie = _mm_cmpeq_pd(_mm_sub_pd(a, r), _mm_set1_pd(0.5));
  const __m128d t = _mm_add_pd(r, _mm_and_pd(tie, _mm_set1_pd(1.0)));
  // the integer of t: the low bits of m, plus one at a tie (mask -1)
  const __m128i ti = _mm_sub_epi64(_mm_sub_epi64(_mm_castpd_si128(m), _mm_castpd_si128(magic)), _mm_castpd_si128(tie));
  // s < 0 and the sign bit differ only at s = -0, where t = 0: q = 0, and x - (-0 * eb2)
  // is x - (+0 * eb2).
  const __m128i negative = sign_epi64_sse2(_mm_castpd_si128(s));
  q = _mm_sub_epi64(_mm_xor_si128(ti, negative), negative);
  const __m128d qd = _mm_xor_pd(t, _mm_andnot_pd(abs_mask, s));
  const __m128d y = _mm_mul_pd(qd, quantizer.eb2);
  const __m128d diff = _mm_and_pd(_mm_sub_pd(x, y), abs_mask);
  return _mm_and_pd(ok, _mm_cmplt_pd(diff, quantizer.bound));
}

// Four double elements on classify's common path; otherwise nothing is stored.
inline bool quantize4_sse2(const QuantizerSse2& quantizer, const uint8_t* src, uint64_t* p) {
  __m128i q0, q1;
  const __m128d ok = _mm_and_pd(quantize2_sse2(quantizer, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), q0),
                                quantize2_sse2(quantizer, _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16)), q1));
  if (_mm_movemask_pd(ok) != 3) return false;
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), q0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 2), q1);
  return true;
}

// Codes of four double deltas when all four fit; otherwise nothing is stored.
inline bool codes4_sse2(const uint64_t* deltas, uint64_t code_limit, uint8_t* codes) {
  const __m128i d0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(deltas));
  const __m128i d1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(deltas + 2));
  const __m128i z0 = _mm_xor_si128(_mm_slli_epi64(d0, 1), sign_epi64_sse2(d0));
  const __m128i z1 = _mm_xor_si128(_mm_slli_epi64(d1, 1), sign_epi64_sse2(d1));
  // z < code_limit <= 65536: the high halves are 0 and the low halves (unsigned) < code_limit
  const __m128i low = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(z0), _mm_castsi128_ps(z1), _MM_SHUFFLE(2, 0, 2, 0)));
  const __m128i high = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(z0), _mm_castsi128_ps(z1), _MM_SHUFFLE(3, 1, 3, 1)));
  const __m128i flip = _mm_set1_epi32(static_cast<int>(0x80000000u));
  const __m128i fits = _mm_and_si128(
      _mm_cmpeq_epi32(high, _mm_setzero_si128()),
      _mm_cmplt_epi32(_mm_xor_si128(low, flip), _mm_xor_si128(_mm_set1_epi32(static_cast<int>(code_limit)), flip)));
  if (_mm_movemask_epi8(fits) != 0xFFFF) return false;
  const __m128i packed = _mm_srai_epi32(_mm_slli_epi32(low, 16), 16);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(codes), _mm_packs_epi32(packed, packed));
  return true;
}
#endif

// An element that is not quantized (NaN, Inf, denormal, fill value, too
// large): its offset in its block (kBlockElems = 2^15), kind and bits. 8 bytes
// for float32 (a NaN chunk held 24 bytes per element).
template <typename U>
struct Special {
  uint16_t offset;
  uint8_t kind;
  U bits;
};

// One block's outlier records, kept as the stream stores them (fields apart,
// only what each record needs; the index as an offset in the block), so that
// they take less memory than the outliers stream they become.
template <typename U>
struct BlockRecords {
  std::vector<uint16_t> offsets;  // element index - the block's first (kBlockElems = 2^15)
  std::vector<uint8_t> kinds;
  std::vector<U> deltas;          // of the records with kHasDelta, in order
  std::vector<U> raws;            // of the records whose value is kValueRaw, in order
  size_t stream_bytes(size_t index_width) const {
    return kinds.size() * (index_width + 1) + (deltas.size() + raws.size()) * sizeof(U);
  }
  void clear() {
    offsets.clear();
    kinds.clear();
    deltas.clear();
    raws.clear();
  }
  // Exact-size copies of `from`'s records.
  void assign(const BlockRecords& from) {
    offsets = std::vector<uint16_t>(from.offsets.begin(), from.offsets.end());
    kinds = std::vector<uint8_t>(from.kinds.begin(), from.kinds.end());
    deltas = std::vector<U>(from.deltas.begin(), from.deltas.end());
    raws = std::vector<U>(from.raws.begin(), from.raws.end());
  }
};

// Each thread's records of the block it is coding, reused from block to
// block (their capacity grows to one block's worst case once).
template <typename U>
BlockRecords<U>& scratch_records() {
  thread_local BlockRecords<U> scratch;
  return scratch;
}

size_t block_count_elems(size_t n) { return (n + kBlockElems - 1) / kBlockElems; }

// Column term of the Lorenzo operator at x: the y/z differences of p at (z, y, x).
// The neighbour rows are separate pointers (formed only when they exist), so no
// index ever wraps below zero.
template <typename U, bool Up, bool Back>
inline U column(const U* row, const U* up, const U* back, const U* up_back, size_t x) {
  U v = row[x];
  if (Up) v -= up[x];
  if (Back) v -= back[x];
  if (Up && Back) v += up_back[x];
  return v;
}

#ifdef __SSE2__
template <typename U>
inline __m128i sub_lanes(__m128i a, __m128i b) {
  return sizeof(U) == 4 ? _mm_sub_epi32(a, b) : _mm_sub_epi64(a, b);
}
template <typename U>
inline __m128i add_lanes(__m128i a, __m128i b) {
  return sizeof(U) == 4 ? _mm_add_epi32(a, b) : _mm_add_epi64(a, b);
}
// The x difference of one of the column's rows at x (x >= 1), 16 bytes of lanes.
template <typename U>
inline __m128i x_difference(const U* r, size_t x) {
  return sub_lanes<U>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r + x)),
                      _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + x - 1)));
}
#endif

// deltas of `len` elements of one row, starting at `row` (x0 in the row);
// then the x difference of the column terms. row[-1] (and the neighbour rows'
// [-1]) is read unless the run starts the row (x0 == 0). With SSE2 the deltas
// are taken 16 bytes at a time as the same sum regrouped (row, up, back and
// up_back x differences; exact modulo 2^(8W)). Pointers are formed only for
// elements the run reads, so `row` may point into a window of the chunk.
template <typename U, bool Up, bool Back>
void row_deltas(const U* row, bool row_start, size_t len, size_t sy, size_t sz, U* out) {
  const U* up = Up ? row - sy : row;
  const U* back = Back ? row - sz : row;
  const U* up_back = Up && Back ? row - sy - sz : row;
  size_t x = 0;
  if (row_start && len > 0) {
    out[0] = column<U, Up, Back>(row, up, back, up_back, 0);
    x = 1;
  }
#ifdef __SSE2__
  constexpr size_t kLanes = 16 / sizeof(U);
  for (; x + kLanes <= len; x += kLanes) {
    __m128i v = x_difference<U>(row, x);
    if (Up) v = sub_lanes<U>(v, x_difference<U>(up, x));
    if (Back) v = sub_lanes<U>(v, x_difference<U>(back, x));
    if (Up && Back) v = add_lanes<U>(v, x_difference<U>(up_back, x));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + x), v);
  }
#endif
  if (x >= len) return;
  U previous = x > 0 || !row_start ? column<U, Up, Back>(row - 1, up - 1, back - 1, up_back - 1, x) : U{0};
  for (; x < len; ++x) {
    const U c = column<U, Up, Back>(row, up, back, up_back, x);
    out[x] = static_cast<U>(c - previous);
    previous = c;
  }
}

// How far back an element's delta reads p: one plane, one row and one element.
size_t delta_reach(const Shape& s) {
  if (s.nz > 1) return s.nx * s.ny + s.nx + 1;
  if (s.ny > 1) return s.nx + 1;
  return 1;
}

// The deltas of elements [begin, end), from p of elements [origin, end) at
// `window` (origin <= begin - delta_reach, or 0).
template <typename U>
void deltas_of_range(const U* window, size_t origin, const Shape& s, size_t begin, size_t end, U* out) {
  const size_t sy = s.nx, sz = s.nx * s.ny;
  size_t i = begin;
  while (i < end) {
    const size_t row_index = i / s.nx;
    const size_t x0 = i % s.nx;
    const size_t len = std::min(s.nx - x0, end - i);
    const bool up = row_index % s.ny != 0;
    const bool back = row_index / s.ny != 0;
    const U* row = window + (i - origin);
    U* o = out + (i - begin);
    const bool start = x0 == 0;
    if (up && back) row_deltas<U, true, true>(row, start, len, sy, sz, o);
    else if (up) row_deltas<U, true, false>(row, start, len, sy, sz, o);
    else if (back) row_deltas<U, false, true>(row, start, len, sy, sz, o);
    else row_deltas<U, false, false>(row, start, len, sy, sz, o);
    i += len;
  }
}

template <typename T>
void encode_typed(ByteSpan in, const Shape& s, const Config& config, double user_bound, Streams& out,
                  size_t max_outlier_bytes, const Executor& exec) {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  const size_t n = s.n;
  // The codes grow group by group (below), so that an encoder that gives up
  // part way (NotSmallerError) has touched only the codes it wrote.
  out.codes.clear();
  out.codes.reserve(2 * n);
  out.outliers.clear();
  if (n == 0) {
    out.outliers.assign(kHeaderBytes, 0);
    return;
  }

  Quantizer<T> quantizer;
  quantizer.eb2 = static_cast<T>(config.eb) * 2;
  {
    FloatStateGuard guard;
    quantizer.inv = static_cast<T>(1) / quantizer.eb2;
  }
  quantizer.bound = user_bound;
  quantizer.has_fill = config.has_fill;
  quantizer.fill = static_cast<U>(config.fill_bits);

  // The prequantized values p are kept for a window of the chunk only: a
  // group of blocks plus the reach of a delta behind it (one plane, one row
  // and one element), not for the whole chunk (for float32 that was as large
  // as the chunk itself, on top of the codes). Within a group, blocks are
  // quantized in parallel, then coded in parallel; the group's last `reach`
  // values move to the front of the window for the next group.
  const size_t blocks = block_count_elems(n);
  const size_t reach = std::min(n, delta_reach(s));
  const size_t group_blocks = std::max<size_t>(4, 4 * size_t{exec.concurrency()});
  const size_t window_elems = reach + std::min(n, group_blocks * kBlockElems);
  std::unique_ptr<U[]> window(new U[window_elems]);
  std::vector<std::vector<Special<U>>> specials(blocks);
  const U code_limit = static_cast<U>(2 * config.radius);  // zigzag(delta) < 2R -> code (2R <= 65536)
  std::vector<BlockRecords<U>> records(blocks);
  const size_t index_width = n <= (uint64_t{1} << 32) ? 4 : 8;
  // The outliers stream's length so far (header included), for giving up as
  // soon as it reaches max_outlier_bytes: it only grows, so it reaches the
  // limit, whatever the order the blocks finish in, exactly when the whole
  // stream would.
  std::atomic<size_t> outlier_bytes{kHeaderBytes};
  std::vector<uint8_t> group_codes(2 * (window_elems - reach));
  for (size_t first_block = 0; first_block < blocks; first_block += group_blocks) {
    const size_t group_begin = first_block * kBlockElems;
    const size_t group_end = std::min(n, (first_block + group_blocks) * kBlockElems);
    const size_t origin = group_begin - std::min(group_begin, reach);  // window[0] is p[origin]
    const size_t group_count = std::min(group_blocks, blocks - first_block);
    uint8_t* const codes = group_codes.data();  // the group's codes, element group_begin's first

    exec.parallel_for(group_count, [&](size_t g) {
      FloatStateGuard guard;
      const size_t b = first_block + g;
      const size_t begin = b * kBlockElems, end = std::min(n, begin + kBlockElems);
      auto& list = specials[b];
      size_t i = begin;
      // Locals, so that the vector stores cannot alias them: the source, the
      // destination, and double's parameters in registers.
      U* const dst = window.get() + (begin - origin);  // p[i] at dst[i - begin]
#ifdef __SSE2__
      const uint8_t* const src = in.data;
      const std::conditional_t<std::is_same_v<T, float>, const Quantizer<float>&, QuantizerSse2> vq(quantizer);
      for (; i + 4 <= end; i += 4)
        if (!quantize4_sse2(vq, src + W * i, dst + (i - begin))) break;  // classify takes over
#endif
      for (; i < end; ++i) {
#ifdef __SSE2__
        // Back to four at a time once past the group that needed classify.
        if (i % 4 == 0 && i + 4 <= end && quantize4_sse2(vq, src + W * i, dst + (i - begin))) {
          i += 3;
          continue;
        }
#endif
        const U bits = load_le<U>(in.data + i * W);
        I q;
        const uint8_t kind = quantizer.classify(bits, q);
        dst[i - begin] = static_cast<U>(q);
        if (kind != kValueQuantized) list.push_back({static_cast<uint16_t>(i - begin), kind, bits});
      }
    });

    exec.parallel_for(group_count, [&](size_t g) {
      const size_t b = first_block + g;
      const size_t begin = b * kBlockElems, end = std::min(n, begin + kBlockElems);
      // The deltas of one chunk at a time, coded while they are in L1.
      std::unique_ptr<U[]> deltas(new U[std::min(end - begin, kEncodeChunk)]);
      const U* const pq = window.get();
      uint8_t* const dst = codes + 2 * (begin - group_begin);  // element i's code at dst + 2 * (i - begin)
      const U limit = code_limit;
      const auto& list = specials[b];
      size_t next = 0;
      size_t next_special = list.empty() ? n : begin + list[0].offset;
      BlockRecords<U>& recs = scratch_records<U>();
      recs.clear();
      size_t chunk = begin;  // the first element of the chunk in deltas
      auto code_one = [&](size_t i) {
        const U d = deltas[i - chunk];
        const U z = zigzag(d);
        const bool fits = z < limit;
        // An outlier's code is 0: with bit-shuffle + zero elimination after this
        // stage, a zero delta and an outlier then both cost no set bits.
        store_le<uint16_t>(dst + 2 * (i - begin), fits ? static_cast<uint16_t>(z) : uint16_t{0});
        if (!fits || i == next_special) {
          uint8_t kind = fits ? 0 : kHasDelta;
          if (!fits) recs.deltas.push_back(d);
          if (i == next_special) {
            kind |= list[next].kind;
            if ((list[next].kind & kValueMask) == kValueRaw) recs.raws.push_back(list[next].bits);
            ++next;
            next_special = next < list.size() ? begin + list[next].offset : n;
          }
          recs.offsets.push_back(static_cast<uint16_t>(i - begin));
          recs.kinds.push_back(kind);
        }
      };
      for (; chunk < end; chunk += kEncodeChunk) {
        const size_t chunk_end = std::min(end, chunk + kEncodeChunk);
        deltas_of_range<U>(pq, origin, s, chunk, chunk_end, deltas.get());
        size_t i = chunk;
#ifdef __SSE2__
        for (; i + 4 <= chunk_end; i += 4)
          if (next_special < i + 4 || !codes4_sse2(deltas.get() + (i - chunk), limit, dst + 2 * (i - begin)))
            for (size_t k = i; k < i + 4; ++k) code_one(k);
#endif
        for (; i < chunk_end; ++i) code_one(i);
      }
      // The block's records were collected in this thread's scratch; the block
      // keeps exact copies (no growth slack, no reallocation churn).
      records[b].assign(recs);
      // The block's specials are in its records now: a chunk of NaN would
      // otherwise keep them for every element until the end.
      std::vector<Special<U>>().swap(specials[b]);
      const size_t added = recs.stream_bytes(index_width);
      if (outlier_bytes.fetch_add(added) + added >= max_outlier_bytes)
        throw NotSmallerError("lorenzo: the outliers alone reach " + std::to_string(max_outlier_bytes) + " bytes");
    });

    out.codes.insert(out.codes.end(), codes, codes + 2 * (group_end - group_begin));
    // What the next group's deltas reach back to.
    const size_t keep = std::min(group_end, reach);
    std::memmove(window.get(), window.get() + (group_end - keep - origin), keep * sizeof(U));
  }

  // Gather, block by block in index order into each of the stream's four
  // arrays, each block's records freed as soon as they are placed, so the
  // records and the stream they become are never both held whole.
  size_t count = 0, deltas = 0, raws = 0;
  for (const BlockRecords<U>& r : records) {
    count += r.kinds.size();
    deltas += r.deltas.size();
    raws += r.raws.size();
  }
  out.outliers.clear();
  out.outliers.reserve(kHeaderBytes + count * (index_width + 1) + (deltas + raws) * W);
  out.outliers.resize(kHeaderBytes);
  store_le<uint64_t>(out.outliers.data(), count);
  store_le<uint64_t>(out.outliers.data() + 8, deltas);
  store_le<uint64_t>(out.outliers.data() + 16, raws);
  // Appends `words` as little-endian words of `width` bytes.
  const auto append = [&](const auto& words, size_t width, uint64_t add) {
    const size_t at = out.outliers.size();
    out.outliers.resize(at + words.size() * width);
    uint8_t* dst = out.outliers.data() + at;
    for (size_t k = 0; k < words.size(); ++k) {
      const uint64_t word = static_cast<uint64_t>(words[k]) + add;
      if (width == 8) store_le<uint64_t>(dst + 8 * k, word);
      else if (width == 4) store_le<uint32_t>(dst + 4 * k, static_cast<uint32_t>(word));
      else dst[k] = static_cast<uint8_t>(word);
    }
  };
  for (size_t b = 0; b < blocks; ++b) {
    append(records[b].offsets, index_width, b * kBlockElems);
    std::vector<uint16_t>().swap(records[b].offsets);
  }
  for (size_t b = 0; b < blocks; ++b) {
    append(records[b].kinds, 1, 0);
    std::vector<uint8_t>().swap(records[b].kinds);
  }
  for (size_t b = 0; b < blocks; ++b) {
    append(records[b].deltas, W, 0);
    std::vector<U>().swap(records[b].deltas);
  }
  for (size_t b = 0; b < blocks; ++b) {
    append(records[b].raws, W, 0);
    std::vector<U>().swap(records[b].raws);
  }
}

// ---- decoder -------------------------------------------------------------------

// Elements of one row unpacked at a time when a chunk holds stored deltas: the
// delta buffer (8-16 KiB) stays in L1 while the fused pass reads it back.
constexpr size_t kDecodeChunk = 2048;
// Fewer elements than this per slab and the carry pass costs more than a second
// thread saves.
constexpr size_t kMinSlabElems = size_t{1} << 14;
constexpr size_t kMaxSlabs = 64;

// The slab axis is the slowest axis with extent > 1 (z, else y, else x); a slab
// is a range of whole units along it (planes, rows or single elements).
struct SlabGrid {
  int rank = 1;      // 3: slabs of planes, 2: slabs of rows, 1: x segments
  size_t unit = 1;   // elements per unit
  size_t units = 0;  // extent of the slab axis
  size_t slabs = 1;

  size_t first_unit(size_t k) const { return (units / slabs) * k + std::min(k, units % slabs); }
  size_t begin(size_t k) const { return first_unit(k) * unit; }
};

SlabGrid make_slab_grid(const Shape& s, unsigned concurrency) {
  SlabGrid g;
  if (s.nz > 1) {
    g.rank = 3;
    g.unit = s.nx * s.ny;
    g.units = s.nz;
  } else if (s.ny > 1) {
    g.rank = 2;
    g.unit = s.nx;
    g.units = s.ny;
  } else {
    g.rank = 1;
    g.unit = 1;
    g.units = s.nx;
  }
  // Only the speed depends on the slab count: integer sums modulo 2^bits give the
  // same p for any grid, so the output does not depend on the thread count.
  size_t slabs = std::min<size_t>({concurrency, kMaxSlabs, g.units, s.n / kMinSlabElems});
  g.slabs = std::max<size_t>(slabs, 1);
  return g;
}

template <typename T>
struct DecodeJob {
  using U = typename Traits<T>::U;
  const uint8_t* codes;
  const uint8_t* records;  // the outlier stream
  size_t count, index_width, kind_at, delta_at;
  U code_limit;
  T eb2;
  uint8_t* dst;
  Shape shape;
  SlabGrid grid;
  std::vector<size_t> slab_record;  // first record at or after each slab's first element
  std::vector<size_t> slab_delta;   // and the number of stored deltas before it
  std::vector<U> carry;             // per slab: its last unit of local sums, then (in place) its carry

  uint64_t index_of(size_t r) const {
    return index_width == 4 ? load_le<uint32_t>(records + kHeaderBytes + 4 * r)
                            : load_le<uint64_t>(records + kHeaderBytes + 8 * r);
  }
};

constexpr unsigned kBadCode = 1;
constexpr unsigned kBadRange = 2;

inline void throw_chunk_error(unsigned bad) {
  require_format(!(bad & kBadCode), "lorenzo: code out of radius");
  require_format(!(bad & kBadRange), "lorenzo: prequantized value out of range");
}

// The fused inverse for len elements of one row: delta k (from the codes, or
// from d when stored deltas were written over it), then
//   acc  += delta   x prefix sum, carried along the row
//   q[k] += acc     y prefix sum: the running sum of this plane's rows (rank >= 2)
//   P[k] += q[k]    z prefix sum: the running sum of the slab's planes (rank 3)
// and the result either converted to T (Convert) or stored as U for the carry
// pass. Returns kBadCode / kBadRange flags.
template <typename T, int Rank, bool Convert, bool FromCodes>
unsigned reconstruct_generic(const uint8_t* codes, const typename Traits<T>::U* d, size_t len,
                             typename Traits<T>::U& acc, typename Traits<T>::U* q, typename Traits<T>::U* P,
                             uint8_t* dst, typename Traits<T>::U code_limit, T eb2) {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  constexpr U kPMax = static_cast<U>(Traits<T>::kPMax);
  bool bad_code = false, bad_range = false;
  U a = acc;
  for (size_t k = 0; k < len; ++k) {
    U delta;
    if (FromCodes) {
      const U code = load_le<uint16_t>(codes + 2 * k);
      bad_code |= !(code < code_limit);
      delta = unzigzag(code);
    } else {
      delta = d[k];
    }
    a = static_cast<U>(a + delta);
    U v = a;
    if (Rank >= 2) q[k] = v = static_cast<U>(q[k] + v);
    if (Rank == 3) P[k] = v = static_cast<U>(P[k] + v);
    if (Convert) {
      bad_range |= static_cast<U>(v + kPMax) > static_cast<U>(2 * kPMax);
      const T x = static_cast<T>(static_cast<I>(v)) * eb2;
      std::memcpy(dst + k * W, &x, W);
    } else {
      store_le<U>(dst + k * W, v);
    }
  }
  acc = a;
  return (bad_code ? kBadCode : 0u) | (bad_range ? kBadRange : 0u);
}

#ifdef __SSE2__
// float with SSE2 (every x86-64): the x prefix sum of four lanes takes two
// shift-adds plus the broadcast carry, which the compiler does not find on its
// own; the y/z sums, the checks and the conversion ride along in the same
// registers. Bit-identical to reconstruct_generic: the same integer sums and one
// cvtdq2ps (exact, |p| <= 2^24 when accepted) and one mulps per element.
template <int Rank, bool Convert, bool FromCodes>
unsigned reconstruct_sse2(const uint8_t* codes, const uint32_t* d, size_t len, uint32_t& acc, uint32_t* q,
                          uint32_t* P, uint8_t* dst, uint32_t code_limit, float eb2) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i one = _mm_set1_epi32(1);
  const __m128i last_code = _mm_set1_epi32(static_cast<int>(code_limit - 1));  // code_limit <= 65536
  const __m128i pmax = _mm_set1_epi32(Traits<float>::kPMax);
  const __m128i pmin = _mm_set1_epi32(-Traits<float>::kPMax);
  const __m128 scale = _mm_set1_ps(eb2);
  __m128i bad_code = zero, bad_range = zero;
  __m128i carry = _mm_set1_epi32(static_cast<int>(acc));
  size_t k = 0;
  for (; k + 4 <= len; k += 4) {
    __m128i v;
    if (FromCodes) {
      const __m128i code = _mm_unpacklo_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + 2 * k)), zero);
      bad_code = _mm_or_si128(bad_code, _mm_cmpgt_epi32(code, last_code));
      v = _mm_xor_si128(_mm_srli_epi32(code, 1), _mm_sub_epi32(zero, _mm_and_si128(code, one)));
    } else {
      v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + k));
    }
    v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
    v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
    v = _mm_add_epi32(v, carry);
    carry = _mm_shuffle_epi32(v, 0xFF);
    if (Rank >= 2) {
      v = _mm_add_epi32(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + k)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), v);
    }
    if (Rank == 3) {
      v = _mm_add_epi32(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(P + k)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(P + k), v);
    }
    if (Convert) {
      bad_range = _mm_or_si128(bad_range, _mm_or_si128(_mm_cmpgt_epi32(v, pmax), _mm_cmplt_epi32(v, pmin)));
      _mm_storeu_ps(reinterpret_cast<float*>(dst + 4 * k), _mm_mul_ps(_mm_cvtepi32_ps(v), scale));
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 4 * k), v);
    }
  }
  acc = static_cast<uint32_t>(_mm_cvtsi128_si32(carry));
  unsigned bad = (_mm_movemask_epi8(bad_code) ? kBadCode : 0u) | (_mm_movemask_epi8(bad_range) ? kBadRange : 0u);
  if (k < len)
    bad |= reconstruct_generic<float, Rank, Convert, FromCodes>(codes + 2 * k, FromCodes ? d : d + k, len - k, acc,
                                                                 Rank >= 2 ? q + k : q, Rank == 3 ? P + k : P,
                                                                 dst + 4 * k, code_limit, eb2);
  return bad;
}
#endif

template <typename T, int Rank, bool Convert, bool FromCodes>
unsigned reconstruct(const uint8_t* codes, const typename Traits<T>::U* d, size_t len, typename Traits<T>::U& acc,
                     typename Traits<T>::U* q, typename Traits<T>::U* P, uint8_t* dst,
                     typename Traits<T>::U code_limit, T eb2) {
#ifdef __SSE2__
  if constexpr (std::is_same_v<T, float>)
    return reconstruct_sse2<Rank, Convert, FromCodes>(codes, d, len, acc, q, P, dst, code_limit, eb2);
#endif
  return reconstruct_generic<T, Rank, Convert, FromCodes>(codes, d, len, acc, q, P, dst, code_limit, eb2);
}

// Reconstructs elements [i, i + len) of one row. A chunk without records takes
// its deltas straight from the codes; otherwise the codes are unpacked into d
// and the stored deltas written over the outlier positions (whose code must be
// 0; the indices are distinct, so no position is written twice). record and
// delta are the cursor into the records, which are in index order.
template <typename T, int Rank, bool Convert>
void reconstruct_chunk(const DecodeJob<T>& job, size_t i, size_t len, size_t& record, size_t& delta,
                       typename Traits<T>::U& acc, typename Traits<T>::U* q, typename Traits<T>::U* P,
                       typename Traits<T>::U* d) {
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  const uint8_t* codes = job.codes + 2 * i;
  uint8_t* dst = job.dst + W * i;
  if (record == job.count || job.index_of(record) >= i + len) {
    throw_chunk_error(reconstruct<T, Rank, Convert, true>(codes, d, len, acc, q, P, dst, job.code_limit, job.eb2));
    return;
  }
  bool bad = false;
  for (size_t k = 0; k < len; ++k) {
    const U code = load_le<uint16_t>(codes + 2 * k);
    bad |= !(code < job.code_limit);
    d[k] = unzigzag(code);
  }
  require_format(!bad, "lorenzo: code out of radius");
  for (; record < job.count; ++record) {
    const uint64_t index = job.index_of(record);
    if (index >= i + len) break;
    if (!(job.records[job.kind_at + record] & kHasDelta)) continue;
    require_format(load_le<uint16_t>(job.codes + 2 * index) == 0, "lorenzo: nonzero code at an outlier position");
    const U stored = load_le<U>(job.records + job.delta_at + W * delta++);
    require_format(!(zigzag(stored) < job.code_limit), "lorenzo: stored delta that fits a code");
    d[index - i] = stored;
  }
  throw_chunk_error(reconstruct<T, Rank, Convert, false>(codes, d, len, acc, q, P, dst, job.code_limit, job.eb2));
}

// First pass over slab k: every sum starts from zero at the slab's first unit.
// Slab 0 has no carry, so it converts at once; the others store their local
// sums as U in the output and keep their last unit for the carries.
template <typename T, int Rank>
void decode_slab(DecodeJob<T>& job, size_t k) {
  using U = typename Traits<T>::U;
  const Shape& s = job.shape;
  const SlabGrid& g = job.grid;
  const size_t first = g.first_unit(k), last = g.first_unit(k + 1);
  size_t record = job.slab_record[k], delta = job.slab_delta[k];
  std::unique_ptr<U[]> d(new U[std::min(s.nx, kDecodeChunk)]);
  // q: the y sums of the current plane's rows; P: the z sums of the slab's planes.
  std::vector<U> q(Rank >= 2 ? s.nx : 0), P(Rank == 3 ? g.unit : 0);
  const bool convert = k == 0;
  // len elements from i along one row (rank 1: the slab's segment of the only row).
  auto run = [&](size_t i, size_t len, U* q_row, U* P_row) {
    U acc = 0;
    for (size_t x = 0; x < len;) {
      const size_t chunk = std::min(len - x, kDecodeChunk);
      U* q_chunk = Rank >= 2 ? q_row + x : nullptr;
      U* P_chunk = Rank == 3 ? P_row + x : nullptr;
      if (convert) reconstruct_chunk<T, Rank, true>(job, i + x, chunk, record, delta, acc, q_chunk, P_chunk, d.get());
      else reconstruct_chunk<T, Rank, false>(job, i + x, chunk, record, delta, acc, q_chunk, P_chunk, d.get());
      x += chunk;
    }
    return acc;
  };
  U* carry_out = job.carry.empty() ? nullptr : job.carry.data() + k * g.unit;
  if (Rank == 1) {
    const U acc = run(g.begin(k), g.begin(k + 1) - g.begin(k), nullptr, nullptr);
    if (carry_out) carry_out[0] = acc;
  } else if (Rank == 2) {
    for (size_t y = first; y < last; ++y) run(y * s.nx, s.nx, q.data(), nullptr);
    if (carry_out) std::copy(q.begin(), q.end(), carry_out);
  } else {
    for (size_t z = first; z < last; ++z) {
      std::fill(q.begin(), q.end(), U{0});
      for (size_t y = 0; y < s.ny; ++y) run((z * s.ny + y) * s.nx, s.nx, q.data(), P.data() + y * s.nx);
    }
    if (carry_out) std::copy(P.begin(), P.end(), carry_out);
  }
}

// Second pass over [begin, end) of slab k > 0: add the carry (the last units of
// all earlier slabs, summed) to the stored local sums, check the range, convert.
template <typename T>
void add_carry(const DecodeJob<T>& job, size_t k, size_t begin, size_t end) {
  using I = typename Traits<T>::I;
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  constexpr U kPMax = static_cast<U>(Traits<T>::kPMax);
  const size_t unit = job.grid.unit;
  const U* carry = job.carry.data() + k * unit;
  const T eb2 = job.eb2;
  bool bad = false;
  auto convert = [&](uint8_t* dst, size_t len, const U* add, bool broadcast) {
    for (size_t j = 0; j < len; ++j) {
      const U v = static_cast<U>(load_le<U>(dst + W * j) + add[broadcast ? 0 : j]);
      bad |= static_cast<U>(v + kPMax) > static_cast<U>(2 * kPMax);
      const T x = static_cast<T>(static_cast<I>(v)) * eb2;
      std::memcpy(dst + W * j, &x, W);
    }
  };
  if (unit == 1) {
    convert(job.dst + W * begin, end - begin, carry, true);
  } else {
    size_t at = (begin - job.grid.begin(k)) % unit;
    for (size_t i = begin; i < end;) {
      const size_t len = std::min(end - i, unit - at);
      convert(job.dst + W * i, len, carry + at, false);
      i += len;
      at = 0;
    }
  }
  require_format(!bad, "lorenzo: prequantized value out of range");
}

// Decodes into *out (sized here, after validation) or, when out is null, into
// dst, which holds n * W bytes.
template <typename T>
void decode_typed(ByteSpan codes, ByteSpan outliers, const Shape& s, const Config& config, Bytes* out, uint8_t* dst,
                  const Executor& exec) {
  using U = typename Traits<T>::U;
  constexpr size_t W = sizeof(T);
  const size_t n = s.n;
  require_format(codes.size / 2 == n && codes.size % 2 == 0, "lorenzo: code stream size does not match dims");
  require_format(outliers.size >= kHeaderBytes, "lorenzo: outlier stream truncated");
  const uint64_t count = load_le<uint64_t>(outliers.data);
  const uint64_t deltas = load_le<uint64_t>(outliers.data + 8);
  const uint64_t raws = load_le<uint64_t>(outliers.data + 16);
  require_format(count <= n && deltas <= count && raws <= count, "lorenzo: outlier counts out of range");
  DecodeJob<T> job;
  job.index_width = n <= (uint64_t{1} << 32) ? 4 : 8;
  // count <= n <= SIZE_MAX / 32, so none of these sums can overflow.
  job.kind_at = kHeaderBytes + count * job.index_width;
  job.delta_at = job.kind_at + count;
  const size_t raw_at = job.delta_at + deltas * W;
  require_format(outliers.size == raw_at + raws * W, "lorenzo: outlier stream size does not match its counts");
  job.codes = codes.data;
  job.records = outliers.data;
  job.count = count;
  job.shape = s;
  job.grid = make_slab_grid(s, exec.concurrency());
  const SlabGrid& g = job.grid;
  const uint8_t* o = outliers.data;
  // Validate the records (in order) and find where each slab's records start.
  job.slab_record.assign(g.slabs, count);
  job.slab_delta.assign(g.slabs, deltas);
  {
    uint64_t previous = 0, a = 0, w = 0;
    size_t next_slab = 0;
    for (size_t r = 0; r < count; ++r) {
      const uint64_t index = job.index_of(r);
      require_format(index < n && (r == 0 || index > previous), "lorenzo: outlier indices not increasing");
      previous = index;
      for (; next_slab < g.slabs && index >= g.begin(next_slab); ++next_slab) {
        job.slab_record[next_slab] = r;
        job.slab_delta[next_slab] = a;
      }
      const uint8_t kind = o[job.kind_at + r];
      require_format(kind != 0 && kind <= 7, "lorenzo: bad outlier kind");
      require_format((kind & kValueMask) != kValueFill || config.has_fill, "lorenzo: fill outlier without fill value");
      a += (kind & kHasDelta) != 0;
      w += (kind & kValueMask) == kValueRaw;
    }
    require_format(a == deltas && w == raws, "lorenzo: outlier kinds do not match the counts");
  }
  if (out) {
    out->resize(n * W);  // every byte is written below
    dst = out->data();
  }
  if (n == 0) return;

  job.code_limit = static_cast<U>(2 * config.radius);  // valid codes: 0 .. 2R-1
  job.eb2 = static_cast<T>(config.eb) * 2;
  job.dst = dst;
  if (g.slabs > 1) job.carry.resize(g.slabs * g.unit);
  exec.parallel_for(g.slabs, [&](size_t k) {
    FloatStateGuard guard;
    if (g.rank == 3) decode_slab<T, 3>(job, k);
    else if (g.rank == 2) decode_slab<T, 2>(job, k);
    else decode_slab<T, 1>(job, k);
  });
  if (g.slabs > 1) {
    // carry[k] = sum of the last units of slabs 0 .. k-1, in place, back to front.
    U* c = job.carry.data();
    for (size_t k = g.slabs - 1; k >= 1; --k) {
      U* own = c + k * g.unit;
      std::copy(c + (k - 1) * g.unit, c + k * g.unit, own);
    }
    std::fill(c, c + g.unit, U{0});
    for (size_t k = 2; k < g.slabs; ++k)
      for (size_t j = 0; j < g.unit; ++j) c[k * g.unit + j] = static_cast<U>(c[k * g.unit + j] + c[(k - 1) * g.unit + j]);
    struct Item {
      size_t slab, begin, end;
    };
    std::vector<Item> items;
    for (size_t k = 1; k < g.slabs; ++k)
      for (size_t b = g.begin(k), e = g.begin(k + 1); b < e; b += std::min(e - b, kBlockElems))
        items.push_back({k, b, std::min(e, b + kBlockElems)});
    exec.parallel_for(items.size(), [&](size_t t) {
      FloatStateGuard guard;
      add_carry<T>(job, items[t].slab, items[t].begin, items[t].end);
    });
  }

  // Specials: p must be 0 there. Every accepted p converts to a nonzero value
  // unless p == 0 (|(T)p * eb2| >= eb2 > 0 otherwise), so the converted bits say it.
  const U sign_bit = U{1} << (8 * W - 1);
  for (size_t r = 0, w = 0; r < count; ++r) {
    const uint8_t value = o[job.kind_at + r] & kValueMask;
    if (value == kValueQuantized) continue;
    const uint64_t index = job.index_of(r);
    require_format(load_le<U>(dst + index * W) == 0, "lorenzo: special element with a nonzero prequantized value");
    U bits = value == kValueRaw ? load_le<U>(o + raw_at + W * w++)
             : value == kValueFill ? static_cast<U>(config.fill_bits)
                                   : sign_bit;
    store_le<U>(dst + index * W, bits);
  }
}

void check_width(unsigned width) {
  if (width != 4 && width != 8) throw UsageError("lorenzo: element width must be 4 or 8, got " + std::to_string(width));
}

}  // namespace

void encode(ByteSpan in, const std::vector<size_t>& dims, const Config& config, double user_bound, Streams& out,
            const Executor& exec, size_t max_outlier_bytes) {
  check_width(config.width);
  const Shape s = make_shape(dims);
  if (config.width == 4) check_config<float>(config);
  else check_config<double>(config);
  if (!(user_bound > 0) || !std::isfinite(user_bound)) throw UsageError("lorenzo: user bound must be > 0 and finite");
  if (in.size / config.width != s.n || in.size % config.width != 0)
    throw UsageError("lorenzo: input size does not match dims");
  if (config.width == 4) encode_typed<float>(in, s, config, user_bound, out, max_outlier_bytes, exec);
  else encode_typed<double>(in, s, config, user_bound, out, max_outlier_bytes, exec);
}

namespace {
void decode_any(ByteSpan codes, ByteSpan outliers, const std::vector<size_t>& dims, const Config& config, Bytes* out,
                uint8_t* dst, const Executor& exec) {
  check_width(config.width);
  const Shape s = make_shape(dims);
  if (config.width == 4) {
    check_config<float>(config);
    decode_typed<float>(codes, outliers, s, config, out, dst, exec);
  } else {
    check_config<double>(config);
    decode_typed<double>(codes, outliers, s, config, out, dst, exec);
  }
}
}  // namespace

void decode(ByteSpan codes, ByteSpan outliers, const std::vector<size_t>& dims, const Config& config, Bytes& out,
            const Executor& exec) {
  decode_any(codes, outliers, dims, config, &out, nullptr, exec);
}

void decode_into(ByteSpan codes, ByteSpan outliers, const std::vector<size_t>& dims, const Config& config,
                 uint8_t* dst, const Executor& exec) {
  decode_any(codes, outliers, dims, config, nullptr, dst, exec);
}

}  // namespace fz::lorenzo
