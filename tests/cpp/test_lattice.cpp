// Lattice sequence training's formats: the serialized lattice codec (src/ops/lattice_format.h),
// CNTK's model files (src/ops/lattice_model.h) and LatticeDeserializer (src/io).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/lattice_deserializer.h"
#include "ops/lattice_format.h"
#include "ops/lattice_model.h"

using cntk::IOError;
using cntk::ValueError;
namespace lat = cntk::lattice;
namespace fs = std::filesystem;

namespace {

lat::Lattice small_lattice() {
  // 3 frames: two competing edges 0 -> 1 and the 0-frame final edge; unit 3 is /sp/
  lat::Lattice l;
  l.num_frames = 3;
  l.node_times = {0, 3, 3};
  l.implied_sp_unit = 3;
  l.lmf = 12.5f;
  l.wp = -1.0f;
  l.edges.push_back({0, 1, -10.5f, -0.25f, {{0, 1}, {1, 1}, {3, 1}}});
  l.edges.push_back({0, 1, -11.0f, -0.75f, {{2, 3}}});
  l.edges.push_back({1, 2, 0.0f, 0.0f, {}});
  return l;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("cntk_lattice_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream f(path / name, std::ios::binary);
    f << text;
    return (path / name).string();
  }
};

std::string bytes_of(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

}  // namespace

TEST(LatticeFormat, RoundTripExpandsImpliedSp) {
  lat::Lattice l = small_lattice();
  std::vector<uint8_t> b = lat::encode_lattice(l);
  ASSERT_GE(b.size(), 8u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 4), "LAT ");
  lat::Lattice d = lat::decode_lattice(b.data(), b.size(), "mem");
  EXPECT_EQ(d.num_frames, 3u);
  EXPECT_EQ(d.node_times, l.node_times);
  EXPECT_EQ(d.implied_sp_unit, 3u);
  EXPECT_FLOAT_EQ(d.lmf, 12.5f);
  EXPECT_FLOAT_EQ(d.wp, -1.0f);
  ASSERT_EQ(d.edges.size(), 3u);
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_EQ(d.edges[j].S, l.edges[j].S);
    EXPECT_EQ(d.edges[j].E, l.edges[j].E);
    EXPECT_FLOAT_EQ(d.edges[j].ac, l.edges[j].ac);
    EXPECT_FLOAT_EQ(d.edges[j].lm, l.edges[j].lm);
    ASSERT_EQ(d.edges[j].units.size(), l.edges[j].units.size());
    for (size_t u = 0; u < l.edges[j].units.size(); ++u) {
      EXPECT_EQ(d.edges[j].units[u].unit, l.edges[j].units[u].unit);
      EXPECT_EQ(d.edges[j].units[u].frames, l.edges[j].units[u].frames);
    }
  }
  // the first edge's /sp/ is a flag: 2 align tokens stored, not 3
  // header 8 + 32, NODS 8 + 6, EDGS 8 + 24, ALNS 8 + 4 * (2 + 2 + 2 + 1 + 2), END 4
  EXPECT_EQ(b.size(), size_t(40 + 14 + 32 + 8 + 4 * 9 + 4));
}

TEST(LatticeFormat, EveryTruncationAndCorruptionIsAnIOError) {
  std::vector<uint8_t> b = lat::encode_lattice(small_lattice());
  for (size_t n = 0; n < b.size(); ++n) {
    try {
      lat::decode_lattice(b.data(), n, "trunc");
      FAIL() << "a lattice cut to " << n << " bytes decoded";
    } catch (const IOError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("trunc: ", 0), 0u) << e.what();
    }
  }
  // flip every byte in turn: decodes or raises IOError, never anything else
  for (size_t i = 0; i < b.size(); ++i)
    for (uint8_t x : {uint8_t(0xff), uint8_t(0x01), uint8_t(0x80)}) {
      std::vector<uint8_t> c = b;
      c[i] ^= x;
      try {
        lat::decode_lattice(c.data(), c.size(), "flip");
      } catch (const IOError&) {
      }
    }
}

TEST(LatticeFormat, EncoderRejectsOverflowsAndUnitlessInnerEdges) {
  lat::Lattice l = small_lattice();
  l.edges[1].units[0].frames = 4000;  // 11 bits
  EXPECT_THROW(lat::encode_lattice(l), ValueError);
  l = small_lattice();
  l.edges[0].units.clear();
  EXPECT_THROW(lat::encode_lattice(l), ValueError);
}

