// The GPU CRC32C's way of splitting the work (cuda/crc32c_parallel.hpp),
// checked on the CPU: the same tile plan and the same per-lane functions the
// kernels run, put together on the host, must give crc32c() of the bytes for
// every length, alignment and split into spans. (The GPU itself is checked by
// crc32c_gpu_test.cpp.)
#include "cuda/crc32c_parallel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "common/testing/test_data.hpp"
#include "crc32c.hpp"

namespace fz::engine {
namespace {

namespace cp = crc32c_parallel;

const cp::Tables& tables() {
  static const cp::Tables t = cp::make_tables();
  return t;
}

struct HostLoad {
  void operator()(const uint8_t* p, uint32_t* w) const {
    for (int i = 0; i < 4; ++i) {
      w[i] = 0;
      for (int b = 0; b < 4; ++b) w[i] |= static_cast<uint32_t>(p[4 * i + b]) << (8 * b);
    }
  }
};

struct Span {
  const uint8_t* data;
  size_t size;
};

// What crc32c_spans does on the device, lane by lane on the host.
uint32_t emulate(const std::vector<Span>& spans, uint32_t crc = 0) {
  const cp::Tables& t = tables();
  uint64_t total = 0;
  for (const Span& s : spans) total += s.size;
  const uint32_t tile_bytes = cp::tile_bytes_for(total);
  uint32_t tiles_xor = 0;
  uint64_t before = 0;
  for (const Span& s : spans) {
    if (s.size == 0) continue;
    const uint32_t head = cp::head_bytes(reinterpret_cast<uintptr_t>(s.data), s.size);
    const uint64_t tiles = cp::tile_count(s.size, head, tile_bytes);
    for (uint64_t i = 0; i < tiles; ++i) {
      uint64_t begin = 0;
      uint32_t length = 0;
      cp::tile_range(s.size, head, tile_bytes, i, &begin, &length);
      EXPECT_GT(length, 0u);
      if (length >= cp::kRowBytes) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data + begin) % cp::kAlignment, 0u);
      }
      uint32_t tile = 0;
      for (unsigned lane = 0; lane < cp::kLanes; ++lane)
        tile ^= cp::lane_share(s.data + begin, length, lane, t.bytes, t.row_shift, t.zero_power, HostLoad{});
      tiles_xor ^= cp::append_zeros(tile, total - before - begin - length, t.zero_power);
    }
    before += s.size;
  }
  return cp::finish(tiles_xor, total, crc, t.zero_power);
}

uint32_t emulate_one(const uint8_t* data, size_t size, uint32_t crc = 0) { return emulate({{data, size}}, crc); }

TEST(Crc32cParallel, CheckValue) {
  const char* text = "123456789";
  EXPECT_EQ(emulate_one(reinterpret_cast<const uint8_t*>(text), 9), 0xE3069283u);
  EXPECT_EQ(emulate_one(nullptr, 0), 0u);
  EXPECT_EQ(emulate_one(nullptr, 0, 0x12345678u), 0x12345678u);
}

TEST(Crc32cParallel, Gf2Arithmetic) {
  const cp::Tables& t = tables();
  EXPECT_EQ(cp::gf2_multiply(cp::kOne, 0xDEADBEEFu), 0xDEADBEEFu);
  EXPECT_EQ(cp::gf2_multiply(0xDEADBEEFu, cp::kOne), 0xDEADBEEFu);
  EXPECT_EQ(cp::gf2_multiply(0x12345678u, 0x9ABCDEF0u), cp::gf2_multiply(0x9ABCDEF0u, 0x12345678u));
  // x^32 = the polynomial's lower terms.
  EXPECT_EQ(cp::gf2_multiply(cp::kOne >> 31, cp::kOne >> 1), cp::kPolynomial);
  // Appending zeros by the power tables equals feeding zero bytes one by one.
  std::mt19937_64 random(7);
  for (uint64_t n : {0ull, 1ull, 2ull, 15ull, 255ull, 256ull, 4095ull, 4096ull, 65537ull, 1000003ull}) {
    const uint32_t value = static_cast<uint32_t>(random());
    uint32_t slow = value;
    for (uint64_t i = 0; i < n; ++i) slow = (slow >> 8) ^ t.bytes[0][slow & 0xFFu];
    EXPECT_EQ(cp::append_zeros(value, n, t.zero_power), slow) << n;
  }
  // Moves compose: n then m zeros = n + m zeros, up to 2^63.
  for (int i = 0; i < 50; ++i) {
    const uint64_t n = random() >> (random() % 64), m = random() >> (1 + random() % 63);
    const uint32_t value = static_cast<uint32_t>(random());
    EXPECT_EQ(cp::append_zeros(cp::append_zeros(value, n, t.zero_power), m, t.zero_power),
              cp::append_zeros(value, n + m, t.zero_power));
  }
  // One row on by the row tables.
  const uint32_t value = 0xCAFEF00Du;
  EXPECT_EQ(cp::shift_one_row(value, t.row_shift), cp::append_zeros(value, cp::kRowBytes, t.zero_power));
}

