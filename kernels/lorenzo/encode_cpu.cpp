// CPU Lorenzo encoder (stream format: lorenzo.hpp, docs/FORMAT.md).
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
// then four codes at once where none is a record (encode_sse2.hpp).
// All integer work is modulo 2^(8*width) (unsigned), which is exact because
// every final p fits the signed type.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "common/error.hpp"
#include "common/float_state.hpp"
#include "lorenzo/arguments_cpu.hpp"
#include "lorenzo/encode_sse2.hpp"
#include "lorenzo/lorenzo.hpp"
#include "lorenzo/lorenzo_rules.hpp"

namespace fz::lorenzo {
namespace {

using namespace rules;  // the per-element rules the GPU shares
using namespace detail;

// Elements whose deltas the encoder computes and codes at a time (8-16 KiB).
constexpr size_t kEncodeChunk = 2048;

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

  const Quantizer<T> quantizer = make_quantizer<T>(config, user_bound);

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
  const size_t index_width = index_width_of(n);
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

}  // namespace

void encode(ByteSpan in, const std::vector<size_t>& dims, const Config& config, double user_bound, Streams& out,
            const Executor& exec, size_t max_outlier_bytes) {
  const Shape s = checked_arguments(dims, config);
  if (!(user_bound > 0) || !std::isfinite(user_bound)) throw UsageError("lorenzo: user bound must be > 0 and finite");
  if (in.size / config.width != s.n || in.size % config.width != 0)
    throw UsageError("lorenzo: input size does not match dims");
  if (config.width == 4) encode_typed<float>(in, s, config, user_bound, out, max_outlier_bytes, exec);
  else encode_typed<double>(in, s, config, user_bound, out, max_outlier_bytes, exec);
}

}  // namespace fz::lorenzo
