// CPU direct quantizer, decoder (stream format: quantize.hpp, docs/FORMAT.md):
// the params read and checked, ABS/NOA codes to values block by block (with
// SSE2 / AVX2 loops where the baseline compiler does not vectorise), REL and
// CONSTANT element by element, the outliers placed over the zero codes.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "common/blocks.hpp"
#include "common/cpu_features.hpp"
#include "common/error.hpp"
#include "common/float_state.hpp"
#include "quantize/quantize.hpp"
#include "quantize/quantize_rules.hpp"

namespace fz::quantize {
namespace {

using namespace rules;  // format constants, lg and pw, shared with the GPU

template <typename T>
void check_params_typed(const Params& p) {
  using U = UintOf<T>;
  const T step = from_bits<T>(static_cast<U>(p.step_bits));
  require_format(p.step_bits <= std::numeric_limits<U>::max(), "quantize: step wider than the element");
  switch (p.method) {
    case Method::kLossless:
      require_format(p.step_bits == 0 && p.enforced_bound == 0, "quantize: lossless params carry a step");
      break;
    case Method::kConstant:
      require_format(p.mode == Mode::kNoa, "quantize: constant method outside NOA");
      require_format(!is_nan_or_inf<T>(static_cast<U>(p.step_bits)), "quantize: constant is not finite");
      require_format(p.enforced_bound == 0, "quantize: constant params carry a bound");
      break;
    case Method::kQuantized:
      require_format(std::isfinite(p.enforced_bound) && p.enforced_bound > 0, "quantize: bad enforced bound");
      if (p.mode == Mode::kRel) {
        require_format(step > T(0) && step <= T(2), "quantize: REL step out of range");
      } else {
        constexpr T kMaxStep = static_cast<T>(std::numeric_limits<T>::max_exponent == 128 ? 0x1p126 : 0x1p1022);
        require_format(step >= T(2) * std::numeric_limits<T>::min() && step <= kMaxStep,
                       "quantize: ABS/NOA step out of range");
      }
      break;
  }
}

// ABS/NOA codes of one block: every element gets (T)unzigzag(code - 1) * step,
// outliers (code 0) included, in a loop without data-dependent branches that
// the compiler vectorises; the outliers are written over afterwards. Returns
// the number of zero codes; false in `ok` when a code is out of range.
// ABS/NOA codes of one block: every element gets (T)unzigzag(code - 1) * step,
// outliers (code 0) included, without data-dependent branches; the outliers
// are written over afterwards. Returns the number of zero codes; `ok` false
// when a code is out of range. GCC does not vectorise this loop for x86-64's
// baseline SSE2 (no unsigned or 64-bit compares, no int64 -> double), so the
// SSE2 loops below are written out; the scalar loop does the tail and the
// other targets and gives the same values.
template <typename T>
size_t decode_abs_values_scalar(const uint8_t* codes, size_t n, uint8_t* out, T step, UintOf<T>& out_of_range) {
  using U = UintOf<T>;
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) {
    const U code = load_le<U>(codes + i * sizeof(T));
    const U z = static_cast<U>(code - 1);
    zeros += code == 0;
    out_of_range |= static_cast<U>((code != 0) & (z > static_cast<U>(kAbsMaxZigzag<T>)));
    store_le<U>(out + i * sizeof(T), to_bits(static_cast<T>(unzigzag(z)) * step));
  }
  return zeros;
}

#if defined(__SSE2__)
// float: z < 2^30 for a valid code, so unzigzag fits int32 and cvtdq2ps is the
// same correctly rounded conversion as the scalar int64 -> float.
size_t decode_abs_values_sse2(const uint8_t* codes, size_t n, uint8_t* out, float step, uint32_t& out_of_range,
                              size_t& done) {
  const __m128i one = _mm_set1_epi32(1);
  const __m128 step4 = _mm_set1_ps(step);
  __m128i zero_count = _mm_setzero_si128(), high = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128i code = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 4 * i));
    const __m128i is_zero = _mm_cmpeq_epi32(code, _mm_setzero_si128());
    const __m128i z = _mm_sub_epi32(code, one);
    high = _mm_or_si128(high, _mm_andnot_si128(is_zero, z));
    zero_count = _mm_sub_epi32(zero_count, is_zero);
    const __m128i b = _mm_xor_si128(_mm_srli_epi32(z, 1), _mm_sub_epi32(_mm_setzero_si128(), _mm_and_si128(z, one)));
    _mm_storeu_ps(reinterpret_cast<float*>(out + 4 * i), _mm_mul_ps(_mm_cvtepi32_ps(b), step4));
  }
  alignas(16) uint32_t lanes[4], bits[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), zero_count);
  _mm_store_si128(reinterpret_cast<__m128i*>(bits), high);
  out_of_range |= ((bits[0] | bits[1] | bits[2] | bits[3]) > kAbsMaxZigzag<float>) ? 1u : 0u;
  done = i;
  return size_t{lanes[0]} + lanes[1] + lanes[2] + lanes[3];
}

