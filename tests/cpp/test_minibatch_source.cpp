// CTFDeserializer (chunk index, chunk loading) and MinibatchSource (randomization, partitions,
// checkpoints, prefetch, frame mode, BPTT, joining deserializers) over ATIS and small generated files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "io/ctf_deserializer.h"
#include "io/ctf_parser.h"
#include "io/minibatch_source.h"

using namespace cntk;
using namespace cntk::io;
namespace fs = std::filesystem;

namespace {

std::string data_file(const std::string& rel) {
  fs::path p = fs::path(CNTK_TEST_DATA_DIR) / rel;
  return fs::exists(p) ? p.string() : std::string();
}

#define REQUIRE_FILE(var, rel)      \
  std::string var = data_file(rel); \
  if (var.empty()) GTEST_SKIP() << rel << " is absent"

std::string temp_file(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("cntk_mbs_test_" + name);
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::vector<CTFStreamDef> atis_streams() {
  return {{"query", "S0", NDShape{943}, true, DataType::Float, false},
          {"intent", "S1", NDShape{26}, true, DataType::Float, false},
          {"slots", "S2", NDShape{129}, true, DataType::Float, false}};
}

// A file of `n` sequences: sequence i has i % 5 + 1 lines "i |x <i> <t> |y <t>" (t the step).
std::string numbered_file(const std::string& name, int n) {
  std::string text;
  for (int i = 0; i < n; ++i)
    for (int t = 0; t <= i % 5; ++t)
      text +=
          std::to_string(i) + " |x " + std::to_string(i) + " " + std::to_string(t) + " |y " + std::to_string(t) + "\n";
  return temp_file(name, text);
}

std::shared_ptr<CTFDeserializer> numbered(const std::string& path, size_t chunk_size) {
  CTFDeserializerOptions o;
  o.chunk_size = chunk_size;
  return std::make_shared<CTFDeserializer>(
      path,
      std::vector<CTFStreamDef>{{"x", "x", NDShape{2}, false, DataType::Float, false},
                                {"y", "y", NDShape{1}, false, DataType::Float, false}},
      o);
}

// The sequence ids (first value of x at each sequence start) of a minibatch's x stream, with the step values.
std::vector<std::pair<int, int>> samples_of(const StreamMinibatch& s) {
  std::vector<std::pair<int, int>> out;
  if (!s.data.is_valid()) return out;
  auto seqs = s.data.unpack(1);
  for (auto& v : seqs) {
    const float* p = v.data<float>();
    for (int64_t t = 0; t < v.shape()[0]; ++t) out.emplace_back(int(p[2 * t]), int(p[2 * t + 1]));
  }
  return out;
}

}  // namespace

TEST(CTFDeserializer, AtisChunksCoverTheFile) {
  REQUIRE_FILE(path, "atis/atis.train.ctf");
  CTFDeserializerOptions o;
  o.chunk_size = 64 << 10;  // many chunks
  CTFDeserializer d(path, atis_streams(), o);
  ASSERT_GT(d.chunks().size(), 5u);
  size_t seqs = 0, tokens = 0, samples = 0;
  std::set<uint64_t> keys;
  for (const auto& c : d.chunks()) {
    auto loaded = d.load_chunk(c.id);
    ASSERT_EQ(loaded.size(), c.num_sequences);
    size_t chunk_samples = 0;
    auto ck = d.chunk_keys(c.id);
    for (size_t i = 0; i < loaded.size(); ++i) {
      EXPECT_EQ(loaded[i].key, ck[i]);
      keys.insert(loaded[i].key);
      tokens += loaded[i].streams[0].num_samples;
      chunk_samples += loaded[i].num_samples();
    }
    EXPECT_EQ(chunk_samples, c.num_samples);
    seqs += loaded.size();
    samples += chunk_samples;
  }
  EXPECT_EQ(seqs, 4978u);
  EXPECT_EQ(tokens, 66547u);
  EXPECT_EQ(keys.size(), 4978u);
  // A chunk loaded alone equals the same sequences read by one parser from the start.
  CTFParser p(path, {{"S0", 943, true}, {"S1", 26, true}, {"S2", 129, true}});
  CTFSequence seq;
  size_t skip = 0;
  for (size_t c = 0; c < 3; ++c) skip += d.chunks()[c].num_sequences;
  for (size_t i = 0; i <= skip; ++i) ASSERT_TRUE(p.next(seq));
  auto third = d.load_chunk(3);
  EXPECT_EQ(third[0].key, seq.id);
  EXPECT_EQ(third[0].streams[0].indices, seq.streams[0].indices);
  EXPECT_EQ(third[0].streams[2].values_f, seq.streams[2].values_f);
}

TEST(CTFDeserializer, ErrorsNameFileAndLineInAnyChunk) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += std::to_string(i) + " |x 1 2 |y 3\n";
  text += "200 |x 1 oops |y 3\n";
  std::string f = temp_file("bad_late.txt", text);
  try {
    numbered(f, 64);
    FAIL() << "expected IOError";
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("bad_late.txt:201:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(numbered(temp_file("none.txt", "\n\n"), 64), IOError);
  EXPECT_THROW(numbered("/nonexistent/file.ctf", 64), IOError);
}

TEST(CTFDeserializer, FilesWithoutIdsKeepLineNumbersAcrossChunks) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "|x " + std::to_string(i) + " 0 |y 1\n";
  auto d = numbered(temp_file("noids.txt", text), 40);
  ASSERT_GT(d->chunks().size(), 3u);
  uint64_t expect = 1;
  for (const auto& c : d->chunks())
    for (const auto& s : d->load_chunk(c.id)) EXPECT_EQ(s.key, expect++);  // the key is the line number
}

TEST(MinibatchSource, SequentialReadingInFileOrder) {
  auto d = numbered(numbered_file("seq.txt", 40), 100);
  MinibatchSourceConfig c;
  c.deserializers = {d};
  c.randomize = false;
  c.max_sweeps = 1;
  MinibatchSource src(c);
  std::vector<std::pair<int, int>> all;
  size_t total = 0;
  bool saw_end = false;
  for (;;) {
    auto mb = src.next_minibatch(7);
    if (mb.empty()) break;
    ASSERT_FALSE(saw_end);
    auto s = samples_of(mb.streams[0]);
    EXPECT_LE(s.size(), 7u);
    EXPECT_EQ(mb.streams[0].num_samples, s.size());
    all.insert(all.end(), s.begin(), s.end());
    total += s.size();
    saw_end = mb.streams[0].sweep_end;
  }
  EXPECT_TRUE(saw_end);
  size_t expect = 0;
  for (int i = 0; i < 40; ++i) expect += i % 5 + 1;
  ASSERT_EQ(total, expect);
  size_t k = 0;
  for (int i = 0; i < 40; ++i)
    for (int t = 0; t <= i % 5; ++t) EXPECT_EQ(all[k++], std::make_pair(i, t));
}

TEST(MinibatchSource, RandomizationIsADeterministicPermutation) {
  auto d = numbered(numbered_file("rand.txt", 300), 200);
  ASSERT_GT(d->chunks().size(), 10u);
  auto order_of = [&](uint64_t seed, size_t window) {
    MinibatchSourceConfig c;
    c.deserializers = {d};
    c.randomization_seed = seed;
    c.randomization_window_in_chunks = window;
    c.max_sweeps = 1;
    MinibatchSource src(c);
    std::vector<int> ids;
    for (;;) {
      auto mb = src.next_minibatch(16);
      if (mb.empty()) break;
      for (auto [i, t] : samples_of(mb.streams[0]))
        if (t == 0) ids.push_back(i);
    }
    return ids;
  };
  auto a = order_of(1, 3), b = order_of(1, 3), other = order_of(2, 3);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, other);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 300; ++i) ASSERT_EQ(sorted[size_t(i)], i);
  std::vector<int> in_order(300);
  for (int i = 0; i < 300; ++i) in_order[size_t(i)] = i;
  EXPECT_NE(a, in_order);
  // CNTK's window in chunks: the sequences at the place p of the chunk order come from chunks placed in
  // [p - 1, p + 1) (window 2; [0, 2) at the first place).
  MinibatchSourceConfig c;
  c.deserializers = {d};
  c.randomization_window_in_chunks = 2;
  MinibatchSource src(c);
  auto o0 = src.sweep_order(0), o1 = src.sweep_order(1);
  EXPECT_EQ(o0.size(), 300u);
  bool differ = false;
  for (size_t i = 0; i < o0.size(); ++i) differ |= o0[i].chunk != o1[i].chunk || o0[i].index != o1[i].index;
  EXPECT_TRUE(differ);  // each sweep is shuffled anew
  auto corder = src.chunk_order(0);
  std::vector<size_t> place(corder.size());
  for (size_t p = 0; p < corder.size(); ++p) place[corder[p]] = p;
  size_t t = 0;
  for (size_t p = 0; p < corder.size(); ++p) {
    size_t lo = p > 1 ? p - 1 : 0, hi = lo + 2;
    for (size_t i = 0; i < d->chunks()[corder[p]].num_sequences; ++i, ++t) {
      EXPECT_GE(place[o0[t].chunk], lo);
      EXPECT_LT(place[o0[t].chunk], hi);
    }
  }
}

