// CPU direct quantizer, encoder (stream format: quantize.hpp, docs/FORMAT.md).
//
// Work is cut into the 16 KiB blocks of common/blocks.hpp (4096 float32 or 2048
// float64 elements). Each block writes its codes in place and collects its
// outliers; the outliers are then concatenated in block order, so the streams
// are the same bytes for any thread count (docs/FORMAT.md section 0, rule 4).
//
// Why the bound is strict. The encoder computes x' with exactly the decoder's
// operations in the element's own precision T (float for float32, double for
// float64; the build has -ffp-contract=off, so `(T)b * step` is one rounded
// multiplication on both sides). It then decides |x - x'| <= B, with B the
// user's bound (ABS), a double below eb*(max-min) (NOA) or eb*|x| (REL), in
// real arithmetic, using doubles only (within_abs / within_rel of
// quantize_rules.hpp, shared with the GPU). An element that fails,
// or whose code would not fit, is an outlier and is stored bit-exactly.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/float_state.hpp"
#include "quantize/plan_cpu.hpp"
#include "quantize/quantize.hpp"
#include "quantize/quantize_plan.hpp"
#include "quantize/quantize_rules.hpp"

namespace fz::quantize {
namespace {

using namespace rules;  // format constants, the exact tests, lg and pw, shared with the GPU
using namespace detail;  // the plans

// ---------------------------------------------------------------------------
// Encoding.

template <typename T>
struct BlockOutput {
  std::vector<UintOf<T>> outliers;
};

// The code of one element (0: outlier), the reference every faster path must
// reproduce bit for bit.
template <typename T>
UintOf<T> encode_abs_element(UintOf<T> bits, const Plan<T>& plan, bool has_fill, UintOf<T> fill) {
  // NaN, inf, denormals, -0 and the fill value are outliers (bit-exact).
  if (is_nan_or_inf<T>(bits) || is_denormal_or_negative_zero<T>(bits) || (has_fill && bits == fill)) return 0;
  const T x = from_bits<T>(bits);
  const T s = x * plan.inverse;
  if (!(std::fabs(s) < kAbsLimit<T>)) return 0;
  const int64_t b = static_cast<int64_t>(std::round(s));  // half away from zero
  // (T)b is exact: |b| < 2^mantissa, or b = s already an integer in T.
  const T xr = static_cast<T>(b) * plan.step;  // the decoder's expression
  if (within_abs(static_cast<double>(x), static_cast<double>(xr), plan.check)) return abs_code<T>(b);
  if (xr == xr) {
    // x * inv rounds (by up to half an ulp of s, many bins when |s| is large
    // for float), so x may sit just past a bin edge: the neighbouring bin
    // toward x often passes. The decoder does not care which bin was chosen.
    const int64_t b2 = x > xr ? b + 1 : b - 1;
    const T xr2 = static_cast<T>(b2) * plan.step;
    if (within_abs(static_cast<double>(x), static_cast<double>(xr2), plan.check)) return abs_code<T>(b2);
  }
  return 0;
}

template <typename T>
void encode_abs_elements(const uint8_t* in, size_t n, uint8_t* codes, const Plan<T>& plan, bool has_fill,
                         UintOf<T> fill, std::vector<UintOf<T>>& outliers) {
  using U = UintOf<T>;
  for (size_t i = 0; i < n; ++i) {
    const U bits = load_le<U>(in + i * sizeof(T));
    const U code = encode_abs_element<T>(bits, plan, has_fill, fill);
    store_le<U>(codes + i * sizeof(T), code);
    if (code == 0) outliers.push_back(bits);
  }
}

#if defined(__SSE2__)
// SSE2 fast paths (GCC does not vectorise the element loop: it calls roundf and
// branches). A group of elements is coded here only when every one of them is
// an ordinary element whose first candidate passes the exact test with room
// to spare (|x - x'| < bound, no tie); any other group goes through
// encode_abs_element, so the codes are the reference's, bit for bit:
//  - round half away from zero as trunc(s + copysign(0.49999997f, s)) equals
//    std::round for every float with |s| < 2^29 (checked exhaustively; the
//    double form floor(|s| + 0.49999999999999994) is the classic exact one);
//  - (T)b * step and the double difference are the reference's operations.
size_t encode_abs_fast(const uint8_t* in, size_t n, uint8_t* codes, const Plan<float>& plan, bool has_fill,
                       uint32_t fill, std::vector<uint32_t>& outliers) {
  const __m128i exponent = _mm_set1_epi32(0x7F800000), fill4 = _mm_set1_epi32(static_cast<int>(fill));
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7FFFFFFF));
  const __m128 sign_mask = _mm_castsi128_ps(_mm_set1_epi32(static_cast<int>(0x80000000u)));
  const __m128 half_down = _mm_set1_ps(0.49999997f), limit = _mm_set1_ps(kAbsLimit<float>);
  const __m128 inverse = _mm_set1_ps(plan.inverse), step = _mm_set1_ps(plan.step);
  const __m128d abs_mask_d = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d check = _mm_set1_pd(plan.check);
  const __m128i one = _mm_set1_epi32(1);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 4 * i));
    const __m128i e = _mm_and_si128(bits, exponent);
    // Ordinary: finite, and normal or +0; and not the fill value.
    __m128i bad = _mm_or_si128(_mm_cmpeq_epi32(e, exponent),
                               _mm_andnot_si128(_mm_cmpeq_epi32(bits, _mm_setzero_si128()),
                                                _mm_cmpeq_epi32(e, _mm_setzero_si128())));
    if (has_fill) bad = _mm_or_si128(bad, _mm_cmpeq_epi32(bits, fill4));
    const __m128 x = _mm_castsi128_ps(bits);
    const __m128 s = _mm_mul_ps(x, inverse);
    const __m128 in_range = _mm_cmplt_ps(_mm_and_ps(s, abs_mask), limit);
    const __m128i b = _mm_cvttps_epi32(_mm_add_ps(s, _mm_or_ps(half_down, _mm_and_ps(s, sign_mask))));
    const __m128 xr = _mm_mul_ps(_mm_cvtepi32_ps(b), step);
    const __m128d d_low = _mm_sub_pd(_mm_cvtps_pd(x), _mm_cvtps_pd(xr));
    const __m128d d_high = _mm_sub_pd(_mm_cvtps_pd(_mm_movehl_ps(x, x)), _mm_cvtps_pd(_mm_movehl_ps(xr, xr)));
    const __m128d ok_low = _mm_cmplt_pd(_mm_and_pd(d_low, abs_mask_d), check);
    const __m128d ok_high = _mm_cmplt_pd(_mm_and_pd(d_high, abs_mask_d), check);
    const __m128 ok = _mm_shuffle_ps(_mm_castpd_ps(ok_low), _mm_castpd_ps(ok_high), _MM_SHUFFLE(2, 0, 2, 0));
    const __m128 accept = _mm_andnot_ps(_mm_castsi128_ps(bad), _mm_and_ps(in_range, ok));
    if (_mm_movemask_ps(accept) == 0xF) {
      const __m128i zigzag = _mm_xor_si128(_mm_slli_epi32(b, 1), _mm_srai_epi32(b, 31));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 4 * i), _mm_add_epi32(zigzag, one));
    } else {
      encode_abs_elements<float>(in + 4 * i, 4, codes + 4 * i, plan, has_fill, fill, outliers);
    }
  }
  return i;
}

