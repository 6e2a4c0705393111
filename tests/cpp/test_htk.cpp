// HTK feature files, SCP lines, context splicing, MLF parsing and the two speech deserializers
// (src/io/htk_features.h, src/io/mlf.h), over files written by the tests.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/htk_features.h"
#include "io/minibatch_source.h"
#include "io/mlf.h"
#include "io/string_key.h"

using cntk::IOError;
using namespace cntk::io;
namespace fs = std::filesystem;

namespace {

void put32(std::vector<uint8_t>& b, uint32_t v, bool big) {
  for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (big ? 24 - 8 * i : 8 * i)));
}
void put16(std::vector<uint8_t>& b, uint16_t v, bool big) {
  for (int i = 0; i < 2; ++i) b.push_back(uint8_t(v >> (big ? 8 - 8 * i : 8 * i)));
}
void putf(std::vector<uint8_t>& b, float f, bool big) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  put32(b, u, big);
}

// An uncompressed HTK file of frames [n x dim].
std::vector<uint8_t> htk_bytes(const std::vector<float>& frames, size_t dim, bool big = true, uint16_t kind = 9) {
  std::vector<uint8_t> b;
  put32(b, uint32_t(frames.size() / dim), big);
  put32(b, 100000, big);
  put16(b, uint16_t(4 * dim), big);
  put16(b, kind, big);
  for (float f : frames) putf(b, f, big);
  return b;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("cntk_htk_" + std::to_string(::getpid()) + "_" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
  std::string write(const std::string& name, const std::vector<uint8_t>& bytes) const {
    std::ofstream(path / name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    return (path / name).string();
  }
};

}  // namespace

TEST(HTKFeatureFile, ReadsBothByteOrders) {
  std::vector<float> frames = {1.5f, -2.f, 3.25f, 4.f, 5.f, -6.5f};
  for (bool big : {true, false}) {
    auto f = HTKFeatureFile::from_memory(htk_bytes(frames, 2, big, 6 | 0100), "x");
    EXPECT_EQ(f.header.big_endian, big);
    EXPECT_EQ(f.header.num_frames, 3u);
    EXPECT_EQ(f.header.dim, 2u);
    EXPECT_EQ(f.header.sample_period, 100000u);
    EXPECT_EQ(f.header.kind_name(), "MFCC_E");
    EXPECT_EQ(f.values, frames);
  }
}

TEST(HTKFeatureFile, DecompressesInt16Values) {
  // Two dimensions: A = (2, 4), B = (1, -3); stored x gives (x + B) / A.
  std::vector<uint8_t> b;
  put32(b, 4 + 2, true);
  put32(b, 100000, true);
  put16(b, 4, true);
  put16(b, 7 | 02000, true);
  for (float v : {2.f, 4.f, 1.f, -3.f}) putf(b, v, true);
  for (int16_t x : {int16_t(3), int16_t(-5), int16_t(-1), int16_t(7)}) put16(b, uint16_t(x), true);
  auto f = HTKFeatureFile::from_memory(b, "c");
  EXPECT_TRUE(f.header.compressed);
  ASSERT_EQ(f.header.num_frames, 2u);
  EXPECT_EQ(f.values, (std::vector<float>{(3 + 1) / 2.f, (-5 - 3) / 4.f, (-1 + 1) / 2.f, (7 - 3) / 4.f}));
}

TEST(HTKFeatureFile, EveryTruncationRaisesIOError) {
  auto good = htk_bytes({1, 2, 3, 4, 5, 6}, 3);
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + long(n));
    try {
      HTKFeatureFile::from_memory(cut, "cut.htk");
      ADD_FAILURE() << "a file cut to " << n << " bytes was read";
    } catch (const IOError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.htk"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
  }
}

TEST(HTKFeatureFile, BadHeadersRaiseIOError) {
  auto with = [](uint32_t n, uint16_t size, uint16_t kind) {
    std::vector<uint8_t> b;
    put32(b, n, true);
    put32(b, 100000, true);
    put16(b, size, true);
    put16(b, kind, true);
    b.resize(b.size() + 64);
    return b;
  };
  EXPECT_THROW(HTKFeatureFile::from_memory(with(1, 4, 0), "wave"), IOError);         // WAVEFORM
  EXPECT_THROW(HTKFeatureFile::from_memory(with(1, 4, 9 | 040000), "vq"), IOError);  // _V
  EXPECT_THROW(HTKFeatureFile::from_memory(with(1, 6, 9), "size"), IOError);         // 6 bytes: not floats
  EXPECT_THROW(HTKFeatureFile::from_memory(with(1, 0, 9), "zero"), IOError);
  EXPECT_THROW(HTKFeatureFile::from_memory(with(0x80000000u, 4, 9), "neg"), IOError);
  EXPECT_THROW(HTKFeatureFile::from_memory(with(2, 4, 9 | 02000), "c"), IOError);  // compressed, < 4 frames
}

TEST(SCPLine, ParsesCNTKForms) {
  SCPEntry e;
  ASSERT_TRUE(parse_scp_line("utt1.mfc=/data/arch.htk[10,19]\r", "/scp", "s:1", e));
  EXPECT_EQ(e.key, "utt1");
  EXPECT_EQ(e.path, "/data/arch.htk");
  EXPECT_TRUE(e.has_range);
  EXPECT_EQ(e.first, 10u);
  EXPECT_EQ(e.last, 19u);
  ASSERT_TRUE(parse_scp_line("a=.../b.htk", "/scp/dir", "s:2", e));
  EXPECT_EQ(e.key, "a");
  EXPECT_EQ(e.path, "/scp/dir/b.htk");
  EXPECT_FALSE(e.has_range);
  ASSERT_TRUE(parse_scp_line("feat/x.htk", "", "s:3", e));
  EXPECT_EQ(e.key, "feat/x");
  EXPECT_EQ(e.path, "feat/x.htk");
  EXPECT_FALSE(parse_scp_line("  \r", "", "s:4", e));
  for (const char* bad : {"a=b[1,2", "a=b[1]", "a=b[x,2]", "a=b[1,2]x", "a=b[3,2]", "=b", "a="})
    EXPECT_THROW(parse_scp_line(bad, "", "s:5", e), IOError) << bad;
}

