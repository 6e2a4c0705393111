// CNTK Binary Format reader and CTF -> CBF converter, over CNTK's own reader-test files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/cbf_deserializer.h"
#include "io/ctf_parser.h"

using cntk::DataType;
using cntk::IOError;
using cntk::ValueError;
using namespace cntk::io;

namespace fs = std::filesystem;

namespace {

std::string data_dir(const std::string& sub) {
  fs::path p = fs::path(CNTK_TEST_DATA_DIR) / sub;
  return fs::is_directory(p) ? p.string() : std::string();
}

#define REQUIRE_DATA(var, sub)     \
  std::string var = data_dir(sub); \
  if (var.empty()) GTEST_SKIP() << "test data folder " << CNTK_TEST_DATA_DIR << "/" << sub << " is absent"

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("cntk_cbf_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

std::vector<Sequence> read_all(Deserializer& d) {
  std::vector<Sequence> all;
  for (size_t c = 0; c < d.chunks().size(); ++c) {
    auto seqs = d.load_chunk(c);
    EXPECT_EQ(seqs.size(), d.chunks()[c].num_sequences);
    size_t samples = 0;
    for (auto& s : seqs) samples += s.num_samples();
    EXPECT_EQ(samples, d.chunks()[c].num_samples);
    std::move(seqs.begin(), seqs.end(), std::back_inserter(all));
  }
  return all;
}

// The CTF twin of a CBF test file: its alias in the text file, and the CBF's stream layout.
struct Twin {
  const char* name;
  std::vector<std::pair<std::string, std::string>> aliases;  // CBF stream name -> CTF alias
};

const std::vector<Twin> kTwins = {
    {"10x10_dense", {{"features", "F0"}}},
    {"10x10_sparse", {{"features", "F0"}}},
    {"50x20_jagged_sequences_dense", {{"features", "F0"}}},
    {"50x20_jagged_sequences_sparse", {{"features", "F0"}}},
    {"Simple_dense", {{"features", "F"}, {"labels", "L"}}},
};

// Parses a CTF file with the streams (and element types) of a CBF file.
std::vector<CTFSequence> parse_twin(const std::string& path, const CBFDeserializer& cbf, const Twin& twin) {
  std::vector<CTFStreamConfig> cfg;
  for (const auto& s : cbf.file_streams()) {
    auto it = std::find_if(twin.aliases.begin(), twin.aliases.end(), [&](auto& p) { return p.first == s.name; });
    EXPECT_NE(it, twin.aliases.end()) << s.name;
    cfg.push_back({it->second, s.dim, s.sparse, s.dtype});
  }
  CTFParser parser(path, cfg);
  std::vector<CTFSequence> out;
  CTFSequence seq;
  while (parser.next(seq)) out.push_back(seq);
  return out;
}

// A sparse sample's entries sorted by index (CBF stores them sorted; CTF keeps the file's order).
template <class V>
void sort_sample(std::vector<int32_t>& idx, std::vector<V>& val, size_t b, size_t e) {
  std::vector<size_t> order(e - b);
  std::iota(order.begin(), order.end(), b);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return idx[x] < idx[y]; });
  std::vector<int32_t> i2;
  std::vector<V> v2;
  for (size_t k : order) {
    i2.push_back(idx[k]);
    v2.push_back(val[k]);
  }
  std::copy(i2.begin(), i2.end(), idx.begin() + ptrdiff_t(b));
  std::copy(v2.begin(), v2.end(), val.begin() + ptrdiff_t(b));
}

void expect_same_stream(SequenceStream a, SequenceStream b, bool sparse, const std::string& where) {
  ASSERT_EQ(a.num_samples, b.num_samples) << where;
  if (sparse) {
    ASSERT_EQ(a.offsets, b.offsets) << where;
    for (size_t j = 0; j < a.num_samples; ++j) {
      if (!a.values_f.empty() || !b.values_f.empty()) {
        sort_sample(a.indices, a.values_f, a.offsets[j], a.offsets[j + 1]);
        sort_sample(b.indices, b.values_f, b.offsets[j], b.offsets[j + 1]);
      } else {
        sort_sample(a.indices, a.values_d, a.offsets[j], a.offsets[j + 1]);
        sort_sample(b.indices, b.values_d, b.offsets[j], b.offsets[j + 1]);
      }
    }
    EXPECT_EQ(a.indices, b.indices) << where;
  }
  EXPECT_EQ(a.values_f, b.values_f) << where;
  EXPECT_EQ(a.values_d, b.values_d) << where;
}

}  // namespace

