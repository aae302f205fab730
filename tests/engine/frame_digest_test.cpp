// The encoder's bytes, pinned: every case of frame_digests.hpp (blocks of the
// real fields, every preset and mode, three bounds, special values, ragged
// shapes, integer chunks) is compressed on the CPU with 1 thread and with all
// threads, and each frame's size and FNV-1a digest must equal its line of
// tests/golden/frame_digests.txt. The golden corpus pins decoding; this pins
// encoding, so a change of bytes fails here and is made deliberately:
//
//   FZ_UPDATE_DIGESTS=1 build/tests/frame_digest_test   # rewrites the file
//
// (docs/FORMAT.md, "Frames pinned by digests"). The GPU twin is
// frame_digest_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "frame_digests.hpp"

namespace fz::digest {
namespace {

bool updating() {
  const char* env = std::getenv("FZ_UPDATE_DIGESTS");
  return env && std::string(env) == "1";
}

// The frame of one case on the CPU backend with `threads` threads; an engine
// warning (a chunk stored raw after a failure) fails the test.
Bytes cpu_frame(const Case& c, unsigned threads) {
  Options o = c.options;
  o.device = "cpu";
  o.threads = threads;
  o.log = [&c](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning) ADD_FAILURE() << c.name << ": engine warning: " << message;
  };
  return compress(c.chunk->data.data(), c.chunk->data.size(), c.chunk->dtype, c.chunk->dims, o);
}

TEST(FrameDigests, EveryCaseGivesItsPinnedBytesOnOneAndAllThreads) {
  const std::vector<Case> all = cases();
  std::vector<std::pair<std::string, Digest>> computed;
  std::set<std::string> names;
  for (const Case& c : all) {
    ASSERT_TRUE(names.insert(c.name).second) << "case named twice: " << c.name;
    const Digest one = digest_of(cpu_frame(c, 1));
    const Digest every = digest_of(cpu_frame(c, 0));
    EXPECT_EQ(one, every) << c.name << ": the frame depends on the thread count (1 thread: " << one.fnv1a64
                          << ", all threads: " << every.fnv1a64 << ")";
    computed.emplace_back(c.name, one);
  }
  EXPECT_GE(computed.size(), 200u);

  if (updating()) {
    write_digests(computed);
    std::printf("FZ_UPDATE_DIGESTS=1: wrote %zu digests to %s\n", computed.size(), digest_file().c_str());
    return;
  }

  const auto pinned = read_digests();
  std::map<std::string, Digest> expected(pinned.begin(), pinned.end());
  std::ostringstream report;
  size_t problems = 0;
  for (const auto& [name, got] : computed) {
    const auto it = expected.find(name);
    if (it == expected.end()) {
      report << "  new case, not in the file: " << name << " " << got.frame_bytes << " " << got.fnv1a64 << "\n";
      ++problems;
    } else if (it->second != got) {
      report << "  changed: " << name << ": pinned " << it->second.frame_bytes << " bytes " << it->second.fnv1a64
             << ", now " << got.frame_bytes << " bytes " << got.fnv1a64 << "\n";
      ++problems;
    }
  }
  for (const auto& [name, d] : pinned)
    if (!names.count(name)) {
      report << "  in the file but no longer a case: " << name << "\n";
      ++problems;
    }
  bool same_order = problems == 0;
  for (size_t i = 0; same_order && i < pinned.size(); ++i) same_order = pinned[i].first == computed[i].first;
  if (problems == 0 && !same_order) report << "  the file's lines are not in case order\n";
  EXPECT_TRUE(problems == 0 && same_order)
      << problems << " of " << computed.size() << " frame digests differ from " << digest_file() << ":\n"
      << report.str() << regenerate_advice();
}

}  // namespace
}  // namespace fz::digest