TEST(MinibatchSource, PartitionsReadTheirOwnUnits) {
  auto d = numbered(numbered_file("part.txt", 120), 150);
  auto make = [&](bool randomize) {
    MinibatchSourceConfig c;
    c.deserializers = {d};
    c.randomize = randomize;
    c.randomization_seed = 7;
    c.max_sweeps = 1;
    return std::make_unique<MinibatchSource>(c);
  };
  auto ids = [](MinibatchSource& s, size_t parts, size_t index) {
    std::vector<int> out;
    for (auto mb = s.next_minibatch(20, parts, index); !mb.empty(); mb = s.next_minibatch(20, parts, index)) {
      size_t samples = 0;
      for (auto [i, t] : samples_of(mb.streams[0]))
        if (t == 0) out.push_back(i), samples += size_t(i % 5 + 1);
      EXPECT_EQ(samples, mb.streams[0].num_samples);
      const size_t share = 20 / parts + (20 % parts > index ? 1 : 0);  // the first ones take the remainder
      EXPECT_TRUE(mb.streams[0].num_sequences == 1 || samples <= share);
    }
    return out;
  };
  // File order: partition k of 3 reads sequences k, k + 3, ...
  for (size_t k = 0; k < 3; ++k) {
    auto got = ids(*make(false), 3, k);
    ASSERT_EQ(got.size(), 40u);
    for (size_t j = 0; j < got.size(); ++j) EXPECT_EQ(got[j], int(k + 3 * j));
  }
  // Randomized: partition k reads the chunks at places k, k + 2, ... of the chunk order, in the global order.
  auto whole = make(true);
  auto order = whole->sweep_order(0);
  auto corder = whole->chunk_order(0);
  ASSERT_GT(corder.size(), 4u);
  std::vector<size_t> place(corder.size());
  for (size_t p = 0; p < corder.size(); ++p) place[corder[p]] = p;
  auto all = ids(*whole, 1, 0);
  ASSERT_EQ(all.size(), 120u);
  for (size_t k = 0; k < 2; ++k) {
    std::vector<int> expect;
    for (size_t t = 0; t < order.size(); ++t)
      if (place[order[t].chunk] % 2 == k) expect.push_back(all[t]);
    EXPECT_EQ(ids(*make(true), 2, k), expect);
  }
  EXPECT_THROW(whole->next_minibatch(10, 2, 2), ValueError);
}