TEST(CBFDeserializer, EveryShippedFileReads) {
  REQUIRE_DATA(dir, "cbf-reader");
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".bin") continue;
    ++files;
    CBFDeserializer d(entry.path().string());
    ASSERT_FALSE(d.streams().empty()) << entry.path();
    auto all = read_all(d);
    size_t sequences = 0;
    for (const auto& c : d.chunks()) sequences += c.num_sequences;
    EXPECT_EQ(all.size(), sequences) << entry.path();
    for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].key, i);
  }
  EXPECT_EQ(files, 6u);
}

TEST(CBFDeserializer, HeaderOfShippedFiles) {
  REQUIRE_DATA(dir, "cbf-reader");
  CBFDeserializer simple(dir + "/Simple_dense.bin");
  ASSERT_EQ(simple.streams().size(), 2u);
  EXPECT_EQ(simple.streams()[0].name, "features");
  EXPECT_EQ(simple.streams()[1].name, "labels");
  EXPECT_EQ(simple.streams()[0].dim(), 2u);
  EXPECT_FALSE(simple.streams()[0].sparse);
  EXPECT_EQ(simple.streams()[0].dtype, DataType::Float);
  ASSERT_EQ(simple.chunks().size(), 1u);
  EXPECT_EQ(simple.chunks()[0].num_sequences, 10000u);
  // First line of Simple_dense.txt: |F -0.127551 0.650403 |L 1 0
  auto seqs = simple.load_chunk(0);
  EXPECT_EQ(seqs[0].streams[0].values_f, (std::vector<float>{-0.127551f, 0.650403f}));
  EXPECT_EQ(seqs[0].streams[1].values_f, (std::vector<float>{1.f, 0.f}));

  CBFDeserializer jagged(dir + "/Simple_jagged_sequence.bin");
  EXPECT_EQ(jagged.streams().size(), 8u);
  EXPECT_EQ(jagged.chunks().size(), 101u);
  EXPECT_TRUE(jagged.streams()[2].sparse);
  EXPECT_EQ(jagged.streams()[2].dim(), 100000u);

  CBFDeserializer sparse_double(dir + "/10x10_sparse.bin");
  EXPECT_TRUE(sparse_double.streams()[0].sparse);
  EXPECT_EQ(sparse_double.streams()[0].dtype, DataType::Double);
}

TEST(CBFDeserializer, EqualsCTFTwin) {
  REQUIRE_DATA(cbf_dir, "cbf-reader");
  REQUIRE_DATA(ctf_dir, "ctf-reader");
  for (const auto& twin : kTwins) {
    CBFDeserializer cbf(cbf_dir + "/" + twin.name + ".bin");
    auto ctf = parse_twin(ctf_dir + "/" + twin.name + ".txt", cbf, twin);
    auto bin = read_all(cbf);
    ASSERT_EQ(bin.size(), ctf.size()) << twin.name;
    for (size_t i = 0; i < bin.size(); ++i)
      for (size_t s = 0; s < cbf.streams().size(); ++s)
        expect_same_stream(bin[i].streams[s], ctf[i].streams[s], cbf.streams()[s].sparse,
                           std::string(twin.name) + " sequence " + std::to_string(i));
  }
}

TEST(CBFDeserializer, SelectAndRenameStreams) {
  REQUIRE_DATA(dir, "cbf-reader");
  CBFDeserializer all(dir + "/Simple_dense.bin");
  CBFDeserializer one(dir + "/Simple_dense.bin", {{"y", "labels"}});
  ASSERT_EQ(one.streams().size(), 1u);
  EXPECT_EQ(one.streams()[0].name, "y");
  EXPECT_EQ(one.streams()[0].dim(), 2u);
  auto a = all.load_chunk(0), b = one.load_chunk(0);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].streams[1].values_f, b[i].streams[0].values_f);
  EXPECT_EQ(one.chunks()[0].num_samples, 10000u);
  EXPECT_THROW(CBFDeserializer(dir + "/Simple_dense.bin", {{"y", "nope"}}), ValueError);
  EXPECT_THROW(CBFDeserializer(dir + "/Simple_dense.bin", {{"y", "labels"}, {"y", "features"}}), ValueError);
}