size_t encode_abs_fast(const uint8_t* in, size_t n, uint8_t* codes, const Plan<double>& plan, bool has_fill,
                       uint64_t fill, std::vector<uint64_t>& outliers) {
  const __m128d abs_mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m128d sign_mask = _mm_castsi128_pd(_mm_set1_epi64x(static_cast<long long>(0x8000000000000000ull)));
  const __m128d smallest = _mm_set1_pd(DBL_MIN), largest = _mm_set1_pd(DBL_MAX);
  const __m128d half_down = _mm_set1_pd(0.49999999999999994), limit = _mm_set1_pd(0x1p50);
  const __m128d two52 = _mm_set1_pd(0x1p52), unit = _mm_set1_pd(1.0);
  const __m128d inverse = _mm_set1_pd(plan.inverse), step = _mm_set1_pd(plan.step), check = _mm_set1_pd(plan.check);
  const __m128i magic_bits = _mm_set1_epi64x(0x4338000000000000ll);  // 1.5 * 2^52
  const __m128d magic = _mm_castsi128_pd(magic_bits);
  const __m128i fill2 = _mm_set1_epi64x(static_cast<long long>(fill)), one = _mm_set1_epi64x(1);
  auto equal64 = [](__m128i a, __m128i b) {  // SSE2 has no 64-bit compare
    const __m128i halves = _mm_cmpeq_epi32(a, b);
    return _mm_and_si128(halves, _mm_shuffle_epi32(halves, 0xB1));
  };
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 8 * i));
    const __m128d x = _mm_castsi128_pd(bits);
    const __m128d ax = _mm_and_pd(x, abs_mask);
    // Ordinary: normal (NaN fails both compares) or +0; and not the fill value.
    __m128d good = _mm_or_pd(_mm_and_pd(_mm_cmpge_pd(ax, smallest), _mm_cmple_pd(ax, largest)),
                             _mm_castsi128_pd(equal64(bits, _mm_setzero_si128())));
    if (has_fill) good = _mm_andnot_pd(_mm_castsi128_pd(equal64(bits, fill2)), good);
    const __m128d s = _mm_mul_pd(x, inverse);
    const __m128d as = _mm_and_pd(s, abs_mask);
    const __m128d in_range = _mm_cmplt_pd(as, limit);  // |b| < 2^50: the magic conversions below are exact
    const __m128d y = _mm_add_pd(as, half_down);
    __m128d r = _mm_sub_pd(_mm_add_pd(y, two52), two52);  // y rounded to an integer
    r = _mm_sub_pd(r, _mm_and_pd(_mm_cmpgt_pd(r, y), unit));  // floor(y)
    const __m128d b = _mm_or_pd(r, _mm_and_pd(s, sign_mask));
    const __m128d xr = _mm_mul_pd(b, step);
    const __m128d ok = _mm_cmplt_pd(_mm_and_pd(_mm_sub_pd(x, xr), abs_mask), check);
    const __m128d accept = _mm_and_pd(good, _mm_and_pd(in_range, ok));
    if (_mm_movemask_pd(accept) == 0x3) {
      const __m128i b_int = _mm_sub_epi64(_mm_castpd_si128(_mm_add_pd(b, magic)), magic_bits);
      const __m128i negative = _mm_castpd_si128(_mm_cmplt_pd(b, _mm_setzero_pd()));
      const __m128i zigzag = _mm_xor_si128(_mm_slli_epi64(b_int, 1), negative);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(codes + 8 * i), _mm_add_epi64(zigzag, one));
    } else {
      encode_abs_elements<double>(in + 8 * i, 2, codes + 8 * i, plan, has_fill, fill, outliers);
    }
  }
  return i;
}
#endif