// double: the magic-number conversion, exact for |b| < 2^51: the bits of
// 1.5*2^52 + b, as a double, minus 1.5*2^52, is b. Blocks with a larger code
// (never seen from real bounds) redo the scalar loop, which converts exactly
// or correctly rounded; both give the same value where both apply.
size_t decode_abs_values_sse2(const uint8_t* codes, size_t n, uint8_t* out, double step, uint64_t& out_of_range,
                              size_t& done) {
  constexpr uint64_t kMagicBits = 0x4338000000000000ull;  // 1.5 * 2^52
  const __m128i one = _mm_set1_epi64x(1), magic_bits = _mm_set1_epi64x(static_cast<long long>(kMagicBits));
  const __m128d magic = _mm_castsi128_pd(magic_bits), step2 = _mm_set1_pd(step);
  __m128i zero_count = _mm_setzero_si128(), high = _mm_setzero_si128();
  size_t i = 0;
  for (; i + 2 <= n; i += 2) {
    const __m128i code = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 8 * i));
    const __m128i half_zero = _mm_cmpeq_epi32(code, _mm_setzero_si128());
    const __m128i is_zero = _mm_and_si128(half_zero, _mm_shuffle_epi32(half_zero, 0xB1));  // both halves zero
    const __m128i z = _mm_sub_epi64(code, one);
    high = _mm_or_si128(high, _mm_andnot_si128(is_zero, z));
    zero_count = _mm_sub_epi64(zero_count, is_zero);
    const __m128i b = _mm_xor_si128(_mm_srli_epi64(z, 1), _mm_sub_epi64(_mm_setzero_si128(), _mm_and_si128(z, one)));
    const __m128d value = _mm_sub_pd(_mm_castsi128_pd(_mm_add_epi64(b, magic_bits)), magic);
    _mm_storeu_pd(reinterpret_cast<double*>(out + 8 * i), _mm_mul_pd(value, step2));
  }
  alignas(16) uint64_t lanes[2], bits[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), zero_count);
  _mm_store_si128(reinterpret_cast<__m128i*>(bits), high);
  const uint64_t coded = bits[0] | bits[1];
  out_of_range |= coded > kAbsMaxZigzag<double> ? 1u : 0u;
  if (coded >> 52) {  // some |b| >= 2^51: convert the whole block the general way
    done = 0;
    return 0;
  }
  done = i;
  return lanes[0] + lanes[1];
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
// AVX2: the SSE2 loops above, four doubles or eight floats per step; the same
// operations, so the same values (common/cpu_features.hpp).
__attribute__((target("avx2"))) size_t decode_abs_values_avx2(const uint8_t* codes, size_t n, uint8_t* out,
                                                              float step, uint32_t& out_of_range, size_t& done) {
  const __m256i one = _mm256_set1_epi32(1);
  const __m256 step8 = _mm256_set1_ps(step);
  __m256i zero_count = _mm256_setzero_si256(), high = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i code = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 4 * i));
    const __m256i is_zero = _mm256_cmpeq_epi32(code, _mm256_setzero_si256());
    const __m256i z = _mm256_sub_epi32(code, one);
    high = _mm256_or_si256(high, _mm256_andnot_si256(is_zero, z));
    zero_count = _mm256_sub_epi32(zero_count, is_zero);
    const __m256i b =
        _mm256_xor_si256(_mm256_srli_epi32(z, 1), _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_and_si256(z, one)));
    _mm256_storeu_ps(reinterpret_cast<float*>(out + 4 * i), _mm256_mul_ps(_mm256_cvtepi32_ps(b), step8));
  }
  alignas(32) uint32_t lanes[8], bits[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), zero_count);
  _mm256_store_si256(reinterpret_cast<__m256i*>(bits), high);
  uint32_t any = 0;
  size_t zeros = 0;
  for (int k = 0; k < 8; ++k) any |= bits[k], zeros += lanes[k];
  out_of_range |= any > kAbsMaxZigzag<float> ? 1u : 0u;
  done = i;
  return zeros;
}

