// CNTK's configuration language and the `cntk` command line (src/brainscript/config.h,
// command_line.h), on CNTK's own config files where they exist.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "brainscript/command_line.h"
#include "brainscript/config.h"

using namespace cntk::brainscript;
namespace fs = std::filesystem;

namespace {

fs::path cntk_material(const std::string& rel) {
  return fs::path(CNTK_TEST_DATA_DIR) / ".." / "cntk-brainscript" / rel;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("bs_config_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

}  // namespace

TEST(BrainScriptConfig, NestedBlocksAndLookupOutwards) {
  auto r = ConfigRecord::parse("a = 1\nTrain = [\n  b = 2 ; SGD = [ c = 3 ]\n]\n");
  auto sgd = r->block("train")->block("SGD");  // keys are case-insensitive
  EXPECT_EQ(sgd->name(), "global:train:SGD");
  EXPECT_EQ(sgd->get("c"), "3");
  EXPECT_EQ(sgd->get("b"), "2");  // from the enclosing block
  EXPECT_EQ(sgd->get("A"), "1");
  EXPECT_FALSE(sgd->exists_here("b"));
  EXPECT_THROW(sgd->get("missing"), cntk::ValueError);
  EXPECT_EQ(sgd->get("missing", "x"), "x");
}

TEST(BrainScriptConfig, ValuesFlagsStringsAndDefault) {
  auto r = ConfigRecord::parse("s = \"a;b#c\"  # comment\nflag\nn = 2.5e1\nt = True\nd = default\nx=a#b\n");
  EXPECT_EQ(r->get("s"), "a;b#c");  // as in CNTK, a blank then '#' would start a comment even in quotes
  EXPECT_TRUE(r->get_bool("flag", false));
  EXPECT_EQ(r->get_double("n", 0), 25);
  EXPECT_TRUE(r->get_bool("t", false));
  EXPECT_FALSE(r->exists("d"));  // "default" reads as absent
  EXPECT_EQ(r->get_int("d", 7), 7);
  EXPECT_EQ(r->get("x"), "a#b");  // a '#' not after a blank starts no comment
  EXPECT_THROW(r->get_double("s", 0), cntk::ValueError);
  EXPECT_THROW(r->get_bool("n", false), cntk::ValueError);
}

TEST(BrainScriptConfig, VariablesResolveFromTheirRecordOutwards) {
  auto r = ConfigRecord::parse(
      "RootDir = \"..\"\nDataDir = \"$RootDir$/Data\"\nT = [ file = \"$DataDir$/train.txt\" ; cost = $5 ]\n"
      "bad = $nothing$\nloop = $loop$\ndd = a$$b\n");
  EXPECT_EQ(r->block("T")->get("file"), "../Data/train.txt");
  EXPECT_EQ(r->block("T")->get("cost"), "$5");  // '$' before a non-letter is a plain character
  EXPECT_THROW(r->get("bad"), cntk::ValueError);
  EXPECT_THROW(r->get("loop"), cntk::ValueError);
  EXPECT_THROW(r->get("dd"), cntk::ValueError);  // CNTK refused $$
}

TEST(BrainScriptConfig, ArraysWithRepetition) {
  EXPECT_EQ(split_config_array("0.5:0.2*3:0.1"), (std::vector<std::string>{"0.5", "0.2", "0.2", "0.2", "0.1"}));
  EXPECT_EQ(split_config_array("2:50*2:2"), (std::vector<std::string>{"2", "50", "50", "2"}));
  EXPECT_EQ(split_config_array("PosteriorProb : labels"), (std::vector<std::string>{"PosteriorProb", "labels"}));
  EXPECT_EQ(split_config_array("(a:b)"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_config_array("train"), (std::vector<std::string>{"train"}));
  EXPECT_THROW(split_config_array("1*x"), cntk::ValueError);
}

TEST(BrainScriptConfig, BlockAssignedAgainMerges) {
  auto r =
      ConfigRecord::parse("T = [ SGD = [ maxEpochs = 10 ; lr = 1 ] ; x = 1 ]\nT=[SGD=[maxEpochs=3]]\nx = 5\nx = 6\n");
  auto sgd = r->block("T")->block("SGD");
  EXPECT_EQ(sgd->get("maxEpochs"), "3");
  EXPECT_EQ(sgd->get("lr"), "1");
  EXPECT_EQ(r->get("x"), "6");  // a plain value is replaced
}

TEST(BrainScriptConfig, CustomSeparatorAfterBracket) {
  auto r = ConfigRecord::parse("T = [| a = 1 | b = x;y ]\n");
  EXPECT_EQ(r->block("T")->get("b"), "x;y");
}

TEST(BrainScriptConfig, ErrorsNameFileLineAndColumn) {
  TempDir dir;
  const std::string path = dir.write("bad.cntk", "a = 1\nTrain = [\n  x = [ 1\n  y = 2\n]\n");
  try {
    parse_command_line({"configFile=" + path});
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("bad.cntk(2,9)"), std::string::npos) << what;
    EXPECT_NE(what.find("\n  Train = [\n          ^"), std::string::npos) << what;
  }
}

TEST(BrainScriptCommandLine, ConfigFilesIncludesAndOverrides) {
  TempDir dir;
  dir.write("common.cntk", "dim = 2\nmodelPath = \"m.dnn\"\n");
  const std::string a = dir.write("a.cntk", "include=" + (dir.path / "common.cntk").string() +
                                                "\ncommand = T:E\nT = [ action = train ; SGD = [ maxEpochs = 10 ] ]\n");
  const std::string b = dir.write("b.cntk", "E = [ action = test ; d = $dim$ ]\n");
  auto cl = parse_command_line({"configFile=" + a + "+" + b, "T=[SGD=[maxEpochs=3]]", "dim=7", "stderr=log"});
  const auto& c = *cl.config;
  EXPECT_EQ(c.get_array("command"), (std::vector<std::string>{"T", "E"}));
  EXPECT_EQ(c.block("T")->block("SGD")->get("maxEpochs"), "3");
  EXPECT_EQ(c.block("E")->get("d"), "7");  // the command line overrides, and $dim$ reads the last value
  EXPECT_EQ(c.get("modelPath"), "m.dnn");
  EXPECT_EQ(c.get("stderr"), "log");
  EXPECT_EQ(cl.config_dirs.size(), 3u);
  EXPECT_THROW(parse_command_line({"configFile=" + a, "configFile=" + a}), cntk::ValueError);
}

TEST(BrainScriptCommandLine, CntkOneHiddenConfig) {
  const fs::path cfg = cntk_material("Tests/EndToEndTests/Simple2d/OneHidden.cntk");
  if (!fs::exists(cfg)) GTEST_SKIP() << cfg << " is absent";
  auto cl = parse_command_line(
      {"configFile=" + cfg.string(), "RootDir=/r", "DeviceId=-1", "Simple_Demo_Train=[SGD=[maxEpochs=3]]"});
  const auto& c = *cl.config;
  EXPECT_EQ(c.get("modelPath"), "/r/Output/Models/simple.dnn");
  EXPECT_EQ(c.get_array("command"),
            (std::vector<std::string>{"Simple_Demo_Train", "Simple_Demo_Test", "Simple_Demo_Output"}));
  auto train = c.block("Simple_Demo_Train");
  EXPECT_EQ(train->get("action"), "train");
  EXPECT_EQ(train->block("SimpleNetworkBuilder")->get_array("layerSizes"),
            (std::vector<std::string>{"2", "50", "50", "2"}));
  auto sgd = train->block("SGD");
  EXPECT_EQ(sgd->get_int("maxEpochs", 0), 3);
  EXPECT_EQ(sgd->get_array("learningRatesPerMB").size(), 22u);
  EXPECT_EQ(train->block("reader")->get("file"), "/r/Data/SimpleDataTrain_cntk_text.txt");
  auto out = c.block("Simple_Demo_Output");
  EXPECT_EQ(out->get_array("outputNodeNames"), (std::vector<std::string>{"PosteriorProb", "labels"}));
  EXPECT_EQ(out->block("format")->get("sequenceEpilogue"), "\\t// %s\\n");
}

TEST(BrainScriptCommandLine, LogisticRegressionNetworkBuilderIsBrainScript) {
  const fs::path cfg = cntk_material("Tutorials/HelloWorld-LogisticRegression/lr_bs.cntk");
  if (!fs::exists(cfg)) GTEST_SKIP() << cfg << " is absent";
  auto cl = parse_command_line({"configFile=" + cfg.string()});
  const std::string net = cl.config->block("Train")->get("BrainScriptNetworkBuilder");
  ASSERT_EQ(net.front(), '[');
  auto tree = parse_expression(net);  // the block is a BrainScript record, $dimension$ resolved
  ASSERT_EQ(tree->op, "[]");
  EXPECT_EQ(tree->named.at("SDim").second->number, 2);
  EXPECT_EQ(tree->named.at("p").second->op, "(");
  EXPECT_EQ(tree->named.count("outputNodes"), 1u);
}
