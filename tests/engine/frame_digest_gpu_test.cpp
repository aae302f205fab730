// The GPU twin of frame_digest_test.cpp: a smaller matrix of the same cases
// (every chunk, every preset and mode, the middle bound 1e-3) encoded by the
// CUDA backend, from host memory (compress_with kGpu, the filter's path) and
// from device memory (compress_on_device). Each frame's size and FNV-1a
// digest must equal the line the CPU pinned in tests/golden/frame_digests.txt:
// CPU == GPU, checked against the very same bytes. The CPU writes the file
// (FZ_UPDATE_DIGESTS=1 frame_digest_test); this test only reads it. Skips
// without a CUDA device.
#include <gtest/gtest.h>

#include "api_internal.hpp"
#include "common/testing/device_cuda.hpp"
#include "frame_digests.hpp"

namespace fz::digest {
namespace {

// The GPU's share of the matrix: lossless cases and lossy ones at 1e-3.
bool on_gpu(const Case& c) { return c.level == 0 || c.level == 1e-3; }

TEST(FrameDigestsGpu, TheGpuGivesTheBytesTheCpuPinned) {
  FZ_SKIP_WITHOUT_CUDA();
  ASSERT_TRUE(device_api_available()) << "a CUDA device is present but the engine cannot use it";
  const auto pinned = read_digests();
  const std::map<std::string, Digest> expected(pinned.begin(), pinned.end());
  size_t checked = 0;
  std::ostringstream report;
  for (const Case& c : cases()) {
    if (!on_gpu(c)) continue;
    const auto it = expected.find(c.name);
    if (it == expected.end()) {
      report << "  not in the file: " << c.name << " (run the CPU test first)\n";
      continue;
    }
    Options o = c.options;
    o.log = [&c](LogLevel level, const std::string& message) {
      if (level == LogLevel::kWarning) ADD_FAILURE() << c.name << ": engine warning: " << message;
    };
    const Chunk& chunk = *c.chunk;
    const Digest host =
        digest_of(compress_with(chunk.data.data(), chunk.data.size(), chunk.dtype, chunk.dims, o, BackendUse::kGpu));
    const testing::DeviceBuffer d_data = testing::to_device(chunk.data);
    const testing::DeviceBuffer d_frame(max_frame_bytes(chunk.data.size(), chunk.dims.size()));
    ASSERT_TRUE(d_data.ok() && d_frame.ok()) << c.name << ": cudaMalloc failed";
    const size_t n = compress_on_device(d_data.data(), chunk.data.size(), chunk.dtype, chunk.dims, o, d_frame.data(),
                                        d_frame.size());
    const Digest device = digest_of(d_frame.download(n));
    for (const auto& [path, got] : {std::pair<const char*, Digest>{"host chunk", host}, {"device chunk", device}})
      if (got != it->second)
        report << "  " << c.name << " (" << path << "): CPU pinned " << it->second.frame_bytes << " bytes "
               << it->second.fnv1a64 << ", GPU wrote " << got.frame_bytes << " bytes " << got.fnv1a64 << "\n";
    ++checked;
  }
  EXPECT_GE(checked, 80u);
  EXPECT_TRUE(report.str().empty()) << "the GPU's frames differ from the CPU's pinned digests (" << digest_file()
                                    << "):\n"
                                    << report.str()
                                    << "CPU and GPU must write the same bytes (docs/FORMAT.md section 0, rule 1).\n"
                                    << regenerate_advice();
}

}  // namespace
}  // namespace fz::digest