__attribute__((target("avx2"))) size_t decode_abs_values_avx2(const uint8_t* codes, size_t n, uint8_t* out,
                                                              double step, uint64_t& out_of_range, size_t& done) {
  constexpr uint64_t kMagicBits = 0x4338000000000000ull;  // 1.5 * 2^52
  const __m256i one = _mm256_set1_epi64x(1), magic_bits = _mm256_set1_epi64x(static_cast<long long>(kMagicBits));
  const __m256d magic = _mm256_castsi256_pd(magic_bits), step4 = _mm256_set1_pd(step);
  __m256i zero_count = _mm256_setzero_si256(), high = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i code = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 8 * i));
    const __m256i is_zero = _mm256_cmpeq_epi64(code, _mm256_setzero_si256());
    const __m256i z = _mm256_sub_epi64(code, one);
    high = _mm256_or_si256(high, _mm256_andnot_si256(is_zero, z));
    zero_count = _mm256_sub_epi64(zero_count, is_zero);
    const __m256i b =
        _mm256_xor_si256(_mm256_srli_epi64(z, 1), _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_and_si256(z, one)));
    const __m256d value = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(b, magic_bits)), magic);
    _mm256_storeu_pd(reinterpret_cast<double*>(out + 8 * i), _mm256_mul_pd(value, step4));
  }
  alignas(32) uint64_t lanes[4], bits[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), zero_count);
  _mm256_store_si256(reinterpret_cast<__m256i*>(bits), high);
  const uint64_t coded = bits[0] | bits[1] | bits[2] | bits[3];
  out_of_range |= coded > kAbsMaxZigzag<double> ? 1u : 0u;
  if (coded >> 52) {  // some |b| >= 2^51: the general conversion for the whole block
    done = 0;
    return 0;
  }
  done = i;
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

template <typename T>
size_t decode_abs_values(const uint8_t* codes, size_t n, uint8_t* out, T step, bool& ok) {
  UintOf<T> out_of_range = 0;
  size_t zeros = 0, done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (cpu_has_avx2()) {
    zeros = decode_abs_values_avx2(codes, n, out, step, out_of_range, done);
    zeros += decode_abs_values_scalar<T>(codes + done * sizeof(T), n - done, out + done * sizeof(T), step,
                                         out_of_range);
    ok = out_of_range == 0;
    return zeros;
  }
#endif
#if defined(__SSE2__)
  zeros = decode_abs_values_sse2(codes, n, out, step, out_of_range, done);
#endif
  zeros += decode_abs_values_scalar<T>(codes + done * sizeof(T), n - done, out + done * sizeof(T), step, out_of_range);
  ok = out_of_range == 0;
  return zeros;
}

// Any method and mode, one element at a time (REL, CONSTANT). Returns the
// number of outliers taken from `outliers`.
template <typename T>
size_t decode_general_block(const uint8_t* codes, size_t n, const uint8_t* outliers, uint8_t* out, const Params& p) {
  using U = UintOf<T>;
  const T step = from_bits<T>(static_cast<U>(p.step_bits));
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const U code = load_le<U>(codes + i * sizeof(T));
    U bits;
    if (code == 0) {
      bits = load_le<U>(outliers + k * sizeof(T));
      ++k;
    } else if (p.method == Method::kConstant) {
      require_format(code == 1, "quantize: constant code other than 1");
      bits = static_cast<U>(p.step_bits);
    } else {  // REL
      if (code <= 2) {
        bits = code == 1 ? U{0} : kSignBit<T>;
      } else {
        const uint64_t c = static_cast<uint64_t>(code) - 3;
        const uint64_t z = c >> 1;
        require_format(z <= kRelMaxZigzag<T>, "quantize: REL code out of range");
        T r;
        require_format(pw(static_cast<T>(unzigzag(z)) * step, r), "quantize: REL code leaves the exponent range");
        bits = to_bits(r) | ((c & 1) ? kSignBit<T> : U{0});
      }
    }
    store_le<U>(out + i * sizeof(T), bits);
  }
  return k;
}

