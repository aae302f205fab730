// docs/FORMAT.md, section 2 ("Stage type ids"), lists every stage of
// stage_list.inc by id and name: a frame's stage records are readable from the
// document alone (docs/ADDING_A_STAGE.md says to add the row).
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <sstream>
#include <string>

#include "common/stage/stage_samples.hpp"
#include "stage_names.hpp"

namespace fz::engine {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// docs/ from this file's path (tests/engine/ in the source tree).
std::string docs_dir() {
  const std::string here = __FILE__;
  return here.substr(0, here.rfind("/tests/engine/")) + "/docs";
}

TEST(StageDocs, FormatMdListsEveryStageIdAndName) {
  const std::string format = read_text(docs_dir() + "/FORMAT.md");
  const size_t table = format.find("## 2. Stage type ids");
  ASSERT_NE(table, std::string::npos) << "FORMAT.md has no section 2, \"Stage type ids\"";
  const std::string section = format.substr(table, format.find("\n## ", table + 1) - table);
  for (const ListedStage& listed : listed_stages()) {
    const std::string row = "| " + std::to_string(listed.id) + " | " + listed.name + " |";
    EXPECT_NE(section.find(row), std::string::npos) << "FORMAT.md section 2 lacks the row \"" << row << "\"";
  }
}

}  // namespace
}  // namespace fz::engine