TEST(MinibatchSource, CheckpointRestoresTheExactPosition) {
  auto d = numbered(numbered_file("ckpt.txt", 200), 120);
  auto make = [&](bool prefetch) {
    MinibatchSourceConfig c;
    c.deserializers = {d};
    c.randomization_seed = 3;
    c.randomization_window_in_chunks = 3;
    c.prefetch = prefetch;
    return std::make_unique<MinibatchSource>(c);
  };
  auto a = make(true);
  for (int i = 0; i < 57; ++i) a->next_minibatch(13);  // into the second sweep
  Dictionary state = a->checkpoint_state();
  auto b = make(false);
  b->restore_from_checkpoint(state);
  for (int i = 0; i < 30; ++i) {
    auto x = a->next_minibatch(13), y = b->next_minibatch(13);
    ASSERT_EQ(samples_of(x.streams[0]), samples_of(y.streams[0])) << "minibatch " << i;
    ASSERT_EQ(x.streams[0].sweep_end, y.streams[0].sweep_end);
  }
  Dictionary bad = state;
  bad["num_chunks"] = int64_t(1);
  EXPECT_THROW(b->restore_from_checkpoint(bad), ValueError);
}

TEST(MinibatchSource, PrefetchChangesNothingEvenWhenSizesChange) {
  auto d = numbered(numbered_file("prefetch.txt", 150), 100);
  auto make = [&](bool prefetch) {
    MinibatchSourceConfig c;
    c.deserializers = {d};
    c.prefetch = prefetch;
    c.max_samples = 300;
    return std::make_unique<MinibatchSource>(c);
  };
  auto a = make(true), b = make(false);
  size_t sizes[] = {10, 10, 3, 25, 25, 25, 1, 8};
  for (int i = 0;; ++i) {
    size_t n = sizes[i % 8];
    auto x = a->next_minibatch(n), y = b->next_minibatch(n);
    ASSERT_EQ(x.empty(), y.empty());
    if (x.empty()) break;
    ASSERT_EQ(samples_of(x.streams[0]), samples_of(y.streams[0]));
  }
}