template <typename T>
size_t count_zero_codes(const uint8_t* codes, size_t n) {
  using U = UintOf<T>;
  size_t zeros = 0;
  for (size_t i = 0; i < n; ++i) zeros += load_le<U>(codes + i * sizeof(T)) == 0;
  return zeros;
}

// Writes the outliers of one block over its zero-code elements, in order.
template <typename T>
void place_outliers(const uint8_t* codes, size_t n, const uint8_t* outliers, uint8_t* out) {
  using U = UintOf<T>;
  size_t k = 0;
  for (size_t i = 0; i < n; ++i)
    if (load_le<U>(codes + i * sizeof(T)) == 0) {
      std::memcpy(out + i * sizeof(T), outliers + k * sizeof(T), sizeof(T));
      ++k;
    }
}

// Decodes into dst (p.count elements). ABS/NOA make one vectorised pass that
// also counts each block's outliers, then place the outliers of the blocks
// that have any; REL and CONSTANT count first, then decode element by element.
template <typename T>
void decode_typed(ByteSpan codes, ByteSpan outliers, const Params& p, uint8_t* dst, const Executor& exec) {
  using U = UintOf<T>;
  check_params_typed<T>(p);
  const size_t bytes = static_cast<size_t>(p.count) * sizeof(T);
  if (p.method == Method::kLossless) {
    require_format(codes.size == 0, "quantize: lossless chunk with codes");
    require_format(outliers.size == bytes, "quantize: lossless outliers do not match the count");
    if (bytes) std::memcpy(dst, outliers.data, bytes);
    return;
  }
  require_format(codes.size == bytes, "quantize: codes do not match the element count");
  require_format(outliers.size % sizeof(T) == 0, "quantize: outlier stream is not whole elements");
  const size_t blocks = block_count(bytes);
  const auto block_elements = [&](size_t block) { return block_length(bytes, block) / sizeof(T); };
  std::vector<size_t> first(blocks + 1, 0);  // outliers before each block
  const bool abs_values = p.method == Method::kQuantized && p.mode != Mode::kRel;
  if (abs_values) {
    const T step = from_bits<T>(static_cast<U>(p.step_bits));
    std::vector<uint8_t> ok(blocks, 1);
    exec.parallel_for(blocks, [&](size_t block) {
      FloatStateGuard env;
      const size_t begin = block * kBlockBytes;
      bool block_ok = true;
      first[block + 1] = decode_abs_values<T>(codes.data + begin, block_elements(block), dst + begin, step, block_ok);
      ok[block] = block_ok;
    });
    for (size_t b = 0; b < blocks; ++b) require_format(ok[b] != 0, "quantize: code out of range");
  } else {
    exec.parallel_for(blocks, [&](size_t block) {
      first[block + 1] = count_zero_codes<T>(codes.data + block * kBlockBytes, block_elements(block));
    });
  }
  for (size_t b = 0; b < blocks; ++b) first[b + 1] += first[b];
  require_format(first[blocks] == outliers.size / sizeof(T), "quantize: outlier stream does not match the zero codes");
  exec.parallel_for(blocks, [&](size_t block) {
    const size_t begin = block * kBlockBytes;
    const uint8_t* block_outliers = outliers.data + first[block] * sizeof(T);
    if (abs_values) {
      if (first[block + 1] != first[block])
        place_outliers<T>(codes.data + begin, block_elements(block), block_outliers, dst + begin);
    } else {
      FloatStateGuard env;
      decode_general_block<T>(codes.data + begin, block_elements(block), block_outliers, dst + begin, p);
    }
  });
}

}  // namespace

Params read_params(ByteSpan params) {
  require_format(params.size == kParamsBytes, "quantize: params have the wrong size");
  const uint8_t* p = params.data;
  require_format(p[0] == kParamsVersion, "quantize: unknown params version");
  require_format(p[1] <= 2, "quantize: unknown mode");
  require_format(p[2] == 4 || p[2] == 8, "quantize: element width is not 4 or 8");
  require_format(p[3] <= 2, "quantize: unknown method");
  require_format(load_le<uint32_t>(p + 4) == 0, "quantize: reserved params bytes are not zero");
  Params out;
  out.mode = static_cast<Mode>(p[1]);
  out.width = p[2];
  out.method = static_cast<Method>(p[3]);
  out.count = load_le<uint64_t>(p + 8);
  out.step_bits = load_le<uint64_t>(p + 16);
  out.user_bound = load_le<double>(p + 24);
  out.enforced_bound = load_le<double>(p + 32);
  require_format(std::isfinite(out.user_bound) && out.user_bound > 0, "quantize: bad user bound");
  require_format(std::isfinite(out.enforced_bound) && out.enforced_bound >= 0, "quantize: bad enforced bound");
  if (out.width == 4)
    check_params_typed<float>(out);
  else
    check_params_typed<double>(out);
  return out;
}

