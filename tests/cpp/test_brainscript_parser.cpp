// BrainScript parser: CNTK's parser test cases (Input<N>.txt) against their expected trees
// (ExpectedOutput<N>.txt), compared as CNTK's ParserTests do; and syntax errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "brainscript/parser.h"

using namespace cntk::brainscript;
namespace fs = std::filesystem;

namespace {

fs::path parser_data() {
  return fs::path(CNTK_TEST_DATA_DIR) / ".." / "cntk-brainscript" / "Tests" / "UnitTests" / "BrainScriptTests" /
         "Data" / "Parser";
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// CNTK's comparison drops carriage returns and trailing blanks and newlines.
std::string normalize(std::string s) {
  std::erase(s, '\r');
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

}  // namespace

TEST(BrainScriptParser, CntkParserTestCases) {
  const fs::path dir = parser_data();
  if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is absent";
  int n = 1;
  for (;; ++n) {
    const fs::path input = dir / ("Input" + std::to_string(n) + ".txt");
    if (!fs::exists(input)) break;
    SCOPED_TRACE("Input" + std::to_string(n) + ".txt");
    const std::string expected = read(dir / ("ExpectedOutput" + std::to_string(n) + ".txt"));
    const ExpressionPtr tree = parse_record(read(input), "Test");
    EXPECT_EQ(normalize(tree->dump()), normalize(expected));
  }
  EXPECT_GE(n - 1, 20);  // CNTK ships 20 input/expected pairs
}

TEST(BrainScriptParser, SyntaxErrorNamesFileLineColumnWithCaret) {
  try {
    parse_record("a = 1\nb = (2 + \n  * 3)\n", "net.bs");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.location.line, 2u);
    EXPECT_EQ(e.location.column, 2u);
    const std::string what = e.what();
    EXPECT_NE(what.find("net.bs(3,3): syntax error: operand expected"), std::string::npos) << what;
    EXPECT_NE(what.find("\n    * 3)\n    ^"), std::string::npos) << what;
  }
}

TEST(BrainScriptParser, LexicalErrors) {
  EXPECT_THROW(parse_record("a = 'unterminated", "x"), ConfigError);
  EXPECT_THROW(parse_record("a = 1 /* open", "x"), ConfigError);
  EXPECT_THROW(parse_record("a = 1 ? 2", "x"), ConfigError);
  EXPECT_THROW(parse_record("a = 1\na = 2", "x"), ConfigError);  // duplicate member
  EXPECT_THROW(parse_record("a = 1 )", "x"), ConfigError);       // junk at end
  EXPECT_THROW(parse_record(std::string(5000, '(') + "1", "x"), ConfigError);
}

TEST(BrainScriptParser, NumbersCommentsAndRanges) {
  auto r = parse_record("a = array[1..3](i => i) # comment\nb = .5 // other\nc = [| |]\n/* x */ d = 2.5e1", "x");
  ASSERT_EQ(r->named.size(), 4u);
  EXPECT_EQ(r->named["a"].second->args[1]->number, 3);
  EXPECT_EQ(r->named["b"].second->number, 0.5);
  EXPECT_EQ(r->named["c"].second->op, ":");
  EXPECT_TRUE(r->named["c"].second->args.empty());
  EXPECT_EQ(r->named["d"].second->number, 25);
}

TEST(BrainScriptParser, IncludeReadsBesideTheIncludingFile) {
  const fs::path dir =
      fs::temp_directory_path() / ("bs_include_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::create_directories(dir);
  std::ofstream(dir / "lib.bs") << "libValue = 42\n";
  std::ofstream(dir / "main.bs") << "include \"lib.bs\"\nx = libValue + 1\n";
  auto r = parse_record_file((dir / "main.bs").string());
  EXPECT_EQ(r->named.count("libValue"), 1u);
  EXPECT_EQ(r->named.count("x"), 1u);
  std::ofstream(dir / "bad.bs") << "y = 1\nz = 1 ? 2\n";
  std::ofstream(dir / "main2.bs") << "include 'bad.bs'\n";
  try {
    parse_record_file((dir / "main2.bs").string());
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.bs(2,7): syntax error: unexpected character '?'"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

TEST(BrainScriptParser, IncludeOfANameTheFileSystemRefusesIsAnError) {
  // A name longer than any file name (found by fuzz-brainscript): the file system's own error
  // escaped as std::filesystem::filesystem_error.
  const std::string name(5000, 'a');
  EXPECT_THROW(parse_record("include '" + name + "'\nx = 1\n", "fuzz"), ConfigError);
  EXPECT_THROW(parse_record("include '" + name + "/" + name + "'\n", "fuzz"), ConfigError);
}
