// CTF parser over CNTK's own reader-test inputs and the ATIS corpus.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/ctf_parser.h"

using cntk::DataType;
using cntk::IOError;
using cntk::io::CTFOptions;
using cntk::io::CTFParser;
using cntk::io::CTFSequence;
using cntk::io::CTFStreamConfig;

namespace fs = std::filesystem;

namespace {

std::string data_dir(const std::string& sub) {
  fs::path p = fs::path(CNTK_TEST_DATA_DIR) / sub;
  return fs::is_directory(p) ? p.string() : std::string();
}

#define REQUIRE_DATA(var, sub)     \
  std::string var = data_dir(sub); \
  if (var.empty()) GTEST_SKIP() << "test data folder " << CNTK_TEST_DATA_DIR << "/" << sub << " is absent"

CTFStreamConfig dense(std::string a, size_t dim, DataType t = DataType::Float) { return {std::move(a), dim, false, t}; }
CTFStreamConfig sparse(std::string a, size_t dim, DataType t = DataType::Float) { return {std::move(a), dim, true, t}; }

std::vector<CTFSequence> read_all(const std::string& path, std::vector<CTFStreamConfig> streams, CTFOptions opt = {}) {
  CTFParser parser(path, std::move(streams), opt);
  std::vector<CTFSequence> out;
  CTFSequence seq;
  while (parser.next(seq)) out.push_back(seq);
  return out;
}

// Writes text to a temporary file and returns its path.
std::string temp_file(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("cntk_ctf_test_" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

}  // namespace

TEST(CTFParser, SimpleDenseOneSamplePerLine) {
  REQUIRE_DATA(dir, "ctf-reader");
  auto seqs = read_all(dir + "/Simple_dense.txt", {dense("F", 2), dense("L", 2)});
  ASSERT_EQ(seqs.size(), 10000u);
  const auto& s0 = seqs[0];
  EXPECT_FALSE(s0.has_id);
  EXPECT_EQ(s0.first_line, 1u);
  ASSERT_EQ(s0.streams[0].num_samples, 1u);
  EXPECT_FLOAT_EQ(s0.streams[0].values_f[0], -0.127551f);
  EXPECT_FLOAT_EQ(s0.streams[0].values_f[1], 0.650403f);
  EXPECT_EQ(s0.streams[1].values_f, (std::vector<float>{1, 0}));
  EXPECT_EQ(seqs[1].streams[1].values_f, (std::vector<float>{0, 1}));
}

TEST(CTFParser, DenseSequencesAsDouble) {
  REQUIRE_DATA(dir, "ctf-reader");
  auto seqs = read_all(dir + "/10x10_dense.txt", {dense("F0", 5, DataType::Double)});
  ASSERT_EQ(seqs.size(), 10u);
  for (size_t i = 0; i < seqs.size(); ++i) {
    EXPECT_TRUE(seqs[i].has_id);
    EXPECT_EQ(seqs[i].id, i);
    EXPECT_EQ(seqs[i].streams[0].num_samples, 10u);
    EXPECT_EQ(seqs[i].streams[0].values_d.size(), 50u);
    EXPECT_TRUE(seqs[i].streams[0].values_f.empty());
  }
  EXPECT_DOUBLE_EQ(seqs[0].streams[0].values_d[0], 1.49457);
  EXPECT_DOUBLE_EQ(seqs[0].streams[0].values_d[4], 45345.1);
  EXPECT_DOUBLE_EQ(seqs[0].streams[0].values_d[17], -7.50127e-006);
}

TEST(CTFParser, SparseLinesWithoutIdContinueTheSequence) {
  REQUIRE_DATA(dir, "ctf-reader");
  // Only the first line of each sequence carries the id.
  auto seqs = read_all(dir + "/10x10_sparse.txt", {sparse("F0", 100)});
  ASSERT_EQ(seqs.size(), 10u);
  EXPECT_EQ(seqs[9].id, 9u);
  const auto& d = seqs[0].streams[0];
  ASSERT_EQ(d.num_samples, 10u);
  ASSERT_EQ(d.offsets.size(), 11u);
  EXPECT_EQ(d.offsets[0], 0u);
  EXPECT_EQ(d.indices[0], 1);
  EXPECT_FLOAT_EQ(d.values_f[0], 21217.5f);
  EXPECT_EQ(d.indices[4], 71);
  EXPECT_EQ(d.offsets[1], 5u);
  EXPECT_EQ(d.indices[5], 6);
}

TEST(CTFParser, JaggedStreamsMissingOnSomeLines) {
  REQUIRE_DATA(dir, "ctf-reader");
  auto seqs = read_all(dir + "/5x10_and_5x5_jagged.txt", {dense("F0", 10), dense("F1", 5)});
  ASSERT_EQ(seqs.size(), 5u);  // ids 0, 2, 3, 4, 1 in file order
  EXPECT_EQ(seqs[0].streams[0].num_samples, 7u);
  EXPECT_EQ(seqs[0].streams[1].num_samples, 5u);
  EXPECT_EQ(seqs[1].id, 2u);
  EXPECT_EQ(seqs[1].streams[0].num_samples, 4u);
  EXPECT_EQ(seqs[1].streams[1].num_samples, 10u);
  EXPECT_EQ(seqs[4].id, 1u);
  EXPECT_EQ(seqs[4].first_line, 34u);
  EXPECT_FLOAT_EQ(seqs[0].streams[1].values_f[4], 45345.1f);
}

TEST(CTFParser, MultipleSparseInputs) {
  REQUIRE_DATA(dir, "ctf-reader");
  auto seqs = read_all(dir + "/20x10_MI_jagged_samples_sparse.txt",
                       {sparse("F0", 1000), sparse("F1", 1000), sparse("F2", 1000)});
  size_t samples = 0;
  for (auto& s : seqs) samples += s.streams[2].num_samples;
  EXPECT_EQ(samples, 200u);
  EXPECT_EQ(seqs[0].streams[0].indices[0], 0);
  EXPECT_FLOAT_EQ(seqs[0].streams[0].values_f[0], -0.0304959f);
}

TEST(CTFParser, SmallChunksGiveTheSameResult) {
  REQUIRE_DATA(dir, "ctf-reader");
  std::string f = dir + "/100x100_jagged_sequences_sparse.txt";
  CTFOptions small;
  small.chunk_size = 17;  // far shorter than a line
  auto a = read_all(f, {sparse("F0", 1000)});
  auto b = read_all(f, {sparse("F0", 1000)}, small);
  ASSERT_EQ(a.size(), 100u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, b[i].id);
    EXPECT_EQ(a[i].streams[0].num_samples, b[i].streams[0].num_samples);
    EXPECT_EQ(a[i].streams[0].indices, b[i].streams[0].indices);
    EXPECT_EQ(a[i].streams[0].values_f, b[i].streams[0].values_f);
    EXPECT_EQ(a[i].streams[0].offsets, b[i].streams[0].offsets);
  }
}

TEST(CTFParser, BlankLinesAndMissingTrailingNewline) {
  REQUIRE_DATA(dir, "ctf-reader");
  auto blank = read_all(dir + "/contains_blank_lines.txt", {dense("features", 1)});
  ASSERT_EQ(blank.size(), 2u);
  EXPECT_EQ(blank[0].streams[0].values_f, std::vector<float>{1.0f});
  EXPECT_EQ(blank[1].streams[0].values_f, std::vector<float>{2.0f});
  EXPECT_EQ(blank[1].first_line, 3u);

  auto tail = read_all(dir + "/missing_trailing_newline.txt", {dense("features", 1)});
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_EQ(tail[0].streams[0].values_f, (std::vector<float>{1.0f, 2.0f}));
}

TEST(CTFParser, CommentsAreSkipped) {
  REQUIRE_DATA(dir, "ctf-reader");
  auto seqs = read_all(dir + "/ref_data_with_escape_sequences.txt", {sparse("F0", 100), dense("F1", 3)});
  ASSERT_EQ(seqs.size(), 3u);
  EXPECT_EQ(seqs[0].streams[0].num_samples, 3u);
  EXPECT_EQ(seqs[0].streams[1].num_samples, 2u);
  EXPECT_EQ(seqs[0].streams[0].indices, (std::vector<int32_t>{3, 10, 27, 68, 14, 39}));
  EXPECT_FLOAT_EQ(seqs[0].streams[1].values_f[3], 6.18595f);
  EXPECT_EQ(seqs[1].streams[1].num_samples, 1u);
  EXPECT_EQ(seqs[2].streams[0].num_samples, 3u);
  EXPECT_EQ(seqs[2].streams[1].num_samples, 1u);
}

TEST(CTFParser, CommentEscapesAndImplicitSparseValue) {
  std::string f = temp_file("escape.txt",
                            "|# a |# escaped bar |A 7 |B 3\n"
                            "5 |B 1 2:0.5\t|# note\r\n"
                            "5 |A 1e2|# x|# y|B 0:-1\n");
  auto seqs = read_all(f, {dense("A", 1), sparse("B", 4)});
  ASSERT_EQ(seqs.size(), 2u);
  // "|#" inside a comment is an escaped bar; the comment ends at the next "|" not followed by "#".
  EXPECT_EQ(seqs[0].first_line, 1u);
  EXPECT_EQ(seqs[0].streams[0].values_f, std::vector<float>{7.0f});
  EXPECT_EQ(seqs[0].streams[1].indices, std::vector<int32_t>{3});
  EXPECT_EQ(seqs[0].streams[1].values_f, std::vector<float>{1.0f});
  EXPECT_EQ(seqs[1].streams[1].indices, (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(seqs[1].streams[1].values_f, (std::vector<float>{1, 0.5f, -1}));
  EXPECT_EQ(seqs[1].streams[1].offsets, (std::vector<size_t>{0, 2, 3}));
  EXPECT_EQ(seqs[1].streams[0].values_f, std::vector<float>{100.0f});
  fs::remove(f);
}

TEST(CTFParser, SpaceSeparated) {
  REQUIRE_DATA(dir, "ctf-reader");
  auto seqs =
      read_all(dir + "/space_separated.txt", {dense("F1", 15), dense("F2", 12), dense("F3", 1, DataType::Double)});
  ASSERT_EQ(seqs.size(), 1u);
  EXPECT_EQ(seqs[0].streams[0].num_samples, 2u);
  EXPECT_DOUBLE_EQ(seqs[0].streams[2].values_d[1], 928.385610618689);
}

TEST(CTFParser, EmptySamplesAndTolerance) {
  REQUIRE_DATA(dir, "ctf-reader");
  std::string f = dir + "/empty_samples.txt";
  std::vector<CTFStreamConfig> streams{dense("F0", 10), sparse("F1", 10)};
  try {
    read_all(f, streams);
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("empty_samples.txt:2:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected 10 values"), std::string::npos) << msg;
  }
  CTFOptions opt;
  opt.max_errors = 2;
  CTFParser parser(f, streams, opt);
  std::vector<CTFSequence> seqs;
  CTFSequence s;
  while (parser.next(s)) seqs.push_back(s);
  ASSERT_EQ(parser.warnings().size(), 2u);
  EXPECT_NE(parser.warnings()[0].find(":2:"), std::string::npos);
  EXPECT_NE(parser.warnings()[1].find(":6:"), std::string::npos);
  ASSERT_EQ(seqs.size(), 2u);  // sequence 0 has no valid sample left
  EXPECT_EQ(seqs[0].id, 1u);
  EXPECT_EQ(seqs[0].streams[0].num_samples, 2u);
  EXPECT_EQ(seqs[0].streams[1].num_samples, 1u);
  EXPECT_EQ(seqs[1].id, 2u);
  EXPECT_EQ(seqs[1].streams[0].num_samples, 1u);
  EXPECT_EQ(seqs[1].streams[1].num_samples, 0u);

  opt.max_errors = 1;
  EXPECT_THROW(read_all(f, streams, opt), IOError);
}

TEST(CTFParser, DuplicateInputsRaise) {
  REQUIRE_DATA(dir, "ctf-reader");
  try {
    read_all(dir + "/duplicate_inputs.txt", {dense("F1", 1), dense("F2", 1)});
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("duplicate_inputs.txt:1:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'F2' given twice"), std::string::npos) << msg;
  }
}

TEST(CTFParser, InvalidInputsNameFileAndLine) {
  REQUIRE_DATA(dir, "ctf-reader");
  std::string f = dir + "/invalid_inputs.txt";
  std::vector<CTFStreamConfig> streams{dense("A", 1), sparse("B", 10)};
  try {
    read_all(f, streams);
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("invalid_inputs.txt:2:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index 10 out of range"), std::string::npos) << msg;
  }
  CTFOptions opt;
  opt.max_errors = 1000;
  CTFParser parser(f, streams, opt);
  CTFSequence s;
  size_t n = 0;
  while (parser.next(s)) ++n;
  std::vector<size_t> lines;
  for (const auto& w : parser.warnings()) {
    auto a = w.find("invalid_inputs.txt:");
    ASSERT_NE(a, std::string::npos) << w;
    lines.push_back(std::stoul(w.substr(a + 19)));
  }
  // Lines 5 to 17 are malformed except 7 ("20." is a number), 9 (index 2 with the implicit value 1)
  // and 13 (a comment); so are the empty stream names of lines 19, 21, 28 and 31, and line 40 (two
  // values for a dense stream of dimension 1).
  EXPECT_EQ(lines, (std::vector<size_t>{2, 3, 5, 6, 8, 10, 11, 12, 14, 15, 16, 17, 19, 21, 28, 31, 40}));
  EXPECT_GT(n, 0u);

