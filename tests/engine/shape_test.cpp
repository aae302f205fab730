#include "shape.hpp"

#include <gtest/gtest.h>

namespace fz::engine {
namespace {

using Dims = std::vector<uint64_t>;

TEST(PredictorShape, DropsOnesAndFoldsHighRanksIntoTheSlowestAxis) {
  EXPECT_EQ(predictor_shape({91, 91, 91}), (Dims{91, 91, 91}));
  EXPECT_EQ(predictor_shape({1, 512, 512}), (Dims{512, 512}));
  EXPECT_EQ(predictor_shape({512, 1, 512}), (Dims{512, 512}));
  EXPECT_EQ(predictor_shape({7, 1, 1}), (Dims{7}));
  EXPECT_EQ(predictor_shape({2, 3, 4, 5}), (Dims{6, 4, 5}));
  EXPECT_EQ(predictor_shape({2, 3, 1, 4, 5, 6}), (Dims{24, 5, 6}));
  EXPECT_EQ(predictor_shape({1, 1, 1}), (Dims{1}));
  EXPECT_EQ(predictor_shape({}), (Dims{1}));
  EXPECT_EQ(predictor_shape({4, 0, 9}), (Dims{0}));
}

}  // namespace
}  // namespace fz::engine
