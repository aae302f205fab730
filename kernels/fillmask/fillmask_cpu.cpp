// CPU fill-mask stage (stream format: fillmask.hpp). Encoding is three passes
// so that the carried-forward value at a block start never depends on the
// thread count: (1) per 16 KiB block, in parallel, write the mask bytes and the
// values with the carry restarted inside the block, and record where the
// block's first non-fill element is and what its last one is; (2) a sequential
// scan over the blocks gives each block its incoming carry (the chunk's first
// non-fill element before any was seen, 0 if there is none); (3) in parallel,
// overwrite each block's leading fill run with that incoming carry.
// Decoding is a copy plus a scatter of the fill bits at the set mask bits.
#include "fillmask/fillmask.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "common/blocks.hpp"
#include "common/error.hpp"

namespace fz::fillmask {
namespace {

constexpr size_t kNone = ~size_t{0};

void check_parameters(unsigned width, uint64_t fill) {
  if (width != 1 && width != 2 && width != 4 && width != 8)
    throw UsageError("fillmask: word width must be 1, 2, 4 or 8 bytes, got " + std::to_string(width));
  if (width < 8 && (fill >> (8 * width)) != 0)
    throw UsageError("fillmask: fill value has bits above the element width");
}

size_t mask_bytes(size_t n) { return n / 8 + (n % 8 != 0 ? 1 : 0); }

// What pass 1 learns about one block.
struct BlockSummary {
  size_t first = kNone;  // index (within the block) of the first non-fill element
  uint64_t last = 0;     // bits of the last non-fill element, valid when first != kNone
};

template <typename T>
void encode_typed(ByteSpan in, T fill, Streams& out, const Executor& exec) {
  const size_t n = in.size / sizeof(T);
  out.values.resize(in.size);
  out.mask.resize(mask_bytes(n));
  if (n == 0) return;
  constexpr size_t kPerBlock = kBlockBytes / sizeof(T);  // a multiple of 8
  const size_t blocks = block_count(in.size);
  std::vector<BlockSummary> summary(blocks);
  const uint8_t* src = in.data;
  uint8_t* values = out.values.data();
  uint8_t* mask = out.mask.data();

  exec.parallel_for(blocks, [&](size_t block) {
    const size_t begin = block * kPerBlock;
    const size_t end = begin + kPerBlock < n ? begin + kPerBlock : n;
    T carry = 0;
    size_t first = kNone;
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
      unsigned bits = 0;
      for (unsigned k = 0; k < 8; ++k) {
        const T x = load_le<T>(src + (i + k) * sizeof(T));
        const bool is_fill = x == fill;
        bits |= unsigned{is_fill} << k;
        carry = is_fill ? carry : x;
        store_le<T>(values + (i + k) * sizeof(T), carry);
      }
      mask[i / 8] = static_cast<uint8_t>(bits);
      if (first == kNone && bits != 0xFF) first = i - begin + static_cast<size_t>(__builtin_ctz(~bits));
    }
    if (i < end) {  // the chunk's last, partial mask byte
      unsigned bits = 0;
      for (unsigned k = 0; i + k < end; ++k) {
        const T x = load_le<T>(src + (i + k) * sizeof(T));
        const bool is_fill = x == fill;
        bits |= unsigned{is_fill} << k;
        if (!is_fill && first == kNone) first = i + k - begin;
        carry = is_fill ? carry : x;
        store_le<T>(values + (i + k) * sizeof(T), carry);
      }
      mask[i / 8] = static_cast<uint8_t>(bits);
    }
    summary[block].first = first;
    summary[block].last = carry;
  });

  // Pass 2: incoming carry of every block, sequential over blocks only.
  T incoming = 0;
  for (size_t block = 0; block < blocks; ++block)
    if (summary[block].first != kNone) {
      incoming = load_le<T>(src + (block * kPerBlock + summary[block].first) * sizeof(T));
      break;
    }
  std::vector<T> carry_in(blocks);
  for (size_t block = 0; block < blocks; ++block) {
    carry_in[block] = incoming;
    if (summary[block].first != kNone) incoming = static_cast<T>(summary[block].last);
  }

