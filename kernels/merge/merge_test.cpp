#include "merge/merge.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <limits>
#include <new>
#include <string>

#include "common/error.hpp"
#include "common/testing/test_data.hpp"

// Records the largest allocation while `tracking` is set, so tests can show that
// a hostile header is refused before anything of its claimed size is allocated.
namespace {
std::atomic<bool> tracking{false};
std::atomic<size_t> largest_allocation{0};

void* allocate(size_t size) {
  if (tracking.load() && size > largest_allocation.load()) largest_allocation = size;
  if (void* p = std::malloc(size ? size : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t size) { return allocate(size); }
void* operator new[](size_t size) { return allocate(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace fz {
namespace {

constexpr size_t kNoLimit = std::numeric_limits<size_t>::max();

Bytes bytes_of(const std::string& s) { return Bytes(s.begin(), s.end()); }

Bytes merged(const std::vector<Bytes>& parts) {
  std::vector<ByteSpan> spans(parts.begin(), parts.end());
  Bytes out{9, 9, 9};
  merge::encode(spans, out);
  return out;
}

// A stream with the given header fields followed by `payload` bytes of zeros.
Bytes hand_made(uint32_t count, const std::vector<uint64_t>& sizes, size_t payload) {
  Bytes out;
  append_le<uint32_t>(out, count);
  for (uint64_t size : sizes) append_le<uint64_t>(out, size);
  out.resize(out.size() + payload, 0);
  return out;
}

// Decodes while recording allocations; expects FormatError and no allocation above 64 KiB.
void expect_refused_cheaply(const Bytes& stream, size_t max_total, size_t max_parts) {
  largest_allocation = 0;
  tracking = true;
  bool refused = false;
  try {
    merge::decode(stream, max_total, max_parts);
  } catch (const FormatError&) {
    refused = true;
  }
  tracking = false;
  EXPECT_TRUE(refused);
  EXPECT_LE(largest_allocation.load(), size_t{64 * 1024});
}

TEST(Merge, AllocationTrackerSeesDecodedStreams) {  // or the cheap-refusal checks prove nothing
  const Bytes stream = merged({Bytes(100000, 7)});
  largest_allocation = 0;
  tracking = true;
  merge::decode(stream, kNoLimit);
  tracking = false;
  EXPECT_GE(largest_allocation.load(), size_t{100000});
}

TEST(Merge, KnownLayout) {
  const Bytes out = merged({bytes_of("ab"), Bytes{}, bytes_of("c")});
  const Bytes expected = {3, 0, 0, 0,                // count
                          2, 0, 0, 0, 0, 0, 0, 0,    // size 0
                          0, 0, 0, 0, 0, 0, 0, 0,    // size 1
                          1, 0, 0, 0, 0, 0, 0, 0,    // size 2
                          'a', 'b', 'c'};
  EXPECT_EQ(out, expected);
  const std::vector<Bytes> parts = merge::decode(out, 3, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], bytes_of("ab"));
  EXPECT_TRUE(parts[1].empty());
  EXPECT_EQ(parts[2], bytes_of("c"));
}

TEST(Merge, RoundTripsStandardInputs) {
  std::vector<Bytes> parts;
  for (auto& input : testing::standard_inputs()) parts.push_back(std::move(input.bytes));
  const Bytes stream = merged(parts);
  EXPECT_EQ(merge::decode(stream, kNoLimit, parts.size()), parts);
}

TEST(Merge, RoundTripsOneEmptyStream) {
  const Bytes stream = merged({Bytes{}});
  EXPECT_EQ(stream, (Bytes{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(merge::decode(stream, 0, 1), std::vector<Bytes>{Bytes{}});
}

TEST(Merge, EncodeNeedsAStream) {
  Bytes out;
  EXPECT_THROW(merge::encode({}, out), UsageError);
}

TEST(Merge, EveryTruncationAndExtensionIsRefused) {
  const Bytes stream = merged({bytes_of("hello"), Bytes{}, bytes_of("world!")});
  for (size_t length = 0; length < stream.size(); ++length) {
    const Bytes cut(stream.begin(), stream.begin() + length);
    EXPECT_THROW(merge::decode(cut, kNoLimit), FormatError) << "length " << length;
  }
  Bytes longer = stream;
  longer.push_back(0);
  EXPECT_THROW(merge::decode(longer, kNoLimit), FormatError);
}

TEST(Merge, InconsistentSizesAreRefused) {
  expect_refused_cheaply(hand_made(0, {}, 0), kNoLimit, kNoLimit);            // no streams
  expect_refused_cheaply(hand_made(2, {3, 4}, 6), kNoLimit, kNoLimit);        // one byte short
  expect_refused_cheaply(hand_made(2, {3, 4}, 8), kNoLimit, kNoLimit);        // one byte over
  expect_refused_cheaply(hand_made(2, {3}, 3), kNoLimit, kNoLimit);           // table cut short
}

TEST(Merge, OverflowingSizesAreRefused) {
  const uint64_t huge = std::numeric_limits<uint64_t>::max();
  expect_refused_cheaply(hand_made(2, {huge, 2}, 1), kNoLimit, kNoLimit);     // sum wraps to 1
  expect_refused_cheaply(hand_made(2, {uint64_t{1} << 63, uint64_t{1} << 63}, 0), kNoLimit, kNoLimit);
  expect_refused_cheaply(hand_made(1, {uint64_t{1} << 40}, 16), kNoLimit, kNoLimit);
}

TEST(Merge, HugeCountsAreRefused) {
  expect_refused_cheaply(hand_made(0xFFFFFFFFu, {0}, 0), kNoLimit, kNoLimit);
  expect_refused_cheaply(hand_made(1000000, {0, 0}, 0), kNoLimit, kNoLimit);
}

TEST(Merge, LimitsAreHonoured) {
  const Bytes stream = merged({Bytes(10, 1), Bytes(20, 2)});
  EXPECT_NO_THROW(merge::decode(stream, 30, 2));
  expect_refused_cheaply(stream, 29, 2);  // total over max_total
  expect_refused_cheaply(stream, 30, 1);  // more parts than max_parts
  expect_refused_cheaply(merged({Bytes(10, 1)}), 9, 4);
}

}  // namespace
}  // namespace fz