TEST(MinibatchSource, MaxSamplesAndMaxSweeps) {
  auto d = numbered(numbered_file("limits.txt", 30), 100);  // 90 samples per sweep
  MinibatchSourceConfig c;
  c.deserializers = {d};
  c.max_samples = 100;
  MinibatchSource a(c);
  size_t total = 0;
  for (auto mb = a.next_minibatch(16); !mb.empty(); mb = a.next_minibatch(16)) total += mb.streams[0].num_samples;
  EXPECT_GE(total, 100u);
  EXPECT_LT(total, 105u);  // the last sequence may pass the limit (at most 5 samples long)
  c.max_samples = kInfinitelyRepeat;
  c.max_sweeps = 3;
  MinibatchSource b(c);
  total = 0;
  int ends = 0;
  for (auto mb = b.next_minibatch(16); !mb.empty(); mb = b.next_minibatch(16)) {
    total += mb.streams[0].num_samples;
    ends += mb.streams[0].sweep_end;
  }
  EXPECT_EQ(total, 270u);
  EXPECT_EQ(ends, 3);
  c.max_samples = 10;
  EXPECT_THROW(MinibatchSource{c}, ValueError);  // max_samples and max_sweeps together
}

TEST(MinibatchSource, FrameModeGivesSingleSamples) {
  auto d = numbered(numbered_file("frames.txt", 20), 100);
  MinibatchSourceConfig c;
  c.deserializers = {d};
  c.frame_mode = true;
  c.max_sweeps = 1;
  MinibatchSource src(c);
  std::set<std::pair<int, int>> seen;
  size_t total = 0;
  for (auto mb = src.next_minibatch(8); !mb.empty(); mb = src.next_minibatch(8)) {
    EXPECT_EQ(mb.streams[0].data.shape()[1], 1);
    EXPECT_EQ(mb.streams[0].num_sequences, mb.streams[0].num_samples);
    Value batch = drop_sequence_axis(mb.streams[0].data);
    EXPECT_EQ(batch.shape(), (NDShape{int64_t(mb.streams[0].num_samples), 2}));
    for (auto s : samples_of(mb.streams[0])) seen.insert(s);
    total += mb.streams[0].num_samples;
  }
  EXPECT_EQ(total, 60u);
  EXPECT_EQ(seen.size(), 60u);
  c.truncation_length = 2;
  EXPECT_THROW(MinibatchSource{c}, ValueError);
}

