// The filter's H5Z_FZ_* variables mapped onto the engine's policy
// (filter/environment.hpp), read once per process: set before the first call.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

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


// choose_device with a made-up environment and device count.
DeviceChoice choose(const char* wanted, const std::map<std::string, std::string>& env, int devices,
                    int* asked = nullptr) {
  return choose_device(
      wanted,
      [&env](const char* name) -> const char* {
        auto found = env.find(name);
        return found == env.end() ? nullptr : found->second.c_str();
      },
      [devices, asked] {
        if (asked != nullptr) ++*asked;
        return devices;
      });
}

TEST(DeviceChoice, EachLocalRankTakesItsOwnGpuModuloTheVisibleOnes) {
  for (int rank = 0; rank < 6; ++rank) {
    const std::map<std::string, std::string> env{{"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)}};
    EXPECT_EQ(choose("cuda:local", env, 4).device, "cuda:" + std::to_string(rank % 4));
    EXPECT_EQ(choose("auto:local", env, 4).device, "auto:" + std::to_string(rank % 4));
    // auto (or nothing set) spreads ranks over several devices by itself ...
    EXPECT_EQ(choose(nullptr, env, 2).device, "auto:" + std::to_string(rank % 2));
    EXPECT_EQ(choose("auto", env, 2).device, "auto:" + std::to_string(rank % 2));
    // ... and shares the only one: ranks sharing a GPU, as a single process uses it.
    EXPECT_EQ(choose("auto", env, 1).device, "auto");
    EXPECT_EQ(choose("cuda:local", env, 1).device, "cuda:0");
  }
  const DeviceChoice third = choose("cuda:local", {{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}, 2);
  EXPECT_EQ(third.device, "cuda:1");
  EXPECT_EQ(third.reason, "local rank 3 (OMPI_COMM_WORLD_LOCAL_RANK) of 2 CUDA device(s)");
}

TEST(DeviceChoice, EveryLauncherVariableIsReadInOrder) {
  for (const char* variable :
       {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PALS_LOCAL_RANKID", "SLURM_LOCALID"})
    EXPECT_EQ(choose("cuda:local", {{variable, "5"}}, 4).device, "cuda:1") << variable;
  // Open MPI's own variable wins over Slurm's (mpirun inside an allocation).
  EXPECT_EQ(choose("cuda:local", {{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}}, 4).device, "cuda:2");
  // A value that is no rank is passed over, to the next variable.
  EXPECT_EQ(choose("cuda:local", {{"OMPI_COMM_WORLD_LOCAL_RANK", "x1"}, {"SLURM_LOCALID", "3"}}, 4).device, "cuda:3");
  EXPECT_EQ(choose("cuda:local", {{"OMPI_COMM_WORLD_LOCAL_RANK", "-1"}}, 4).device, "cuda");
}

TEST(DeviceChoice, WithoutARankOrADeviceItSaysSoAndTheEngineFallsBack) {
  int asked = 0;
  // No local rank: device 0, said; auto stays auto without asking CUDA.
  const DeviceChoice lone = choose("cuda:local", {}, 4, &asked);
  EXPECT_EQ(lone.device, "cuda");
  EXPECT_NE(lone.reason.find("no local rank"), std::string::npos);
  EXPECT_EQ(choose("auto", {}, 4, &asked).device, "auto");
  EXPECT_EQ(choose(nullptr, {}, 4, &asked).device, "auto");
  EXPECT_EQ(asked, 0);
  // No device: cuda stays cuda, which the engine turns into the CPU with a warning.
  const DeviceChoice none = choose("cuda:local", {{"SLURM_LOCALID", "1"}}, 0);
  EXPECT_EQ(none.device, "cuda");
  EXPECT_NE(none.reason.find("no device to choose"), std::string::npos);
  EXPECT_EQ(choose("auto", {{"SLURM_LOCALID", "1"}}, 0).device, "auto");
  // Everything else passes through untouched, and asks nothing.
  for (const char* other : {"cpu", "cuda", "cuda:1", "auto:2", "gpu"})
    EXPECT_EQ(choose(other, {{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}, 4, &asked).device, other);
  EXPECT_EQ(asked, 0);
}

// Parallel HDF5 keeps every chunk's buffer until its collective write, so a
// rank hands back frame-sized buffers (environment.hpp): only where buffers
// are own (FrameBufferChoice), and only where that frees at least half the
// buffer.
TEST(FrameSizedHandBack, OnlyForRanksOfAParallelJobAndOnlyWhereItHalvesTheBuffer) {
  constexpr size_t kChunk = size_t{4} << 20;
  EXPECT_TRUE(hand_back_frame_sized(kChunk / 7, kChunk, true));  // a lossy frame, 7x
  EXPECT_TRUE(hand_back_frame_sized(kChunk / 2, kChunk, true));
  EXPECT_FALSE(hand_back_frame_sized(kChunk / 2 + 1, kChunk, true));  // lossless at 1.3x stays in place
  EXPECT_FALSE(hand_back_frame_sized(kChunk / 7, kChunk, false));     // one process: written and freed at once
  EXPECT_FALSE(hand_back_frame_sized(0, kChunk, true));               // no frame in the buffer (spilled)
}

// H5Z_FZ_FRAME_BUFFERS: auto follows the launcher, own and in-place override
// it, anything else is auto and said.
TEST(FrameSizedHandBack, TheSettingChoosesOwnBuffersOrInPlace) {
  EXPECT_FALSE(choose_frame_buffers(nullptr, nullptr).own);  // one process
  const FrameBufferChoice rank = choose_frame_buffers(nullptr, "PALS_LOCAL_RANKID");
  EXPECT_TRUE(rank.own);
  EXPECT_EQ(rank.reason, "a rank of a parallel job (PALS_LOCAL_RANKID)");
  EXPECT_TRUE(choose_frame_buffers("auto", "SLURM_LOCALID").own);
  EXPECT_FALSE(choose_frame_buffers("auto", nullptr).own);
  EXPECT_FALSE(choose_frame_buffers("in-place", "SLURM_LOCALID").own);
  const FrameBufferChoice own = choose_frame_buffers("own", nullptr);
  EXPECT_TRUE(own.own);
  EXPECT_EQ(own.reason, "H5Z_FZ_FRAME_BUFFERS=own");
  const FrameBufferChoice odd = choose_frame_buffers("inplace", "SLURM_LOCALID");
  EXPECT_TRUE(odd.own);  // as auto
  EXPECT_NE(odd.ignored.find("ignoring H5Z_FZ_FRAME_BUFFERS=inplace"), std::string::npos);
  EXPECT_TRUE(choose_frame_buffers("own", nullptr).ignored.empty());
}

TEST(FrameSizedHandBack, TheLauncherIsReadOnceFromTheSameVariablesAsTheDevice) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                           "PALS_LOCAL_RANKID", "SLURM_LOCALID"})
    unsetenv(name);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "not a rank", 1);  // passed over, as choose_device does
  setenv("SLURM_LOCALID", "2", 1);
  ASSERT_NE(mpi_launcher_variable(), nullptr);
  EXPECT_STREQ(mpi_launcher_variable(), "SLURM_LOCALID");
  unsetenv("SLURM_LOCALID");
  unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_STREQ(mpi_launcher_variable(), "SLURM_LOCALID");  // once per process, as the device choice
}

}  // namespace
}  // namespace fz::filter
