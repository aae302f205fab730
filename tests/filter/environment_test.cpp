// The filter's H5Z_FZ_* variables mapped onto the engine's policy
// (filter/environment.hpp), read once per process: set before the first call.
#include <gtest/gtest.h>

#include <cstdlib>

#include "environment.hpp"

namespace fz::filter {
namespace {

TEST(Environment, EveryVariableReachesItsOptionsField) {
  setenv("H5Z_FZ_DEVICE", "cuda:3", 1);
  setenv("H5Z_FZ_THREADS", "3", 1);
  setenv("H5Z_FZ_CPU", "baseline", 1);
  setenv("H5Z_FZ_GPU_COPY", "direct", 1);
  unsetenv("H5Z_FZ_VERBOSE");
  const Options& policy = policy_from_environment();
  EXPECT_EQ(policy.device, "cuda:3");
  EXPECT_EQ(policy.threads, 3u);
  EXPECT_EQ(policy.cpu_features, CpuFeatures::kBaseline);
  EXPECT_EQ(policy.gpu_copies, GpuCopies::kDirect);
  ASSERT_TRUE(policy.log);

  // Warnings always, with the filter's prefix; information only under H5Z_FZ_VERBOSE.
  ::testing::internal::CaptureStderr();
  policy.log(LogLevel::kInfo, "which backend");
  policy.log(LogLevel::kWarning, "stored raw");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "H5Z-FZ: stored raw\n");

  Options options;
  options.preset = Preset::Pfpl;
  apply_policy(policy, options);
  EXPECT_EQ(options.preset, Preset::Pfpl);
  EXPECT_EQ(options.device, "cuda:3");
  EXPECT_EQ(options.threads, 3u);
  EXPECT_EQ(options.cpu_features, CpuFeatures::kBaseline);
  EXPECT_EQ(options.gpu_copies, GpuCopies::kDirect);
}

}  // namespace
}  // namespace fz::filter
