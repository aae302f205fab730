// Every committed golden corpus (tests/golden/v<major>.<minor>/) decodes bit-exactly
// with this build, forever: frames written by a released version stay readable.
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "fz/fz.hpp"

namespace {

fz::Bytes read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("missing golden file " + path);
  return fz::Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::string> corpus_dirs() {
  std::vector<std::string> dirs;
  if (DIR* d = opendir(FZ_GOLDEN_DIR)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] == 'v') dirs.push_back(std::string(FZ_GOLDEN_DIR) + "/" + e->d_name);
    closedir(d);
  }
  return dirs;
}

TEST(Golden, EveryCommittedFrameDecodesBitExactly) {
  const auto dirs = corpus_dirs();
  ASSERT_FALSE(dirs.empty()) << "no golden corpus under " << FZ_GOLDEN_DIR;
  size_t checked = 0;
  for (const auto& dir : dirs) {
    std::ifstream manifest(dir + "/MANIFEST");
    ASSERT_TRUE(manifest) << dir;
    std::string line;
    while (std::getline(manifest, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string name;
      int cls, order;
      uint32_t size;
      fields >> name >> cls >> size >> order;
      std::vector<uint64_t> dims;
      for (uint64_t d; fields >> d;) dims.push_back(d);
      SCOPED_TRACE(dir + "/" + name);
      const fz::Bytes frame = read_file(dir + "/" + name + ".fzm");
      const fz::Bytes expected = read_file(dir + "/" + name + ".raw");
      const fz::Decoded d = fz::decompress(frame.data(), frame.size());
      EXPECT_TRUE(d.data == expected);
      EXPECT_EQ(int(d.dtype.element_class), cls);
      EXPECT_EQ(d.dtype.size, size);
      EXPECT_EQ(int(d.dtype.order), order);
      EXPECT_EQ(d.dims, dims);
      ++checked;
    }
  }
  EXPECT_GE(checked, 15u);
}

}  // namespace
