// CPU Lorenzo decoder (stream format: lorenzo.hpp, docs/FORMAT.md).
//
// Decoding inverts the delta operator with inclusive prefix sums along x, y and z
// (any order gives the same p), fused into one pass per slab of whole units of
// the slowest axis with extent > 1 (planes, rows, or x segments for 1-D). Per
// row chunk: codes -> deltas (code = zigzag(delta); code 0 is delta 0), the
// stored deltas written over the outlier positions (whose code must be 0), then
// per element the running x sum, plus the running y sum of the plane's rows,
// plus the running z sum of the slab's planes, and x' = (T)p * eb2 with the range
// check, all while the row is in cache (reconstruct_cpu.hpp). Slab 0 converts at
// once; a later slab's sums start from zero, so they are stored as integers and
// a second pass adds its carry (the last units of all earlier slabs, summed) and
// converts. One thread gets one slab and no second pass; the slab count changes
// only speed. Specials are patched last.
// All integer work is modulo 2^(8*width) (unsigned), which is exact because
// every final p fits the signed type; it also keeps hostile streams free of UB.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.hpp"
#include "common/float_state.hpp"
#include "lorenzo/arguments_cpu.hpp"
#include "lorenzo/lorenzo.hpp"
#include "lorenzo/lorenzo_rules.hpp"
#include "lorenzo/reconstruct_cpu.hpp"

namespace fz::lorenzo {
namespace {

using namespace rules;  // the per-element rules the GPU shares
using namespace detail;

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
  job.index_width = index_width_of(n);
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

void decode_any(ByteSpan codes, ByteSpan outliers, const std::vector<size_t>& dims, const Config& config, Bytes* out,
                uint8_t* dst, const Executor& exec) {
  const Shape s = checked_arguments(dims, config);
  if (config.width == 4) decode_typed<float>(codes, outliers, s, config, out, dst, exec);
  else decode_typed<double>(codes, outliers, s, config, out, dst, exec);
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