TEST(CBFDeserializer, ChunkIdOutOfRange) {
  REQUIRE_DATA(dir, "cbf-reader");
  CBFDeserializer d(dir + "/10x10_dense.bin");
  EXPECT_THROW(d.load_chunk(1), ValueError);
}

// Every truncation and many single-byte corruptions of a real file raise IOError (or read), never crash.
TEST(CBFDeserializer, TruncatedAndCorruptFilesRaise) {
  REQUIRE_DATA(dir, "cbf-reader");
  for (const char* name : {"10x10_sparse.bin", "50x20_jagged_sequences_dense.bin"}) {
    auto bytes = read_bytes(dir + "/" + name);
    ASSERT_FALSE(bytes.empty());
    for (size_t n = 0; n < bytes.size(); n += (n < 64 || n + 64 > bytes.size()) ? 1 : 7) {
      std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + ptrdiff_t(n));
      EXPECT_THROW(
          {
            auto d = CBFDeserializer::from_memory(name, cut);
            read_all(*d);
          },
          IOError)
          << name << " truncated to " << n << " bytes";
    }
    for (size_t pos = 0; pos < bytes.size(); pos += 3) {
      auto bad = bytes;
      bad[pos] ^= 0xA5;
      try {
        auto d = CBFDeserializer::from_memory(name, bad);
        read_all(*d);
      } catch (const IOError& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos);
      }
    }
  }
}

TEST(CBFDeserializer, ErrorsNameFileAndProblem) {
  std::string path = temp_path("notcbf.bin");
  std::ofstream(path, std::ios::binary) << "this is a text file, not a CBF file at all";
  try {
    CBFDeserializer d(path);
    FAIL() << "no error";
  } catch (const IOError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("magic"), std::string::npos) << msg;
  }
  EXPECT_THROW(CBFDeserializer("/nonexistent/file.bin"), IOError);
  fs::remove(path);
}

TEST(CBFConverter, RoundTripsEveryTwin) {
  REQUIRE_DATA(cbf_dir, "cbf-reader");
  REQUIRE_DATA(ctf_dir, "ctf-reader");
  for (const auto& twin : kTwins) {
    CBFDeserializer shipped(cbf_dir + "/" + twin.name + ".bin");
    std::vector<CBFConvertStream> streams;
    for (const auto& s : shipped.file_streams()) {
      auto it = std::find_if(twin.aliases.begin(), twin.aliases.end(), [&](auto& p) { return p.first == s.name; });
      streams.push_back({s.name, it->second, s.sparse, s.dim});
    }
    DataType precision = shipped.file_streams()[0].dtype;
    std::string out = temp_path(std::string(twin.name) + ".bin");
    EXPECT_EQ(convert_ctf_to_cbf(ctf_dir + "/" + twin.name + ".txt", out, streams, size_t(1) << 30, precision), 1u);
    CBFDeserializer mine(out);
    auto a = read_all(mine), b = read_all(shipped);
    ASSERT_EQ(a.size(), b.size()) << twin.name;
    for (size_t i = 0; i < a.size(); ++i)
      for (size_t s = 0; s < streams.size(); ++s)
        expect_same_stream(a[i].streams[s], b[i].streams[s], streams[s].sparse,
                           std::string(twin.name) + " sequence " + std::to_string(i));
    // The encoding is deterministic: one chunk, same values, same layout -> the same bytes as CNTK's file.
    EXPECT_EQ(read_bytes(out), read_bytes(cbf_dir + "/" + twin.name + ".bin")) << twin.name;
    fs::remove(out);
  }
}