TEST(SpliceContext, HoldsTheEdges) {
  const std::vector<float> frames = {0, 1, 2};  // 3 frames of dimension 1
  std::vector<float> out(3 * 4);
  splice_context(frames.data(), 3, 1, 2, 1, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 1, 0, 0, 1, 2, 0, 1, 2, 2}));
  std::vector<double> one(4);
  splice_context(frames.data(), 1, 1, 1, 2, one.data());
  EXPECT_EQ(one, (std::vector<double>{0, 0, 0, 0}));
}

TEST(MLF, ParsesTimesFramesAndStates) {
  std::unordered_map<std::string, uint32_t> states = {{"sil", 0}, {"a", 1}, {"sp", 2}};
  std::vector<std::string> warnings;
  auto utts = parse_mlf(
      "#!MLF!#\n\"*/u1.lab\"\n0 200000 sil -3.2 word\n200000 200000 sp\n200000 500000 a\n.\n"
      "\"u2.rec\"\r\n0 2 a\r\n2 3 sil\r\n.\r\n\"empty.lab\"\n.\n",
      "m.mlf", states, 3, &warnings);
  ASSERT_EQ(utts.size(), 2u);
  EXPECT_EQ(utts[0].key, "u1");
  EXPECT_EQ(utts[0].num_frames, 5u);
  ASSERT_EQ(utts[0].ranges.size(), 3u);
  EXPECT_EQ(utts[0].ranges[1].frames, 0u);
  EXPECT_EQ(utts[0].ranges[2].label, 1u);
  EXPECT_EQ(utts[1].key, "u2");
  EXPECT_EQ(utts[1].num_frames, 3u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'empty'"), std::string::npos);
  for (const char* bad :
       {"\"u\"\n0 1 zz\n.\n", "\"u\"\n1 2 a\n.\n", "\"u\"\n0 1 a\n", "x\n", "\"u\"\n0 1\n.\n",
        "\"u\"\n0 1 a\n2 3 a\n.\n", "\"u\"\n0 1e400 a\n.\n", "\"u\"\n0 2e13 a\n.\n", "\"u\"\n-1 1 a\n.\n"})
    EXPECT_THROW(parse_mlf(bad, "m.mlf", states, 3, nullptr), IOError) << bad;
  EXPECT_THROW(parse_mlf("\"u\"\n0 1 a\n.\n", "m.mlf", states, 1, nullptr), IOError);  // class 1 >= dim 1
  EXPECT_THROW(parse_mlf("\"u\"\n0 1 a\n.\n", "m.mlf", {}, 3, nullptr), IOError);      // no class column
  EXPECT_EQ(parse_mlf("\"u\"\n0 1 a 2\n.\n", "m.mlf", {}, 3, nullptr)[0].ranges[0].label, 2u);
}

TEST(HTKDeserializers, JoinThroughMinibatchSource) {
  TempDir dir;
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8}, b = {9, 10, 11, 12};
  std::string fa = dir.write("a.htk", htk_bytes(a, 2)), fb = dir.write("b.htk", htk_bytes(b, 2));
  std::string scp = dir.write("x.scp", "b=" + fb + "[0,1]\na.fea=" + fa + "[1,3]\n");
  std::string states = dir.write("s.list", "p\nq\n");
  std::string mlf = dir.write("x.mlf", "#!MLF!#\n\"*/a.lab\"\n0 1 q\n1 3 p\n.\n\"b\"\n0 2 p\n.\n");
  HTKFeatureStreamDef f;
  f.name = "f";
  f.scp_files = {scp};
  f.dim = 2;
  f.left_context = 1;
  f.right_context = 0;
  auto feats = std::make_shared<HTKFeatureDeserializer>(f);
  EXPECT_EQ(feats->streams()[0].dim(), 4u);
  HTKMLFStreamDef l;
  l.name = "l";
  l.mlf_files = {mlf};
  l.label_mapping_file = states;
  l.dim = 2;
  auto labels = std::make_shared<HTKMLFDeserializer>(l);
  EXPECT_EQ(feats->key_name(string_key_id("a")), "'a'");

  auto seqs = feats->load_chunk(0);
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(seqs[1].streams[0].values_f, (std::vector<float>{3, 4, 3, 4, 3, 4, 5, 6, 5, 6, 7, 8}));
  auto lab = labels->load_chunk(0);
  ASSERT_EQ(lab.size(), 2u);
  EXPECT_EQ(lab[0].key, seqs[1].key);
  EXPECT_EQ(lab[0].streams[0].indices, (std::vector<int32_t>{1, 0, 0}));

  MinibatchSourceConfig c;
  c.deserializers = {feats, labels};
  c.randomize = false;
  c.max_sweeps = 1;
  MinibatchSource src(c);
  auto mb = src.next_minibatch(100);
  ASSERT_EQ(mb.streams.size(), 2u);
  EXPECT_EQ(mb.streams[0].num_sequences, 2u);
  EXPECT_EQ(mb.streams[0].num_samples, 5u);
}
