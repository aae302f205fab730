// The public API end to end: every lossless data type, shape and size round-trips
// bit-exactly; real fields get smaller; bytes do not depend on the thread count;
// bad options are refused with messages.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "common/testing/test_data.hpp"
#include "engine_test_util.hpp"
#include "fault_injection.hpp"
#include "fz/fz.hpp"

namespace fz {
namespace {

void expect_round_trip(const Bytes& data, const DataType& dtype, const std::vector<uint64_t>& dims,
                       const Options& options = Options{}) {
  const Bytes frame = compress(data.data(), data.size(), dtype, dims, options);
  const Decoded d = decompress(frame.data(), frame.size());
  ASSERT_EQ(d.data.size(), data.size());
  EXPECT_TRUE(d.data == data) << "round trip differs";
  EXPECT_EQ(d.dtype, dtype);
  if (!dims.empty()) {
    EXPECT_EQ(d.dims, dims);
  }
}

TEST(Api, EveryElementClassAndWidthRoundTrips) {
  const std::vector<DataType> types = {
      {ElementClass::Unsigned, 1}, {ElementClass::Signed, 1},  {ElementClass::Unsigned, 2},
      {ElementClass::Signed, 2},   {ElementClass::Unsigned, 4}, {ElementClass::Signed, 4},
      {ElementClass::Unsigned, 8}, {ElementClass::Signed, 8},   {ElementClass::Float, 2},
      {ElementClass::Float, 4},    {ElementClass::Float, 8},    {ElementClass::Opaque, 3},
      {ElementClass::Opaque, 12},  {ElementClass::Opaque, 16},  {ElementClass::Opaque, 1}};
  for (DataType t : types) {
    for (ByteOrder order : {ByteOrder::Little, ByteOrder::Big}) {
      t.order = order;
      for (size_t elements : {size_t(0), size_t(1), size_t(7), size_t(4097), size_t(100000)}) {
        SCOPED_TRACE(::testing::Message() << "class " << int(t.element_class) << " size " << t.size << " order "
                                          << int(order) << " n " << elements);
        expect_round_trip(testing::smooth_words(elements * t.size, t.size, elements), t, {elements});
        expect_round_trip(testing::random_bytes(elements * t.size, elements + 1), t, {elements});
      }
    }
  }
}

TEST(Api, RanksOneToFourAndFoldedShapesRoundTrip) {
  const auto v = test::smooth_field<double>(2 * 3 * 5 * 7 * 11, 3);
  const Bytes b = test::as_bytes(v.data(), v.size() * 8);
  expect_round_trip(b, DataType::of<double>(), {2310});
  expect_round_trip(b, DataType::of<double>(), {42, 55});
  expect_round_trip(b, DataType::of<double>(), {6, 35, 11});
  expect_round_trip(b, DataType::of<double>(), {2, 3, 35, 11});
  expect_round_trip(b, DataType::of<double>(), {1, 2, 1, 3, 5, 7, 11, 1});
  expect_round_trip(b, DataType::of<double>(), {});
}

TEST(Api, RealFieldsRoundTripAndShrink) {
  struct Field {
    const char* name;
    DataType type;
    std::vector<uint64_t> dims;
  };
  const std::vector<Field> fields = {
      {"vorticity.128_128_41", DataType::of<float>(), {41, 128, 128}},
      {"vorticity.512_512", DataType::of<float>(), {512, 512}},
      {"wmag91.float", DataType::of<float>(), {91, 91, 91}},
      {"999x999.float", DataType::of<float>(), {999, 999}},
      {"const32x32x59.float", DataType::of<float>(), {59, 32, 32}},
      {"pressure.384_384.f64", DataType::of<double>(), {384, 384}}};
  for (const auto& f : fields) {
    const Bytes data = testing::read_field(f.name);
    const Bytes frame = compress(data.data(), data.size(), f.type, f.dims, Options{});
    EXPECT_LT(frame.size(), data.size()) << f.name;
    EXPECT_TRUE(decompress(frame.data(), frame.size()).data == data) << f.name;
    // The same field stored big-endian compresses to the same size class and round-trips.
    DataType be = f.type;
    be.order = ByteOrder::Big;
    const Bytes swapped = test::reversed_words(data, f.type.size);
    const Bytes be_frame = compress(swapped.data(), swapped.size(), be, f.dims, Options{});
    EXPECT_EQ(be_frame.size(), frame.size() + 7) << f.name << ": byte swap stage record is 7 bytes";
    EXPECT_TRUE(decompress(be_frame.data(), be_frame.size()).data == swapped) << f.name;
  }
}

TEST(Api, BytesDoNotDependOnThreadCount) {
  const Bytes data = testing::read_field("999x999.float");
  Options one;
  one.threads = 1;
  Options many;
  many.threads = 7;
  const Bytes a = compress(data.data(), data.size(), DataType::of<float>(), {999, 999}, one);
  const Bytes b = compress(data.data(), data.size(), DataType::of<float>(), {999, 999}, many);
  EXPECT_TRUE(a == b);
  const Bytes again = compress(data.data(), data.size(), DataType::of<float>(), {999, 999}, many);
  EXPECT_TRUE(a == again);
}

TEST(Api, ConcurrentCallsAreCorrect) {
  const Bytes data = testing::read_field("wmag91.float");
  const Bytes expected = compress(data.data(), data.size(), DataType::of<float>(), {91, 91, 91}, Options{});
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i) {
        const Bytes f = compress(data.data(), data.size(), DataType::of<float>(), {91, 91, 91}, Options{});
        if (f != expected || decompress(f.data(), f.size()).data != data) ++failures;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Api, BadArgumentsAreRefusedWithMessages) {
  const std::vector<float> v(10, 1.0f);
  auto message_of = [&](const Options& o, const DataType& t, std::vector<uint64_t> dims, size_t bytes) {
    try {
      compress(v.data(), bytes, t, dims, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  Options unknown;
  unknown.preset = static_cast<Preset>(42);
  EXPECT_NE(message_of(unknown, DataType::of<float>(), {10}, 40).find("unknown preset id 42"), std::string::npos);
  Options lossy;
  lossy.preset = Preset::CuszHiTp;
  lossy.mode = ErrorMode::Rel;
  lossy.bound = 1e-3;
  EXPECT_NE(message_of(lossy, DataType::of<float>(), {10}, 40).find("point-wise relative"), std::string::npos);
  Options bad_mode;
  bad_mode.mode = static_cast<ErrorMode>(9);
  EXPECT_NE(message_of(bad_mode, DataType::of<float>(), {10}, 40).find("mode"), std::string::npos);
  EXPECT_NE(message_of(Options{}, DataType::of<float>(), {11}, 40).find("dims"), std::string::npos);
  EXPECT_NE(message_of(Options{}, DataType{ElementClass::Float, 3}, {}, 39).find("float"), std::string::npos);
  EXPECT_NE(message_of(Options{}, DataType{ElementClass::Opaque, 0}, {}, 0).find("element size"), std::string::npos);
  EXPECT_NE(message_of(Options{}, DataType::of<float>(), {1ull << 40, 1ull << 40}, 40).find("overflow"),
            std::string::npos);
}

TEST(Api, AFailingPipelineStillStoresTheChunkInARawFrame) {
  const auto v = test::smooth_field<float>(20000, 10);
  engine::fault_injection::pipeline_failures = 1;
  ::testing::internal::CaptureStderr();
  const Bytes frame = compress(v.data(), v.size() * 4, DataType::of<float>(), {20000}, Options{});
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("injected fault"), std::string::npos) << said;
  const FrameInfo info = inspect(frame.data(), frame.size());
  EXPECT_TRUE(info.raw);
  EXPECT_TRUE(decompress(frame.data(), frame.size()).data == test::as_bytes(v.data(), v.size() * 4));
  // The fault was used up: the next chunk compresses normally.
  const Bytes next = compress(v.data(), v.size() * 4, DataType::of<float>(), {20000}, Options{});
  EXPECT_FALSE(inspect(next.data(), next.size()).raw);
}

// An empty chunk decodes into a null buffer of capacity 0 (std::vector::data()
// of an empty vector may be null); this crashed before.
TEST(Api, EmptyChunkDecodesIntoANullBuffer) {
  const Bytes frame = compress(nullptr, 0, DataType::of<float>(), {0}, Options{});
  EXPECT_EQ(decompress_into(frame.data(), frame.size(), nullptr, 0), 0u);
  EXPECT_THROW(decompress_into(frame.data(), frame.size(), nullptr, 4), Error);
}

// inspect_header skips only the payload checksum (the filter's path, which
// decodes next): a damaged payload passes it and is still reported as
// corruption by the decoder; a damaged header is refused by both inspections.
TEST(Api, InspectHeaderLeavesThePayloadChecksumToTheDecoder) {
  const auto v = test::smooth_field<float>(300000, 4);
  Options o;
  o.preset = Preset::Pfpl;
  o.mode = ErrorMode::Noa;
  o.bound = 1e-3;
  const Bytes frame = compress(v.data(), v.size() * 4, DataType::of<float>(), {300000}, o);
  const FrameInfo whole = inspect(frame.data(), frame.size());
  const FrameInfo header = inspect_header(frame.data(), frame.size());
  EXPECT_EQ(header.original_bytes, whole.original_bytes);
  EXPECT_EQ(header.payload_crc, whole.payload_crc);
  EXPECT_EQ(header.stored_sizes, whole.stored_sizes);

  Bytes payload_flipped = frame;
  payload_flipped[whole.header_bytes + (frame.size() - whole.header_bytes) / 2] ^= 0x10;
  EXPECT_EQ(inspect_header(payload_flipped.data(), payload_flipped.size()).original_bytes, whole.original_bytes);
  EXPECT_THROW(inspect(payload_flipped.data(), payload_flipped.size()), Error);
  std::vector<float> out(v.size());
  try {
    decompress_into(payload_flipped.data(), payload_flipped.size(), out.data(), out.size() * 4);
    ADD_FAILURE() << "a damaged payload decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }

  Bytes header_flipped = frame;
  header_flipped[10] ^= 0x01;
  EXPECT_THROW(inspect_header(header_flipped.data(), header_flipped.size()), Error);
  EXPECT_THROW(inspect(header_flipped.data(), header_flipped.size()), Error);
}

// compress_into writes compress()'s frame into caller memory, also over the
// chunk itself; a frame that does not fit goes to the spill buffer (or is an
// error), and the target is left alone then.
TEST(Api, CompressIntoWritesTheFrameOfCompressAlsoInPlace) {
  const auto v = test::smooth_field<float>(50000, 3);
  const size_t bytes = v.size() * 4;
  for (Preset preset : {Preset::Lossless, Preset::Pfpl, Preset::Fzgpu}) {
    Options o;
    o.preset = preset;
    if (preset != Preset::Lossless) {
      o.mode = ErrorMode::Noa;
      o.bound = 1e-3;
    }
    const Bytes expected = compress(v.data(), bytes, DataType::of<float>(), {50, 1000}, o);
    ASSERT_LT(expected.size(), bytes);
    Bytes target(bytes + 16, 0xAB);
    EXPECT_EQ(compress_into(v.data(), bytes, DataType::of<float>(), {50, 1000}, o, target.data(), target.size()),
              expected.size());
    EXPECT_TRUE(Bytes(target.begin(), target.begin() + expected.size()) == expected);
    EXPECT_EQ(target[expected.size()], 0xAB) << "wrote past the frame";
    Bytes in_place = test::as_bytes(v.data(), bytes);
    EXPECT_EQ(compress_into(in_place.data(), bytes, DataType::of<float>(), {50, 1000}, o, in_place.data(), bytes),
              expected.size());
    EXPECT_TRUE(Bytes(in_place.begin(), in_place.begin() + expected.size()) == expected) << "in place";
    // Too small: the frame spills, the target is untouched.
    Bytes small(expected.size() - 1, 0xCD), spill;
    EXPECT_EQ(compress_into(v.data(), bytes, DataType::of<float>(), {50, 1000}, o, small.data(), small.size(), &spill),
              0u);
    EXPECT_TRUE(spill == expected);
    EXPECT_TRUE(small == Bytes(expected.size() - 1, 0xCD));
    EXPECT_THROW(compress_into(v.data(), bytes, DataType::of<float>(), {50, 1000}, o, small.data(), small.size()),
                 Error);
  }
  // An incompressible chunk's raw frame is larger than the chunk: it spills.
  Bytes noise(40000);
  uint64_t x = 88172645463325252ull;
  for (uint8_t& b : noise) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  const Bytes raw = compress(noise.data(), noise.size(), DataType{ElementClass::Opaque, 1}, {}, Options{});
  Bytes spill, chunk = noise;
  EXPECT_EQ(compress_into(chunk.data(), chunk.size(), DataType{ElementClass::Opaque, 1}, {}, Options{}, chunk.data(),
                          chunk.size(), &spill),
            0u);
  EXPECT_TRUE(spill == raw);
  EXPECT_TRUE(inspect(spill.data(), spill.size()).raw);
  EXPECT_TRUE(chunk == noise) << "the chunk was written over although the frame did not fit";
}

TEST(Api, DefaultPresetIsRecordedAsLossless) {
  const auto v = test::smooth_field<int32_t>(5000, 9);
  Options o;
  o.preset = Preset::Default;
  const Bytes frame = compress(v.data(), v.size() * 4, DataType::of<int32_t>(), {5000}, o);
  EXPECT_EQ(inspect(frame.data(), frame.size()).preset, Preset::Lossless);
}

}  // namespace
}  // namespace fz