TEST(LatticeModel, ReadsCntkFilesAndReportsFileAndLine) {
  TempDir d;
  std::string states = d.write("states", "s0\ns1\r\n\ns2\n");
  std::string transp = d.write("transp", "T1 1 1 0 0.5 0.5\nT2 2 1 0 0 0.6 0.4 0 0 0.9 0.1\n");
  std::string tying = d.write("tying", "a T1 s0\nb T2 s1 s2\nsp T1 s2\n");
  std::string sym = d.write("sym", "b\na\nb b\n");
  lat::SenoneHmmSet set = lat::SenoneHmmSet::load(tying, states, transp);
  ASSERT_EQ(set.senone_names.size(), 3u);
  ASSERT_EQ(set.hmms.size(), 3u);
  const lat::Hmm& b = set.hmms[set.unit_index.at("b")];
  EXPECT_EQ(b.num_states, 2u);
  EXPECT_EQ(b.senones[0], 1u);
  EXPECT_EQ(b.senones[1], 2u);
  const lat::TransitionMatrix& t2 = set.transitions[b.transition];
  EXPECT_FLOAT_EQ(t2(-1, 0), 0.0f);
  EXPECT_FLOAT_EQ(t2(0, 1), std::log(0.4f));
  EXPECT_FLOAT_EQ(t2(-1, 1), lat::kLogZero);
  std::vector<uint32_t> map = lat::load_symbol_map(sym, set);
  ASSERT_EQ(map.size(), 3u);
  EXPECT_EQ(map[0], set.unit_index.at("b"));
  EXPECT_EQ(map[1], set.unit_index.at("a"));
  EXPECT_EQ(map[2], set.unit_index.at("sp"));

  auto message = [&](auto&& f) {
    try {
      f();
    } catch (const IOError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string bad = d.write("bad_transp", "T1 1 1 0 0.5\n");
  EXPECT_NE(message([&] { lat::SenoneHmmSet::load(tying, states, bad); }).find("bad_transp:1:"), std::string::npos);
  bad = d.write("bad_tying", "a T1 s0\nb T3 s1\n");
  EXPECT_NE(message([&] { lat::SenoneHmmSet::load(bad, states, transp); }).find("bad_tying:2: unknown transition"),
            std::string::npos);
  bad = d.write("bad_sym", "a\nb a\n");
  EXPECT_NE(message([&] { lat::load_symbol_map(bad, set); }).find("bad_sym:2: 'b' and 'a' have different HMMs"),
            std::string::npos);
  EXPECT_NE(message([&] { lat::SenoneHmmSet::load(tying, (d.path / "absent").string(), transp); }).find("absent"),
            std::string::npos);
}

TEST(LatticeDeserializer, IndexesTocsAndLoadsLatticeBytes) {
  TempDir d;
  std::vector<uint8_t> one = lat::encode_lattice(small_lattice());
  lat::Lattice l2 = small_lattice();
  l2.edges.pop_back();
  l2.node_times.pop_back();
  std::vector<uint8_t> two = lat::encode_lattice(l2);
  std::string arch = d.write("a.lats", bytes_of(one) + bytes_of(two) + bytes_of(one));
  size_t o2 = one.size(), o3 = one.size() + two.size();
  std::string toc =
      d.write("a.toc", "u1=" + arch + "[0]\nu2=[" + std::to_string(o2) + "]\n\nu3=[" + std::to_string(o3) + "]\n");
  std::string index = d.write("index", toc + "\n");
  cntk::io::LatticeDeserializer des(index, "lattice");
  ASSERT_EQ(des.streams().size(), 1u);
  EXPECT_EQ(des.streams()[0].sample_shape, cntk::NDShape{1});
  ASSERT_EQ(des.chunks().size(), 1u);
  EXPECT_EQ(des.chunks()[0].num_sequences, 3u);
  EXPECT_EQ(des.chunks()[0].num_samples, (one.size() + 3) / 4 * 2 + (two.size() + 3) / 4);
  auto seqs = des.load_chunk(0);
  ASSERT_EQ(seqs.size(), 3u);
  EXPECT_EQ(seqs[1].key, cntk::io::LatticeDeserializer::name_key("u2"));
  EXPECT_EQ(des.chunk_keys(0)[2], cntk::io::LatticeDeserializer::name_key("u3"));
  EXPECT_EQ(des.key_name(des.chunk_keys(0)[1]), "u2");
  EXPECT_EQ(des.key_name(12345), "12345");
  const auto& s = seqs[1].streams[0];
  ASSERT_EQ(s.num_samples, (two.size() + 3) / 4);
  EXPECT_EQ(std::memcmp(s.values_f.data(), two.data(), two.size()), 0);
  lat::Lattice back = lat::decode_lattice(reinterpret_cast<const uint8_t*>(s.values_f.data()), s.num_samples * 4, "s");
  EXPECT_EQ(back.edges.size(), 2u);

  cntk::io::LatticeDeserializerOptions small;
  small.chunk_size = 1;
  cntk::io::LatticeDeserializer chunked(index, "lattice", small);
  EXPECT_EQ(chunked.chunks().size(), 3u);
  EXPECT_EQ(chunked.load_chunk(2)[0].key, cntk::io::LatticeDeserializer::name_key("u3"));

  cntk::io::LatticeDeserializerOptions numeric;
  numeric.numeric_keys = true;
  std::string ntoc = d.write("n.toc", "7=" + arch + "[0]\n9=[" + std::to_string(o2) + "]\n");
  cntk::io::LatticeDeserializer nd(d.write("n.index", ntoc), "lattice", numeric);
  EXPECT_EQ(nd.chunk_keys(0), (std::vector<uint64_t>{7, 9}));
  // the last lattice of a TOC runs to the end of its archive
  EXPECT_EQ(nd.load_chunk(0)[1].streams[0].num_samples, (two.size() + one.size() + 3) / 4);
  EXPECT_EQ(o3, o2 + two.size());

  // errors name the file
  std::string bad = d.write("bad.toc", "u1=" + arch + "[0]\nu2=[" + std::to_string(o2 + 2) + "]\n");
  cntk::io::LatticeDeserializer misaligned(d.write("bad.index", bad), "lattice");
  try {
    misaligned.load_chunk(0);
    FAIL() << "a lattice not starting with 'LAT ' loaded";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("'u2'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cntk::io::LatticeDeserializer(d.write("x.index", d.write("x.toc", "u1" + arch + "[0]\n")), "l"),
               IOError);
  EXPECT_THROW(cntk::io::LatticeDeserializer((d.path / "none").string(), "l"), IOError);
  EXPECT_THROW(cntk::io::LatticeDeserializer(d.write("e.index", "\n"), "l"), IOError);
}