TEST(CBFConverter, ChunkSizeSplitsChunks) {
  REQUIRE_DATA(ctf_dir, "ctf-reader");
  std::string out = temp_path("chunks.bin");
  // Simple_dense: each sequence is 4 + 2 * (4 + 2 * 4) = 28 bytes; 280 bytes -> 10 sequences per chunk.
  size_t n = convert_ctf_to_cbf(ctf_dir + "/Simple_dense.txt", out,
                                {{"features", "F", false, 2}, {"labels", "L", false, 2}}, 280);
  EXPECT_EQ(n, 1000u);
  CBFDeserializer d(out);
  ASSERT_EQ(d.chunks().size(), 1000u);
  for (const auto& c : d.chunks()) EXPECT_EQ(c.num_sequences, 10u);
  auto seqs = d.load_chunk(999);
  EXPECT_EQ(seqs.front().key, 9990u);
  fs::remove(out);
}

TEST(CBFConverter, EmptyStreamsAndErrors) {
  std::string in = temp_path("jag.ctf"), out = temp_path("jag.bin");
  std::ofstream(in) << "0 |a 1 2 |b 3:1.5\n0 |a 3 4\n1 |b 0:2 1:-1\n";
  convert_ctf_to_cbf(in, out, {{"A", "a", false, 2}, {"B", "b", true, 4}}, 1 << 20, DataType::Double);
  CBFDeserializer d(out);
  auto seqs = d.load_chunk(0);
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(seqs[0].streams[0].values_d, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(seqs[0].streams[1].num_samples, 1u);
  EXPECT_EQ(seqs[1].streams[0].num_samples, 0u);
  EXPECT_EQ(seqs[1].streams[1].indices, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(seqs[1].num_samples(), 1u);
  EXPECT_EQ(d.chunks()[0].num_samples, 3u);
  EXPECT_THROW(convert_ctf_to_cbf(in, out, {}), ValueError);
  EXPECT_THROW(convert_ctf_to_cbf(in, out, {{"A", "a", false, 2}}, 1, DataType::Float16), ValueError);
  EXPECT_THROW(convert_ctf_to_cbf(in + ".missing", out, {{"A", "a", false, 2}}), IOError);
  std::ofstream(in) << "|a 1 2 3\n";
  EXPECT_THROW(convert_ctf_to_cbf(in, out, {{"A", "a", false, 2}}), IOError);
  fs::remove(in);
  fs::remove(out);
}

// ATIS (jagged sparse sequences, three streams, one given on the first token only) through CBF in many
// chunks: the same sequences as parsing the text, and the corpus' documented counts.
TEST(CBFConverter, AtisRoundTripInManyChunks) {
  REQUIRE_DATA(dir, "atis");
  std::string out = temp_path("atis.bin");
  std::vector<CBFConvertStream> streams = {
      {"query", "S0", true, 943}, {"intent", "S1", true, 26}, {"slots", "S2", true, 129}};
  size_t n = convert_ctf_to_cbf(dir + "/atis.test.ctf", out, streams, 16 << 10);
  EXPECT_GT(n, 10u);
  CBFDeserializer cbf(out, {{"words", "query"}, {"labels", "slots"}, {"intent", "intent"}});
  ASSERT_EQ(cbf.chunks().size(), n);
  auto bin = read_all(cbf);
  CTFParser parser(
      dir + "/atis.test.ctf",
      {{"S0", 943, true, DataType::Float}, {"S2", 129, true, DataType::Float}, {"S1", 26, true, DataType::Float}});
  std::vector<CTFSequence> text;
  for (CTFSequence s; parser.next(s);) text.push_back(s);
  ASSERT_EQ(bin.size(), 893u);
  ASSERT_EQ(text.size(), 893u);
  size_t tokens = 0;
  for (size_t i = 0; i < bin.size(); ++i) {
    tokens += bin[i].streams[0].num_samples;
    EXPECT_EQ(bin[i].streams[2].num_samples, 1u);
    for (size_t s = 0; s < 3; ++s)
      expect_same_stream(bin[i].streams[s], text[i].streams[s], true, "atis sequence " + std::to_string(i));
  }
  EXPECT_EQ(tokens, 10984u);
  fs::remove(out);
}