TEST(Crc32cParallel, EveryLengthAndAlignment) {
  // The real field, repeated to cover the longest length.
  const Bytes one = fz::testing::read_field("wmag91.float");
  Bytes field;
  while (field.size() < (size_t{1} << 23) + 64) field.insert(field.end(), one.begin(), one.end());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (size_t p = 128; p <= (size_t{1} << 23); p *= 2)
    for (long d : {-17, -16, -15, -1, 0, 1, 15, 16, 17}) lengths.push_back(p + d);
  for (size_t tile : {size_t{cp::kMinTileBytes}, size_t{cp::kMaxTileBytes}})
    for (size_t k : {1, 2, 3})
      for (long d : {-4097, -1, 0, 1, 4095}) lengths.push_back(k * tile + d);
  for (size_t n : lengths) {
    ASSERT_LE(n + 15, field.size());
    // Every alignment for short and row-sized lengths; a few for the rest.
    const unsigned alignments = n <= 3 * cp::kRowBytes ? 16 : 3;
    for (unsigned a = 0; a < alignments; ++a) {
      const size_t offset = alignments == 16 ? a : (a * 7) % 16;
      const uint8_t* p = field.data() + offset;
      ASSERT_EQ(emulate_one(p, n), crc32c(p, n)) << "length " << n << " offset " << offset;
    }
  }
}

TEST(Crc32cParallel, SplitsIntoSpans) {
  const Bytes data = fz::testing::random_bytes(3 * cp::kMaxTileBytes + 12345, 11);
  std::mt19937_64 random(5);
  for (int round = 0; round < 60; ++round) {
    // Cut points anywhere, several at the same place (empty spans), the
    // spans' bytes copied to odd addresses of their own.
    const size_t total = round < 20 ? random() % 5000 : random() % data.size();
    std::vector<size_t> cuts = {0, total};
    const int pieces = 1 + static_cast<int>(random() % 40);
    for (int i = 0; i < pieces; ++i) cuts.push_back(total ? random() % (total + 1) : 0);
    if (round % 3 == 0) cuts.push_back(cuts.back());
    std::sort(cuts.begin(), cuts.end());
    std::vector<std::vector<uint8_t>> copies;
    std::vector<Span> spans;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const size_t size = cuts[i + 1] - cuts[i], shift = random() % 16;
      copies.emplace_back(size + 16);
      std::memcpy(copies.back().data() + shift, data.data() + cuts[i], size);
      spans.push_back({copies.back().data() + shift, size});
    }
    const uint32_t previous = round % 2 ? 0u : static_cast<uint32_t>(random());
    ASSERT_EQ(emulate(spans, previous), crc32c(data.data(), total, previous)) << "round " << round;
  }
}

// The scratch bound of crc32c_scratch_bytes: tiles <= total / tile + 2 per
// span, and total / tile <= max_whole_tiles(total), which never falls.
TEST(Crc32cParallel, TileCountBound) {
  std::mt19937_64 random(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<uint64_t> sizes(1 + random() % 50);
    uint64_t total = 0;
    for (auto& s : sizes) total += (s = random() % (round < 100 ? 70000 : 3000000));
    const uint32_t tile = cp::tile_bytes_for(total);
    uint64_t tiles = 0;
    for (uint64_t s : sizes)
      if (s) tiles += cp::tile_count(s, cp::head_bytes(random(), s), tile);
    EXPECT_LE(tiles, total / tile + 2 * sizes.size());
    EXPECT_LE(total / tile, cp::max_whole_tiles(total)) << total;
  }
  for (uint64_t total = 0; total < (uint64_t{1} << 32); total = total * 5 / 4 + 4093) {
    EXPECT_LE(total / cp::tile_bytes_for(total), cp::max_whole_tiles(total)) << total;
    EXPECT_LE(cp::max_whole_tiles(total), cp::max_whole_tiles(total + 1 + total / 3));
  }
}

}  // namespace
}  // namespace fz::engine