  // Pass 3: each block's leading fill run takes the incoming carry.
  exec.parallel_for(blocks, [&](size_t block) {
    const size_t begin = block * kPerBlock;
    const size_t length = (begin + kPerBlock < n ? kPerBlock : n - begin);
    const size_t lead = summary[block].first == kNone ? length : summary[block].first;
    const T value = carry_in[block];
    for (size_t i = begin; i < begin + lead; ++i) store_le<T>(values + i * sizeof(T), value);
  });
}

// Into `dst` (values.size bytes), which may be the values themselves (in place).
template <typename T>
void decode_typed(ByteSpan values, ByteSpan mask, T fill, uint8_t* dst, const Executor& exec) {
  const size_t n = values.size / sizeof(T);
  if (n == 0) return;
  constexpr size_t kPerBlock = kBlockBytes / sizeof(T);
  const bool in_place = dst == values.data;
  exec.parallel_for(block_count(values.size), [&](size_t block) {
    const size_t begin = block * kPerBlock;
    const size_t end = begin + kPerBlock < n ? begin + kPerBlock : n;
    if (!in_place) std::memcpy(dst + begin * sizeof(T), values.data + begin * sizeof(T), (end - begin) * sizeof(T));
    for (size_t byte = begin / 8; byte < mask_bytes(end); ++byte) {
      unsigned bits = mask.data[byte];
      while (bits != 0) {
        const size_t i = byte * 8 + static_cast<size_t>(__builtin_ctz(bits));
        store_le<T>(dst + i * sizeof(T), fill);
        bits &= bits - 1;
      }
    }
  });
}

}  // namespace

void encode(ByteSpan in, unsigned width, uint64_t fill, Streams& out, const Executor& exec) {
  check_parameters(width, fill);
  if (in.size % width != 0)
    throw UsageError("fillmask: input size " + std::to_string(in.size) + " is not a multiple of the width");
  switch (width) {
    case 1: encode_typed<uint8_t>(in, static_cast<uint8_t>(fill), out, exec); break;
    case 2: encode_typed<uint16_t>(in, static_cast<uint16_t>(fill), out, exec); break;
    case 4: encode_typed<uint32_t>(in, static_cast<uint32_t>(fill), out, exec); break;
    default: encode_typed<uint64_t>(in, fill, out, exec); break;
  }
}

namespace {

// The fill elements put back into `dst` (the values' bytes, copied there
// unless dst is the values themselves); the streams already checked.
void decode_to(ByteSpan values, ByteSpan mask, unsigned width, uint64_t fill, uint8_t* dst, const Executor& exec) {
  switch (width) {
    case 1: decode_typed<uint8_t>(values, mask, static_cast<uint8_t>(fill), dst, exec); break;
    case 2: decode_typed<uint16_t>(values, mask, static_cast<uint16_t>(fill), dst, exec); break;
    case 4: decode_typed<uint32_t>(values, mask, static_cast<uint32_t>(fill), dst, exec); break;
    default: decode_typed<uint64_t>(values, mask, fill, dst, exec); break;
  }
}

void check_streams(ByteSpan values, ByteSpan mask, unsigned width, uint64_t fill, size_t max_out) {
  check_parameters(width, fill);
  require_format(values.size % width == 0, "fillmask: values stream is not a whole number of elements");
  require_format(values.size <= max_out, "fillmask: decoded chunk larger than allowed");
  const size_t n = values.size / width;
  require_format(mask.size == mask_bytes(n), "fillmask: mask stream size does not match the element count");
  require_format(n % 8 == 0 || (mask.data[mask.size - 1] >> (n % 8)) == 0, "fillmask: mask padding bits set");
}

}  // namespace

void decode(ByteSpan values, ByteSpan mask, unsigned width, uint64_t fill, Bytes& out, size_t max_out,
            const Executor& exec) {
  check_streams(values, mask, width, fill, max_out);
  out.resize(values.size);
  decode_to(values, mask, width, fill, out.data(), exec);
}

void decode_in_place(uint8_t* values, size_t size, ByteSpan mask, unsigned width, uint64_t fill, size_t max_out,
                     const Executor& exec) {
  const ByteSpan span(values, size);
  check_streams(span, mask, width, fill, max_out);
  decode_to(span, mask, width, fill, values, exec);
}

}  // namespace fz::fillmask