template <typename T>
void encode_abs_block(const uint8_t* in, size_t n, uint8_t* codes, const Plan<T>& plan, bool has_fill,
                      UintOf<T> fill, std::vector<UintOf<T>>& outliers) {
  size_t done = 0;
#if defined(__SSE2__)
  done = encode_abs_fast(in, n, codes, plan, has_fill, fill, outliers);
#endif
  encode_abs_elements<T>(in + done * sizeof(T), n - done, codes + done * sizeof(T), plan, has_fill, fill, outliers);
}

template <typename T>
void encode_rel_block(const uint8_t* in, size_t n, uint8_t* codes, const Plan<T>& plan, bool has_fill,
                      UintOf<T> fill, std::vector<UintOf<T>>& outliers) {
  using U = UintOf<T>;
  for (size_t i = 0; i < n; ++i) {
    const U bits = load_le<U>(in + i * sizeof(T));
    U code = 0;
    const U magnitude = bits & ~kSignBit<T>;
    if (has_fill && bits == fill) {
      code = 0;
    } else if (magnitude == 0) {
      code = bits == 0 ? 1 : 2;  // +0, -0: exact
    } else if (!is_nan_or_inf<T>(bits) && (bits & kExponentMask<T>) != 0) {
      const T a = from_bits<T>(magnitude);
      const T s = lg(a) * plan.inverse;
      if (std::fabs(s) < kRelLimit<T>) {
        const int64_t b = static_cast<int64_t>(std::round(s));
        const uint64_t z = zigzag(b);
        T r;
        if (z <= kRelMaxZigzag<T> && pw(static_cast<T>(b) * plan.step, r) &&
            within_rel(static_cast<double>(a), static_cast<double>(r), plan.check))
          code = static_cast<U>(3 + ((z << 1) | (bits >> (8 * sizeof(T) - 1))));
      }
    }
    store_le<U>(codes + i * sizeof(T), code);
    if (code == 0) outliers.push_back(bits);
  }
}

