// fz::suggest_chunk_shape: the documented rule (fz.hpp; README "Choosing
// chunks"), on worked examples and, for many random shapes, on the
// properties that define it.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "fz/fz.hpp"

namespace fz {
namespace {

using Shape = std::vector<uint64_t>;

uint64_t bytes_of(const Shape& chunk, size_t element_bytes) {
  uint64_t b = element_bytes;
  for (uint64_t c : chunk) b *= c;
  return b;
}

TEST(SuggestChunkShape, WorkedExamples) {
  constexpr size_t MiB = size_t{1} << 20;
  // 512^3 float32: a plane is 1 MiB, four planes make the 4 MiB.
  EXPECT_EQ(suggest_chunk_shape({512, 512, 512}, 4), (Shape{4, 512, 512}));
  // Fits whole: one chunk.
  EXPECT_EQ(suggest_chunk_shape({91, 91, 91}, 4), (Shape{91, 91, 91}));
  // etopo5 (2161 x 4320 float32, 37 MB): rows of 17280 bytes, 242 fit,
  // 9 equal pieces of 241 rows.
  EXPECT_EQ(suggest_chunk_shape({2161, 4320}, 4), (Shape{241, 4320}));
  // A float64 plane of 8 MB does not fit: 1000-element rows cut in two.
  EXPECT_EQ(suggest_chunk_shape({100, 1000, 1000}, 8), (Shape{1, 500, 1000}));
  // One long axis: a chunk of at most 4 MiB in equal pieces.
  EXPECT_EQ(suggest_chunk_shape({uint64_t{1} << 30}, 4), (Shape{MiB}));
  EXPECT_EQ(suggest_chunk_shape({3 * MiB}, 4), (Shape{3 * MiB / 3}));
  // Rank 4: the fast axes whole, the slowest 1.
  EXPECT_EQ(suggest_chunk_shape({10, 20, 64, 1024}, 4), (Shape{1, 10, 64, 1024}));  // 16 fit: 2 pieces
  // Zero extents count as 1; a target of one element gives single elements.
  EXPECT_EQ(suggest_chunk_shape({0, 100}, 4), (Shape{1, 100}));
  EXPECT_EQ(suggest_chunk_shape({7, 9}, 8, 8), (Shape{1, 1}));
  EXPECT_EQ(suggest_chunk_shape({512, 512, 512}, 4, 16 * MiB), (Shape{16, 512, 512}));
}

TEST(SuggestChunkShape, RefusesWhatHasNoAnswer) {
  EXPECT_THROW(suggest_chunk_shape({}, 4), Error);
  EXPECT_THROW(suggest_chunk_shape({10}, 0), Error);
  EXPECT_THROW(suggest_chunk_shape({10}, 8, 4), Error);
  EXPECT_THROW(suggest_chunk_shape({10}, 4, size_t{1} << 32), Error);
}

// For any shape: the chunk fits the target; the axes faster than the
// fastest cut one are whole (by its choice), the slower ones 1; the cut axis
// is in the fewest pieces that fit (one piece fewer would exceed the
// target), as equal as they can be.
TEST(SuggestChunkShape, PropertiesHoldForRandomShapes) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t rank = 1 + rng() % 5;
    Shape dims(rank);
    for (uint64_t& d : dims) d = rng() % 4 == 0 ? 1 + rng() % 8 : 1 + rng() % 3000;
    const size_t width = size_t{1} << (rng() % 4);
    const size_t target = width * (1 + rng() % (size_t{1} << (10 + rng() % 14)));
    const Shape chunk = suggest_chunk_shape(dims, width, target);
    ASSERT_EQ(chunk.size(), rank);
    ASSERT_LE(bytes_of(chunk, width), target);
    size_t cut = rank;  // the fastest axis not whole
    for (size_t k = 0; k < rank; ++k) {
      ASSERT_GE(chunk[k], 1u);
      ASSERT_LE(chunk[k], dims[k]);
      if (chunk[k] != dims[k]) cut = k;
    }
    if (cut == rank) continue;  // the dataset fits whole
    for (size_t k = 0; k < cut; ++k) ASSERT_EQ(chunk[k], 1u) << "an axis slower than the cut is not 1";
    const uint64_t pieces = (dims[cut] + chunk[cut] - 1) / chunk[cut];
    Shape fewer = chunk;
    fewer[cut] = (dims[cut] + pieces - 2) / (pieces - 1);  // pieces >= 2: the axis was cut
    ASSERT_GT(bytes_of(fewer, width), target) << "fewer pieces would have fit";
    ASSERT_EQ(chunk[cut], (dims[cut] + pieces - 1) / pieces) << "the pieces are not as equal as they can be";
  }
}

}  // namespace
}  // namespace fz
