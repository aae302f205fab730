// The engine's policy comes through fz::Options alone (fz.hpp, "Policy"): its
// messages go to the log callback, a device string it cannot use runs on the
// CPU and says so, CPU features never change a frame, and no engine or kernel
// source reads the environment or prints the filter's prefix.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "common/cpu_features.hpp"
#include "common/testing/test_data.hpp"
#include "fault_injection.hpp"
#include "fz/fz.hpp"
#include "thread_pool.hpp"

#if defined(__linux__)
#include <sched.h>
#endif

namespace fz {
namespace {

struct Logged {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> messages;
  LogCallback callback() {
    return [this](LogLevel level, const std::string& message) {
      std::lock_guard<std::mutex> lock(mutex);
      messages.emplace_back(level, message);
    };
  }
  size_t count(LogLevel level, const std::string& part) {
    size_t n = 0;
    for (const auto& m : messages) n += m.first == level && m.second.find(part) != std::string::npos;
    return n;
  }
};

Options lossy(Preset preset) {
  Options o;
  o.preset = preset;
  o.mode = ErrorMode::Noa;
  o.bound = 1e-3;
  return o;
}

const Bytes& field() {
  static const Bytes data = testing::read_field("wmag91.float");
  return data;
}

TEST(Policy, AFailedCompressionIsStoredRawAndSaidThroughTheLog) {
  Logged logged;
  Options o = lossy(Preset::Fzgpu);
  o.device = "cpu";
  o.log = logged.callback();
  engine::fault_injection::pipeline_failures = 1;
  ::testing::internal::CaptureStderr();
  const Bytes frame = compress(field().data(), field().size(), DataType::of<float>(), {91, 91, 91}, o);
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(inspect(frame.data(), frame.size()).raw);
  EXPECT_EQ(logged.count(LogLevel::kWarning, "stored it uncompressed in its frame"), 1u);
  EXPECT_EQ(stderr_text, "") << "the engine printed although a log callback was given";
  EXPECT_EQ(decompress(frame.data(), frame.size()).data, field());
}

TEST(Policy, WithoutALogWarningsGoToStderrWithTheEnginesOwnPrefix) {
  Options o = lossy(Preset::Pfpl);
  o.device = "cpu";
  engine::fault_injection::pipeline_failures = 1;
  ::testing::internal::CaptureStderr();
  const Bytes frame = compress(field().data(), field().size(), DataType::of<float>(), {}, o);
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(inspect(frame.data(), frame.size()).raw);
  EXPECT_EQ(stderr_text.rfind("fz: compressing a ", 0), 0u) << stderr_text;
  EXPECT_EQ(stderr_text.find("H5Z-FZ"), std::string::npos) << stderr_text;
}

TEST(Policy, ADeviceStringItCannotUseRunsOnTheCpuAndIsSaidOnce) {
  for (const char* device : {"gpu-please", "cuda:x", "cuda:1000", "auto:x", "auto:-1"}) {
    Logged logged;
    Options o = lossy(Preset::Cusz);
    o.log = logged.callback();
    o.device = device;
    Options cpu = lossy(Preset::Cusz);
    cpu.device = "cpu";
    const Bytes expected = compress(field().data(), field().size(), DataType::of<float>(), {91, 91, 91}, cpu);
    for (int call = 0; call < 2; ++call) {
      EXPECT_EQ(compress(field().data(), field().size(), DataType::of<float>(), {91, 91, 91}, o), expected) << device;
      Bytes out(field().size());
      EXPECT_EQ(decompress_into(expected.data(), expected.size(), out.data(), out.size(), o), out.size()) << device;
    }
    EXPECT_EQ(logged.count(LogLevel::kWarning, "using the CPU backend"), 1u) << device;
  }
}

// auto:N is auto on device N (the filter's choice for one MPI rank): a device
// this process does not have leaves it on the CPU as plain auto does, with
// information, not a warning, and the same bytes.
TEST(Policy, AutoOnADeviceItDoesNotHaveStaysOnTheCpuQuietly) {
  Logged logged;
  Options o = lossy(Preset::Fzgpu);
  o.log = logged.callback();
  o.device = "auto:1000";
  Options cpu = lossy(Preset::Fzgpu);
  cpu.device = "cpu";
  EXPECT_EQ(compress(field().data(), field().size(), DataType::of<float>(), {91, 91, 91}, o),
            compress(field().data(), field().size(), DataType::of<float>(), {91, 91, 91}, cpu));
  EXPECT_EQ(logged.count(LogLevel::kWarning, ""), 0u);
  EXPECT_EQ(logged.count(LogLevel::kInfo, "CPU backend"), 1u);
}

#if defined(__linux__)
// "All cores" means the cores this process may use: an MPI rank bound to one
// core must not start a thread per hardware thread on it.
TEST(ThreadCount, FollowsTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  const unsigned all = engine::usable_cpu_count();
  EXPECT_EQ(all, static_cast<unsigned>(CPU_COUNT(&saved)));
  int first = -1;
  for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; ++cpu)
    if (CPU_ISSET(cpu, &saved)) first = cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(engine::usable_cpu_count(), 1u);
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(engine::usable_cpu_count(), all);
}
#endif

TEST(Policy, BaselineCpuFeaturesWriteTheSameFramesAndAreRestoredAfterTheCall) {
  for (Preset preset : {Preset::Lossless, Preset::Pfpl, Preset::Fzgpu, Preset::Cusz}) {
    Options all = preset == Preset::Lossless ? Options{} : lossy(preset);
    all.device = "cpu";
    Options baseline = all;
    baseline.cpu_features = CpuFeatures::kBaseline;
    const Bytes a = compress(field().data(), field().size(), DataType::of<float>(), {91, 91, 91}, all);
    const Bytes b = compress(field().data(), field().size(), DataType::of<float>(), {91, 91, 91}, baseline);
    EXPECT_EQ(a, b) << preset_name(preset);
    EXPECT_EQ(decompress(a.data(), a.size(), baseline).data, decompress(a.data(), a.size(), all).data);
    EXPECT_TRUE(optional_isa_allowed_here()) << "the caller's thread was left held to the baseline";
  }
}

// A call of getenv (not fegetenv, which saves the floating-point state).
bool calls_getenv(const std::string& source) {
  for (size_t at = source.find("getenv("); at != std::string::npos; at = source.find("getenv(", at + 1)) {
    const char before = at ? source[at - 1] : ' ';
    if (!std::isalnum(static_cast<unsigned char>(before)) && before != '_') return true;
  }
  return false;
}

// The engine says nothing itself and reads no environment variable: the
// filter and the tools map H5Z_FZ_* onto Options (filter/environment.hpp).
TEST(Policy, NoEngineOrKernelSourceReadsTheEnvironmentOrPrintsTheFiltersPrefix) {
  const std::filesystem::path root = std::filesystem::path(FZ_GOLDEN_DIR) / ".." / "..";
  size_t scanned = 0;
  for (const char* folder : {"engine", "kernels"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / folder)) {
      const std::string name = entry.path().filename().string();
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh")) continue;
      if (name.find("_test") != std::string::npos || name.find("_fuzz") != std::string::npos ||
          entry.path().string().find("/testing/") != std::string::npos)
        continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      ++scanned;
      EXPECT_FALSE(calls_getenv(s)) << entry.path();
      EXPECT_EQ(s.find("\"H5Z-FZ:"), std::string::npos) << entry.path();
    }
  }
  EXPECT_GT(scanned, 50u);
}

// Comments cite the project's own documents (docs/, README.md), which travel
// with the code, never notes kept outside the repository.
TEST(SourceRules, CommentsCiteOnlyTheRepositorysOwnDocuments) {
  const std::filesystem::path root = std::filesystem::path(FZ_GOLDEN_DIR) / ".." / "..";
  size_t scanned = 0;
  for (const char* folder : {"engine", "kernels", "filter", "tools", "tests"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / folder)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".hpp" && ext != ".cu" && ext != ".cuh" &&
                                       ext != ".py" && ext != ".inc" && ext != ".cmake"))
        continue;
      if (entry.path().filename() == "policy_test.cpp") continue;  // names them below
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      ++scanned;
      for (const char* outside : {"design.md", "algorithms.md", "shared/specs"})
        EXPECT_EQ(s.find(outside), std::string::npos) << entry.path() << " cites " << outside;
    }
  }
  EXPECT_GT(scanned, 100u);
}

}  // namespace
}  // namespace fz
