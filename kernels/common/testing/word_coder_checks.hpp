// Checks shared by the word coders whose streams are a 64-bit length, a table
// of 16-bit sub-chunk sizes and the sub-chunks (rze, rre): round trips, raw
// storage of random data, threads giving the same bytes, bad word sizes,
// truncations and bit flips. Stage-specific checks (pinned bytes, hostile
// streams built by hand) stay in each stage's test.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "common/blocks.hpp"
#include "common/bytes.hpp"
#include "common/error.hpp"
#include "common/executor.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/thread_executor.hpp"

namespace fz::testing {

inline constexpr unsigned kWordSizes[] = {1, 2, 4, 8};
inline constexpr size_t kMiB = size_t{1} << 20;

// A stage's encode and decode, with Bytes-returning wrappers.
struct WordCoder {
  void (*encode_into)(ByteSpan in, unsigned word_size, Bytes& out, const Executor& exec);
  void (*decode_into)(ByteSpan in, unsigned word_size, Bytes& out, size_t max_out, const Executor& exec);

  Bytes encode(const Bytes& in, unsigned word_size, const Executor& exec = serial_executor()) const {
    Bytes out;
    encode_into(in, word_size, out, exec);
    return out;
  }
  Bytes decode(const Bytes& in, unsigned word_size, size_t max_out = 64 * kMiB,
               const Executor& exec = serial_executor()) const {
    Bytes out;
    decode_into(in, word_size, out, max_out, exec);
    return out;
  }
};

inline uint64_t stored_length(const Bytes& stream) { return load_le<uint64_t>(stream.data()); }
inline uint16_t stored_size(const Bytes& stream, size_t chunk) {
  return load_le<uint16_t>(stream.data() + 8 + 2 * chunk);
}

// What RZE sees in the lossless presets: deltas of a smooth signal, zigzagged,
// then bit-shuffled (plane q of each 32-word group holds bit q of its words),
// so the high planes are all zero.
// Bytes that are zero with a probability changing every 1000 bytes (from
// 1/64 to 63/64 and back), so that the kept bytes of a sub-chunk fall at
// every offset and count a coder's packing of them can meet.
inline Bytes varying_density_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes out(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const unsigned stretch = static_cast<unsigned>((i / 1000) % 126);
    const unsigned zero_in_64 = 1 + (stretch < 63 ? stretch : 125 - stretch);
    if (rng() % 64 >= zero_in_64) out[i] = static_cast<uint8_t>(1 + rng() % 255);
  }
  return out;
}

inline Bytes bitshuffled_smooth(size_t n) {
  const Bytes smooth = smooth_words(n, 4, 7);
  Bytes out(n, 0);
  const size_t groups = n / 128;
  uint32_t previous = 0;
  for (size_t g = 0; g < groups; ++g) {
    uint32_t planes[32] = {};
    for (unsigned j = 0; j < 32; ++j) {
      const uint32_t value = load_le<uint32_t>(smooth.data() + (g * 32 + j) * 4);
      const int32_t delta = static_cast<int32_t>(value - previous);
      previous = value;
      const uint32_t zigzag = (static_cast<uint32_t>(delta) << 1) ^ static_cast<uint32_t>(delta >> 31);
      for (unsigned q = 0; q < 32; ++q) planes[q] |= ((zigzag >> q) & 1u) << j;
    }
    for (unsigned q = 0; q < 32; ++q) store_le<uint32_t>(out.data() + g * 128 + q * 4, planes[q]);
  }
  return out;
}

// Every standard input at every word size: the stored length is the input's,
// and decoding with max_out = that length gives the input back.
inline void expect_word_coder_round_trips(const WordCoder& coder) {
  for (const auto& input : standard_inputs()) {
    for (unsigned k : kWordSizes) {
      SCOPED_TRACE(input.name + " k=" + std::to_string(k));
      const Bytes coded = coder.encode(input.bytes, k);
      ASSERT_EQ(stored_length(coded), input.bytes.size());
      ASSERT_EQ(coder.decode(coded, k, input.bytes.size()), input.bytes);
    }
  }
}

// Random data (3 blocks + 100 bytes) is stored raw: every size is the
// sub-chunk's length and the payload is the input itself.
inline void expect_random_data_stored_raw(const WordCoder& coder) {
  for (unsigned k : kWordSizes) {
    const Bytes in = random_bytes(3 * kBlockBytes + 100, 42 + k);
    const Bytes coded = coder.encode(in, k);
    const size_t chunks = block_count(in.size());
    ASSERT_EQ(coded.size(), 8 + 2 * chunks + in.size());
    for (size_t i = 0; i < chunks; ++i) EXPECT_EQ(stored_size(coded, i), block_length(in.size(), i));
    EXPECT_TRUE(std::equal(in.begin(), in.end(), coded.begin() + 8 + 2 * chunks));
  }
}

// For each input and word size: encode on 4 threads gives the serial bytes,
// and decode on 4 threads gives the input back.
inline void expect_threads_give_the_same_bytes(const WordCoder& coder, const std::vector<Bytes>& inputs) {
  const ThreadExecutor threads(4);
  for (const auto& in : inputs) {
    for (unsigned k : kWordSizes) {
      const Bytes serial = coder.encode(in, k);
      EXPECT_EQ(coder.encode(in, k, threads), serial);
      EXPECT_EQ(coder.decode(serial, k, in.size(), threads), in);
    }
  }
}

// Each of `bad_word_sizes` is a UsageError for encode (10 zero bytes) and
// decode (8 zero bytes, max_out 100).
inline void expect_bad_word_sizes_refused(const WordCoder& coder, std::initializer_list<unsigned> bad_word_sizes) {
  Bytes out;
  for (unsigned k : bad_word_sizes) {
    EXPECT_THROW(coder.encode_into(Bytes(10, 0), k, out, serial_executor()), UsageError);
    EXPECT_THROW(coder.decode_into(Bytes(8, 0), k, out, 100, serial_executor()), UsageError);
  }
}

// At every word size `in` round-trips, and every proper prefix of its stream
// is a FormatError.
inline void expect_every_truncation_refused(const WordCoder& coder, const Bytes& in) {
  for (unsigned k : kWordSizes) {
    const Bytes coded = coder.encode(in, k);
    ASSERT_EQ(coder.decode(coded, k), in);
    for (size_t len = 0; len < coded.size(); ++len) {
      Bytes cut(coded.begin(), coded.begin() + static_cast<std::ptrdiff_t>(len));
      EXPECT_THROW(coder.decode(cut, k), FormatError) << "k=" << k << " length " << len;
    }
  }
}

// 3000 streams of `in` per word size with 1 to 3 flipped bits (a quarter of
// them in the first 40 bytes): each decodes (max_out 4 MiB) to the stored
// length or is a FormatError, and at least one is a FormatError.
inline void expect_bit_flips_give_an_error_or_a_correct_length(const WordCoder& coder, const Bytes& in,
                                                               uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (unsigned k : kWordSizes) {
    const Bytes coded = coder.encode(in, k);
    size_t errors = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      Bytes hostile = coded;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        // Mostly the payload, sometimes the header and size table.
        const size_t at = (rng() % 4 == 0) ? rng() % std::min<size_t>(hostile.size(), 40) : rng() % hostile.size();
        hostile[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
      try {
        const Bytes out = coder.decode(hostile, k, 4 * kMiB);
        EXPECT_EQ(out.size(), stored_length(hostile));
      } catch (const FormatError&) {
        ++errors;
      }
    }
    EXPECT_GT(errors, 0u) << "k=" << k;
  }
}

}  // namespace fz::testing