TEST(MinibatchSource, TruncationContinuesSequencesAcrossMinibatches) {
  auto d = numbered(numbered_file("bptt.txt", 10), 100);
  MinibatchSourceConfig c;
  c.deserializers = {d};
  c.randomize = false;
  c.truncation_length = 2;
  c.max_sweeps = 1;
  MinibatchSource src(c);
  std::map<int, std::vector<int>> steps;  // per sequence, the steps in the order read
  std::map<int, size_t> position;         // per sequence, its batch position
  int begins = 0, continues = 0;
  for (auto mb = src.next_minibatch(4); !mb.empty(); mb = src.next_minibatch(4)) {
    const auto& v = mb.streams[0].data;
    EXPECT_LE(v.shape()[0], 2);  // 4 / 2 sequences side by side
    EXPECT_LE(v.shape()[1], 2);
    auto seqs = v.unpack(1);
    for (size_t b = 0; b < seqs.size(); ++b) {
      if (seqs[b].shape()[0] == 0) continue;
      const bool begin = v.mask()->at(int64_t(b), 0) == MaskKind::SequenceBegin;
      (begin ? begins : continues)++;
      const float* p = seqs[b].data<float>();
      // A continued piece sits where the sequence's previous piece was (also once the data
      // has run out and the slots before it hold empty gaps): the delays carry by position.
      if (begin)
        position[int(p[0])] = b;
      else
        EXPECT_EQ(position[int(p[0])], b) << "sequence " << int(p[0]) << " moved";
      for (int64_t t = 0; t < seqs[b].shape()[0]; ++t) steps[int(p[2 * t])].push_back(int(p[2 * t + 1]));
    }
  }
  ASSERT_EQ(steps.size(), 10u);
  for (auto& [i, s] : steps) {
    std::vector<int> expect(size_t(i % 5 + 1));
    for (size_t t = 0; t < expect.size(); ++t) expect[t] = int(t);
    EXPECT_EQ(s, expect) << "sequence " << i;
  }
  EXPECT_EQ(begins, 10);
  EXPECT_GT(continues, 0);
}

TEST(MinibatchSource, JoinsDeserializersBySequenceKey) {
  // Two files with the same sequence ids in different orders.
  std::string a, b;
  for (int i = 0; i < 30; ++i) a += std::to_string(i) + " |x " + std::to_string(i) + " 0\n";
  for (int i = 29; i >= 0; --i) b += std::to_string(i) + " |z " + std::to_string(100 + i) + "\n";
  CTFDeserializerOptions o;
  o.chunk_size = 50;
  auto da = std::make_shared<CTFDeserializer>(
      temp_file("join_a.txt", a), std::vector<CTFStreamDef>{{"x", "x", NDShape{2}, false, DataType::Float, false}}, o);
  auto db = std::make_shared<CTFDeserializer>(
      temp_file("join_b.txt", b), std::vector<CTFStreamDef>{{"z", "z", NDShape{1}, false, DataType::Float, false}}, o);
  MinibatchSourceConfig c;
  c.deserializers = {da, db};
  c.max_sweeps = 1;
  MinibatchSource src(c);
  ASSERT_EQ(src.streams().size(), 2u);
  int count = 0;
  for (auto mb = src.next_minibatch(5); !mb.empty(); mb = src.next_minibatch(5)) {
    auto xs = mb.streams[0].data.unpack(1), zs = mb.streams[1].data.unpack(1);
    ASSERT_EQ(xs.size(), zs.size());
    for (size_t i = 0; i < xs.size(); ++i, ++count) EXPECT_EQ(zs[i].data<float>()[0], 100 + xs[i].data<float>()[0]);
  }
  EXPECT_EQ(count, 30);
  std::string missing = "5 |z 1\n";
  auto dm = std::make_shared<CTFDeserializer>(
      temp_file("join_m.txt", missing),
      std::vector<CTFStreamDef>{{"z", "z", NDShape{1}, false, DataType::Float, false}});
  c.deserializers = {da, dm};
  MinibatchSource bad(c);
  EXPECT_THROW(bad.next_minibatch(5), IOError);
}

namespace {
// A deserializer whose chunk 2 cannot be read.
class Failing : public Deserializer {
 public:
  Failing() {
    infos_.push_back({"v", NDShape{1}, false, DataType::Float, false});
    for (size_t c = 0; c < 4; ++c) chunks_.push_back({c, 2, 2});
  }
  const std::vector<StreamInfo>& streams() const override { return infos_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t id) override {
    if (id == 2) throw IOError("chunk 2 is unreadable");
    std::vector<Sequence> out(2);
    for (size_t i = 0; i < 2; ++i) {
      out[i].key = id * 2 + i;
      out[i].streams.resize(1);
      out[i].streams[0].num_samples = 1;
      out[i].streams[0].values_f = {float(id * 2 + i)};
    }
    return out;
  }