template <typename T>
void encode_constant_block(const uint8_t* in, size_t n, uint8_t* codes, UintOf<T> base,
                           std::vector<UintOf<T>>& outliers) {
  using U = UintOf<T>;
  for (size_t i = 0; i < n; ++i) {
    const U bits = load_le<U>(in + i * sizeof(T));
    const U code = bits == base ? 1 : 0;  // base is finite and not the fill value
    store_le<U>(codes + i * sizeof(T), code);
    if (code == 0) outliers.push_back(bits);
  }
}

struct Range {
  size_t count = 0;  // finite, non-fill values
  double min = 0, max = 0;
  size_t first = 0;  // element index of the first one
};

// NOA's range over finite non-fill values: min/max of a set, so the result does
// not depend on the block order; blocks are combined in index order anyway.
template <typename T>
Range finite_range(ByteSpan in, bool has_fill, UintOf<T> fill, const Executor& exec) {
  using U = UintOf<T>;
  const size_t blocks = block_count(in.size);
  std::vector<Range> partial(blocks);
  exec.parallel_for(blocks, [&](size_t block) {
    FloatStateGuard env;
    const size_t per_block = kBlockBytes / sizeof(T);
    const size_t n = block_length(in.size, block) / sizeof(T);
    const uint8_t* p = in.data + block * kBlockBytes;
    Range r;
    T lo = 0, hi = 0;
    for (size_t i = 0; i < n; ++i) {
      const U bits = load_le<U>(p + i * sizeof(T));
      if (is_nan_or_inf<T>(bits) || (has_fill && bits == fill)) continue;
      const T x = from_bits<T>(bits);
      if (r.count == 0) {
        lo = hi = x;
        r.first = block * per_block + i;
      } else {
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
      }
      ++r.count;
    }
    r.min = lo;
    r.max = hi;
    partial[block] = r;
  });
  Range total;
  for (const Range& r : partial) {
    if (r.count == 0) continue;
    if (total.count == 0) {
      total = r;
    } else {
      total.min = r.min < total.min ? r.min : total.min;
      total.max = r.max > total.max ? r.max : total.max;
      total.count += r.count;
    }
  }
  return total;
}

void write_params(Bytes& out, Mode mode, unsigned width, Method method, uint64_t count, uint64_t step_bits,
                  double user_bound, double enforced) {
  out.resize(kParamsBytes);
  detail::write_params_bytes(out.data(), mode, width, method, count, step_bits, user_bound, enforced);
}

// The encoder of one chunk: the plan is made from the whole input (NOA's
// range), then each block's codes are written on their own and its outliers
// kept apart, to be concatenated in block order at the end.
template <typename T>
class TypedEncoder final : public BlockwiseEncoder::Impl {
 public:
  using U = UintOf<T>;