bool BlockwiseDecoder::is_blockwise(ByteSpan params) {
  const Params p = read_params(params);
  return p.method == Method::kQuantized && p.mode != Mode::kRel;
}

BlockwiseDecoder::BlockwiseDecoder(ByteSpan outliers, ByteSpan params, size_t codes_bytes)
    : outliers_(outliers), params_(read_params(params)) {
  require_format(params_.method == Method::kQuantized && params_.mode != Mode::kRel,
                 "quantize: blockwise decoding of REL, CONSTANT or LOSSLESS params");
  if (params_.width == 4)
    check_params_typed<float>(params_);
  else
    check_params_typed<double>(params_);
  require_format(params_.count <= SIZE_MAX / params_.width && codes_bytes == params_.count * params_.width,
                 "quantize: codes do not match the element count");
  require_format(outliers.size % params_.width == 0, "quantize: outlier stream is not whole elements");
  bytes_ = codes_bytes;
  const size_t blocks = block_count(bytes_);
  zeros_.assign(blocks, 0);
  in_range_.assign(blocks, 1);
  kept_.resize(blocks);
}

void BlockwiseDecoder::consume(size_t block, const uint8_t* codes, uint8_t* dst) {
  FloatStateGuard env;
  const size_t length = block_length(bytes_, block);
  bool ok = true;
  size_t zeros;
  if (params_.width == 4) {
    zeros = decode_abs_values<float>(codes, length / 4, dst + block * kBlockBytes,
                                     from_bits<float>(static_cast<uint32_t>(params_.step_bits)), ok);
  } else {
    zeros = decode_abs_values<double>(codes, length / 8, dst + block * kBlockBytes,
                                      from_bits<double>(params_.step_bits), ok);
  }
  zeros_[block] = zeros;
  in_range_[block] = ok;
  if (zeros != 0) kept_[block].assign(codes, codes + length);  // where its outliers go
}

void BlockwiseDecoder::finish(uint8_t* dst) {
  const unsigned width = params_.width;
  size_t total = 0;
  for (size_t b = 0; b < zeros_.size(); ++b) {
    require_format(in_range_[b] != 0, "quantize: code out of range");
    total += zeros_[b];
  }
  require_format(total == outliers_.size / width, "quantize: outlier stream does not match the zero codes");
  size_t first = 0;
  for (size_t b = 0; b < zeros_.size(); ++b) {
    if (zeros_[b] != 0) {
      const size_t n = block_length(bytes_, b) / width;
      if (width == 4)
        place_outliers<float>(kept_[b].data(), n, outliers_.data + first * 4, dst + b * kBlockBytes);
      else
        place_outliers<double>(kept_[b].data(), n, outliers_.data + first * 8, dst + b * kBlockBytes);
    }
    first += zeros_[b];
  }
}

uint64_t decoded_bytes(ByteSpan params) {
  const Params p = read_params(params);
  require_format(p.count <= UINT64_MAX / p.width, "quantize: element count overflows");
  return p.count * p.width;
}

void decode_into(ByteSpan codes, ByteSpan outliers, ByteSpan params, uint8_t* dst, const Executor& exec) {
  const Params p = read_params(params);
  if (p.width == 4)
    decode_typed<float>(codes, outliers, p, dst, exec);
  else
    decode_typed<double>(codes, outliers, p, dst, exec);
}

void decode(ByteSpan codes, ByteSpan outliers, ByteSpan params, Bytes& out, size_t max_out, const Executor& exec) {
  const Params p = read_params(params);
  require_format(p.count <= max_out / p.width, "quantize: chunk larger than allowed");
  const size_t bytes = static_cast<size_t>(p.count) * p.width;
  // The stream that holds one word per element must match before allocating.
  require_format(bytes == (p.method == Method::kLossless ? outliers.size : codes.size),
                 "quantize: streams do not match the element count");
  out.resize(bytes);  // every byte is written
  decode_into(codes, outliers, params, out.data(), exec);
}

}  // namespace fz::quantize
