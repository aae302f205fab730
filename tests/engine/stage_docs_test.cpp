// docs/FORMAT.md lists every stage of stage_list.inc: by id and name in
// section 2 ("Stage type ids"), so a frame's stage records are readable from
// the document alone, and with its stream's own heading in section 4
// ("### NAME: what it is (stage type N)"), in id order, so a new stage's
// section has one place to go (docs/ADDING_A_STAGE.md, step 7).
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <stdexcept>
#include <sstream>
#include <string>
#include <vector>

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

// The stage type ids each "### " heading of section 4 names: "(stage type 9)",
// "(stage types 2 and 3)"; none for a heading without that suffix.
std::vector<std::vector<int>> section4_heading_ids(const std::string& format, std::vector<std::string>& headings) {
  const size_t start = format.find("## 4. Stage streams");
  if (start == std::string::npos) return {};
  const size_t end = format.find("\n## ", start + 1);
  const std::string section = format.substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::vector<std::vector<int>> ids;
  const std::regex heading(R"(\n### ([^\n]*))");
  const std::regex suffix(R"(\(stage types? ([0-9]+)(?: and ([0-9]+))?\)$)");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), heading); it != std::sregex_iterator(); ++it) {
    const std::string text = (*it)[1];
    headings.push_back(text);
    std::smatch m;
    std::vector<int> named;
    if (std::regex_search(text, m, suffix)) {
      named.push_back(std::stoi(m[1]));
      if (m[2].matched) named.push_back(std::stoi(m[2]));
    }
    ids.push_back(named);
  }
  return ids;
}

TEST(StageDocs, FormatMdSection4HasEveryStagesStreamInIdOrder) {
  const std::string format = read_text(docs_dir() + "/FORMAT.md");
  ASSERT_NE(format.find("## 4. Stage streams"), std::string::npos) << "FORMAT.md has no section 4, \"Stage streams\"";
  std::vector<std::string> headings;
  const std::vector<std::vector<int>> ids = section4_heading_ids(format, headings);
  std::set<int> documented;
  int previous = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_FALSE(ids[i].empty()) << "FORMAT.md section 4: \"### " << headings[i]
                                 << "\" does not end in \"(stage type N)\"";
    for (int id : ids[i]) {
      EXPECT_GT(id, previous) << "FORMAT.md section 4: \"### " << headings[i]
                              << "\" is out of id order (sections go by stage type id)";
      previous = id;
      documented.insert(id);
    }
  }
  for (const ListedStage& listed : listed_stages())
    EXPECT_TRUE(documented.count(listed.id)) << "FORMAT.md section 4 has no \"### ... (stage type " << listed.id
                                             << ")\" section for " << listed.name;
}

}  // namespace
}  // namespace fz::engine