  TypedEncoder(ByteSpan in, const Config& config, const Executor& exec)
      : in_(in), config_(config), count_(in.size / sizeof(T)), has_fill_(config.fill.has_value()),
        fill_(has_fill_ ? static_cast<U>(*config.fill) : 0) {
    FloatStateGuard env;
    if (config.mode == Mode::kAbs) {
      plan_ = abs_plan<T>(config.bound);
    } else if (config.mode == Mode::kRel) {
      plan_ = rel_plan<T>(config.bound);
    } else {
      const Range range = finite_range<T>(in, has_fill_, fill_, exec);
      if (range.count == 0) {
        plan_.method = Method::kLossless;  // nothing but NaN/inf/fill: all stored exactly
      } else if (range.max == range.min) {
        // Every finite non-fill value equals min (up to the sign of zero): one
        // code for the bits of the first of them, the rest (other zero, NaN,
        // inf, fill) are outliers. The bound eb*0 = 0 holds exactly.
        plan_.method = Method::kConstant;
        plan_.step = from_bits<T>(load_le<U>(in.data + range.first * sizeof(T)));
      } else {
        const double bound = noa_bound(config.bound, range.max, range.min);
        plan_ = abs_plan<T>(bound);  // LOSSLESS when the bound underflows T's normals
      }
    }
    if (plan_.method != Method::kLossless) block_outliers_.resize(block_count(count_ * sizeof(T)));
  }

  size_t codes_bytes() const override { return lossless() ? 0 : count_ * sizeof(T); }

  void encode_block(size_t block, uint8_t* codes) override {
    FloatStateGuard env;
    const size_t begin = block * kBlockBytes;
    const size_t n = block_length(count_ * sizeof(T), block) / sizeof(T);
    std::vector<U>& outliers = block_outliers_[block];
    outliers.clear();
    if (plan_.method == Method::kConstant)
      encode_constant_block<T>(in_.data + begin, n, codes, to_bits(plan_.step), outliers);
    else if (config_.mode == Mode::kRel)
      encode_rel_block<T>(in_.data + begin, n, codes, plan_, has_fill_, fill_, outliers);
    else
      encode_abs_block<T>(in_.data + begin, n, codes, plan_, has_fill_, fill_, outliers);
  }

  void finish(Bytes& outliers, Bytes& params) override {
    const uint64_t step_bits = lossless() ? 0 : to_bits(plan_.step);
    const double enforced = plan_.method == Method::kQuantized ? plan_.enforced : 0.0;
    write_params(params, config_.mode, config_.width, plan_.method, count_, step_bits, config_.bound, enforced);
    if (lossless()) {
      outliers.assign(in_.data, in_.data + count_ * sizeof(T));
      return;
    }
    size_t total = 0;
    for (const auto& o : block_outliers_) total += o.size();
    outliers.resize(total * sizeof(T));
    size_t at = 0;
    for (auto& o : block_outliers_) {
      for (U bits : o) {
        store_le<U>(outliers.data() + at, bits);
        at += sizeof(T);
      }
      std::vector<U>().swap(o);
    }
  }

 private:
  ByteSpan in_;
  Config config_;
  uint64_t count_;
  bool has_fill_;
  U fill_;
  Plan<T> plan_;
  std::vector<std::vector<U>> block_outliers_;

  bool lossless() const { return plan_.method == Method::kLossless; }
};

void check_config(ByteSpan in, const Config& config) {
  const std::string problem = config_problem(in.size, config);
  if (!problem.empty()) throw UsageError(problem);
}

}  // namespace

BlockwiseEncoder::BlockwiseEncoder(ByteSpan in, const Config& config, const Executor& exec) {
  check_config(in, config);
  if (config.width == 4)
    impl_ = std::make_unique<TypedEncoder<float>>(in, config, exec);
  else
    impl_ = std::make_unique<TypedEncoder<double>>(in, config, exec);
}

BlockwiseEncoder::~BlockwiseEncoder() = default;

void encode(ByteSpan in, const Config& config, Streams& out, const Executor& exec) {
  BlockwiseEncoder encoder(in, config, exec);
  out.codes.resize(encoder.codes_bytes());
  uint8_t* codes = out.codes.data();
  exec.parallel_for(block_count(out.codes.size()),
                    [&](size_t block) { encoder.encode_block(block, codes + block * kBlockBytes); });
  encoder.finish(out.outliers, out.params);
}

}  // namespace fz::quantize
