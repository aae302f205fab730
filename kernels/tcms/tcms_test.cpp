#include "tcms/tcms.hpp"

#include <gtest/gtest.h>

#include "common/blocks.hpp"
#include "common/error.hpp"
#include "common/testing/test_data.hpp"
#include "common/testing/width_transform_checks.hpp"

namespace fz {
namespace {

using testing::kWidths;

// The header's formula on words of `width` bytes held in 64 bits.
Bytes reference_encode(const Bytes& in, unsigned width) {
  const unsigned bits = 8 * width;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  Bytes out = in;
  for (size_t i = 0; i + width <= in.size(); i += width) {
    uint64_t x = 0;
    for (unsigned k = 0; k < width; ++k) x |= uint64_t{in[i + k]} << (8 * k);
    const uint64_t sign_fill = ((x >> (bits - 1)) & 1) ? mask : 0;
    const uint64_t y = ((x << 1) ^ sign_fill) & mask;
    for (unsigned k = 0; k < width; ++k) out[i + k] = static_cast<uint8_t>(y >> (8 * k));
  }
  return out;
}

Bytes encoded(const Bytes& in, unsigned width) { return testing::transformed(tcms::encode, in, width); }

Bytes decoded(const Bytes& in, unsigned width) { return testing::transformed(tcms::decode, in, width); }

TEST(Tcms, RoundTripsEveryStandardInputAtEveryWidth) {
  testing::expect_width_transform_round_trips(tcms::encode, tcms::decode, kWidths);
}

TEST(Tcms, MatchesFormula) {
  for (unsigned width : kWidths)
    for (size_t size : {size_t{0}, size_t{1}, size_t{7}, size_t{16385}, size_t{40001}}) {
      const Bytes in = testing::random_bytes(size, size + width);
      EXPECT_EQ(encoded(in, width), reference_encode(in, width)) << width << " " << size;
    }
}

TEST(Tcms, KnownWords) {
  // 0 -> 0, 1 -> 2, -1 -> 1, -128 -> 255, 127 -> 254, -2 -> 3.
  const Bytes bytes_in = {0x00, 0x01, 0xFF, 0x80, 0x7F, 0xFE};
  const Bytes bytes_out = {0x00, 0x02, 0x01, 0xFF, 0xFE, 0x03};
  EXPECT_EQ(encoded(bytes_in, 1), bytes_out);
  EXPECT_EQ(decoded(bytes_out, 1), bytes_in);

  // 16-bit: -32768 -> 0xFFFF, 300 -> 600, then one trailing byte copied.
  const Bytes words_in = {0x00, 0x80, 0x2C, 0x01, 0x99};
  const Bytes words_out = {0xFF, 0xFF, 0x58, 0x02, 0x99};
  EXPECT_EQ(encoded(words_in, 2), words_out);
  EXPECT_EQ(decoded(words_out, 2), words_in);

  // 64-bit: -3 -> 5, then 3 trailing bytes.
  Bytes wide_in, wide_out;
  append_le<uint64_t>(wide_in, ~uint64_t{2});
  append_le<uint64_t>(wide_out, 5);
  for (uint8_t b : {7, 8, 9}) {
    wide_in.push_back(b);
    wide_out.push_back(b);
  }
  EXPECT_EQ(encoded(wide_in, 8), wide_out);
  EXPECT_EQ(decoded(wide_out, 8), wide_in);
}

TEST(Tcms, RejectsBadWidths) {
  testing::expect_bad_widths_refused(tcms::encode, tcms::decode, {0u, 3u, 5u, 6u, 7u, 16u});
}

TEST(Tcms, ThreadsGiveTheSerialBytes) {
  testing::expect_threads_give_the_serial_bytes(tcms::encode, tcms::decode, kWidths);
}

}  // namespace
}  // namespace fz