  // CNTK 2.7 rejects a sparse index without a value (line 9, "|B 2 ").
  opt.require_sparse_values = true;
  CTFParser strict(f, streams, opt);
  while (strict.next(s)) {
  }
  ASSERT_EQ(strict.warnings().size(), lines.size() + 1);
  EXPECT_NE(strict.warnings()[5].find("invalid_inputs.txt:9: expected ':' and a value after index 2"),
            std::string::npos)
      << strict.warnings()[5];
}

TEST(CTFParser, MalformedLinesNameWhatWasExpected) {
  struct Case {
    const char* text;
    size_t line;
    const char* expect;
  };
  const Case cases[] = {
      {"1 |A 1\nx |A 1\n", 2, "expected a sequence id or '|'"},
      {"1 |A 1\n1x |A 1\n", 2, "expected a sequence id"},
      {"|A 1\n|A\t1 2|B 1\n", 2, "expected 1 values in dense stream 'A', found 2"},
      {"|A 1\n|A\t1 junk|B 1\n", 2, "expected a number in dense stream 'A', found 'junk'"},
      {"|A 1 |B 1:2:3\n", 1, "expected a number after ':'"},
      {"|A 1 |B a:1\n", 1, "expected an index"},
      {"|A nan1\n", 1, "expected a number in dense stream 'A'"},
      {"\n\n7 x |A 1\n", 3, "expected '|' followed by a stream name, found 'x'"},
  };
  for (const auto& c : cases) {
    std::string f = temp_file("bad.txt", c.text);
    try {
      read_all(f, {dense("A", 1), sparse("B", 4)});
      ADD_FAILURE() << "no error for: " << c.text;
    } catch (const IOError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(f + ":" + std::to_string(c.line) + ":"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    }
    fs::remove(f);
  }
  EXPECT_THROW(CTFParser("/nonexistent/file.ctf", {dense("A", 1)}), IOError);
}

TEST(CTFParser, AtisCounts) {
  REQUIRE_DATA(dir, "atis");
  std::vector<CTFStreamConfig> streams{sparse("S0", 943), sparse("S1", 26), sparse("S2", 129)};
  struct Expect {
    const char* file;
    size_t sequences, tokens;
  };
  for (auto e : {Expect{"atis.train.ctf", 4978, 66547}, Expect{"atis.test.ctf", 893, 10984}}) {
    CTFParser parser(dir + "/" + e.file, streams);
    CTFSequence s;
    size_t n = 0, tokens = 0, intents = 0, slots = 0;
    while (parser.next(s)) {
      ++n;
      tokens += s.streams[0].num_samples;
      intents += s.streams[1].num_samples;
      slots += s.streams[2].num_samples;
      ASSERT_EQ(s.streams[1].num_samples, 1u) << e.file << " sequence " << s.id;
      ASSERT_EQ(s.streams[0].indices.size(), s.streams[0].num_samples);
    }
    EXPECT_EQ(n, e.sequences) << e.file;
    EXPECT_EQ(tokens, e.tokens) << e.file;
    EXPECT_EQ(slots, e.tokens) << e.file;
    EXPECT_EQ(intents, e.sequences) << e.file;
  }
}