 private:
  std::vector<StreamInfo> infos_;
  std::vector<ChunkInfo> chunks_;
};
}  // namespace

TEST(MinibatchSource, PrefetchPassesErrorsOnAndShutsDown) {
  MinibatchSourceConfig c;
  c.deserializers = {std::make_shared<Failing>()};
  c.randomize = false;
  c.prefetch = true;
  MinibatchSource src(c);
  // Chunks 0 and 1; the prefetched minibatch reads chunk 2, so it fails in the background.
  auto mb = src.next_minibatch(4);
  ASSERT_FALSE(mb.empty());
  auto state = src.checkpoint_state();
  EXPECT_THROW(src.next_minibatch(4), IOError);
  EXPECT_THROW(src.next_minibatch(4), IOError);  // read again, without prefetch: the position did not move
  EXPECT_EQ(src.checkpoint_state().at("position").as_int(), state.at("position").as_int());
  // Destroying a source with a prefetch in flight joins it.
  auto other = std::make_unique<MinibatchSource>(c);
  other->next_minibatch(2);
  other.reset();
}

namespace {
class EmptyChunks : public Deserializer {
 public:
  EmptyChunks() : infos_{{"v", NDShape{1}, false, DataType::Float, false}}, chunks_{{0, 0, 0}, {1, 0, 0}} {}
  const std::vector<StreamInfo>& streams() const override { return infos_; }
  const std::vector<ChunkInfo>& chunks() override { return chunks_; }
  std::vector<Sequence> load_chunk(size_t) override { return {}; }

 private:
  std::vector<StreamInfo> infos_;
  std::vector<ChunkInfo> chunks_;
};
}  // namespace

TEST(MinibatchSource, RejectsBadConfigurations) {
  MinibatchSourceConfig c;
  EXPECT_THROW(MinibatchSource{c}, ValueError);  // no deserializer
  c.deserializers = {std::make_shared<EmptyChunks>()};
  EXPECT_THROW(MinibatchSource{c}, ValueError);  // no data
  c.deserializers = {std::make_shared<Failing>(), std::make_shared<Failing>()};
  EXPECT_THROW(MinibatchSource{c}, ValueError);  // two streams named "v"
  c.deserializers = {std::make_shared<Failing>()};
  MinibatchSource ok(c);
  EXPECT_THROW(ok.next_minibatch(0), ValueError);
}

// frames_of: the valid steps of every sequence, in order, as a plain batch (dense and sparse).
TEST(MinibatchSource, FramesOfSequencesAreTheirValidSteps) {
  NDArrayView a(DataType::Float, NDShape{3, 2}), b(DataType::Float, NDShape{1, 2});
  for (int i = 0; i < 6; ++i) a.data<float>()[i] = float(i);
  b.data<float>()[0] = 10, b.data<float>()[1] = 11;
  const Value frames = frames_of(Value::from_sequences({a, b}));
  ASSERT_EQ(frames.shape(), (NDShape{4, 2}));
  const NDArrayView dense = frames.data().contiguous();
  EXPECT_EQ(std::vector<float>(dense.data<float>(), dense.data<float>() + 8),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 10, 11}));

  const fs::path path = fs::temp_directory_path() / "frames_sparse.ctf";
  std::ofstream(path) << "0 |x 1:1\n0 |x 0:2\n1 |x 2:3\n";
  MinibatchSourceConfig c;
  c.deserializers = {std::make_shared<CTFDeserializer>(
      path.string(), std::vector<CTFStreamDef>{{"x", "x", NDShape{3}, true, DataType::Float, false}})};
  c.randomize = false;
  c.max_sweeps = 1;
  MinibatchSource src(c);
  const Value sparse = frames_of(src.next_minibatch(10).streams[0].data);
  ASSERT_EQ(sparse.shape(), (NDShape{3, 3}));
  const NDArrayView d = sparse.data().to_dense().contiguous();
  EXPECT_EQ(std::vector<float>(d.data<float>(), d.data<float>() + 9), (std::vector<float>{0, 1, 0, 2, 0, 0, 0, 0, 3}));
  EXPECT_THROW(frames_of(Value(NDArrayView(DataType::Float, NDShape{3}))), ValueError);  // no sequence axis
  fs::remove(path);
}
