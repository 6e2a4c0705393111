// TrainingSession from C++ (no Python): a logistic regression read from a CTF file with a
// randomizing reader, trained with checkpoints, cross-validation and a test. A session
// stopped half-way and a second session restored from its checkpoint end with the same
// parameters as one uninterrupted session.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cntk/ops.h"
#include "cntk/training_session.h"
#include "io/ctf_deserializer.h"
#include "io/minibatch_source.h"

using namespace cntk;
namespace fs = std::filesystem;

namespace {

// Two Gaussian blobs, one per class: "|x a b |y c:1" lines (labels sparse one-hot).
std::string blobs_file(const fs::path& dir, const std::string& name, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  fs::path p = dir / name;
  std::ofstream out(p);
  for (int i = 0; i < n; ++i) {
    const int c = i % 2;
    const float mean = c == 0 ? -1.0f : 1.0f;
    out << "|x " << mean + noise(rng) << " " << mean + noise(rng) << " |y " << c << ":1\n";
  }
  return p.string();
}

std::shared_ptr<io::MinibatchSource> reader(const std::string& path, bool randomize, uint64_t max_sweeps) {
  io::MinibatchSourceConfig cfg;
  io::CTFDeserializerOptions o;
  o.chunk_size = 256;  // several chunks, so that the randomizer's position matters
  cfg.deserializers.push_back(std::make_shared<io::CTFDeserializer>(
      path,
      std::vector<io::CTFStreamDef>{{"features", "x", NDShape{2}, false, DataType::Float, false},
                                    {"labels", "y", NDShape{2}, true, DataType::Float, false}},
      o));
  cfg.randomize = randomize;
  cfg.max_sweeps = max_sweeps;
  cfg.randomization_seed = 7;
  return std::make_shared<io::MinibatchSource>(std::move(cfg));
}

struct Model {
  Variable x, y, W, b;
  FunctionPtr z, loss, error;
  std::unique_ptr<Trainer> trainer;

  Model() {
    using namespace cntk::ops;
    const std::vector<Axis> batch{Axis::default_batch_axis()};
    x = Variable::input({2}, DataType::Float, false, false, batch, "features");
    y = Variable::input({2}, DataType::Float, false, false, batch, "labels");
    W = Variable::parameter({2, 2}, DataType::Float, NDArrayView::full(DataType::Float, {2, 2}, 0.1), nullptr, "W");
    b = Variable::parameter({2}, DataType::Float, NDArrayView::full(DataType::Float, {2}, 0.0), nullptr, "b");
    z = plus(times(x, W), b, "z");
    loss = cross_entropy_with_softmax(z, y, -1, "loss");
    error = classification_error(z, y, "error");
    // Momentum keeps per-parameter state: restoring it is part of continuing exactly.
    trainer = std::make_unique<Trainer>(z, loss, error,
                                        std::vector<LearnerPtr>{momentum_sgd_learner(
                                            z->parameters(), LearningRateSchedule(0.1), MomentumSchedule(0.9))});
  }
  std::vector<float> parameters() const {
    std::vector<float> out;
    for (const Variable& p : {W, b}) {
      const NDArrayView& v = p.value();
      out.insert(out.end(), v.data<float>(), v.data<float>() + v.shape().total_size());
    }
    return out;
  }
  TrainingSourcePtr source(const std::shared_ptr<io::MinibatchSource>& r) const {
    return reader_source(r, {{x, "features"}, {y, "labels"}});
  }
};

class TrainingSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cntk_session_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    train_ = blobs_file(dir_, "train.ctf", 600, 1);
    cv_ = blobs_file(dir_, "cv.ctf", 200, 2);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string train_, cv_;
};

struct CvCall {
  size_t index;
  double error;
  size_t samples, minibatches;
};

TEST_F(TrainingSessionTest, RestoredSessionContinuesAsUninterrupted) {
  constexpr size_t kMaxSamples = 1500, kMbSize = 25;

  // Uninterrupted: checkpoints every 400 samples, cross-validation every 500.
  Model full;
  std::vector<CvCall> cv_calls;
  {
    CheckpointConfig ckp{(dir_ / "full" / "model").string(), {400, DataUnit::Sample}, false, false};
    fs::create_directories(dir_ / "full");
    CrossValidationConfig cv;
    cv.source = full.source(reader(cv_, false, 1));
    cv.frequency = {500, DataUnit::Sample};
    cv.minibatch_size = MinibatchSizeSchedule(size_t(64));
    cv.callback = [&](size_t index, double error, size_t samples, size_t mbs) {
      cv_calls.push_back({index, error, samples, mbs});
      return true;
    };
    TrainingSession session(*full.trainer, full.source(reader(train_, true, io::kInfinitelyRepeat)),
                            MinibatchSizeSchedule(kMbSize), kMaxSamples, {0, DataUnit::Sample}, ckp, cv);
    session.train();
  }
  EXPECT_EQ(full.trainer->total_number_of_samples_seen(), kMaxSamples);
  EXPECT_TRUE(fs::exists(dir_ / "full" / "model"));
  EXPECT_TRUE(fs::exists(dir_ / "full" / "model.ckp"));
  // Every 500 samples: after 500, 1000 and 1500; each pass reads the whole validation set
  // (200 samples in minibatches of 64) from its start.
  ASSERT_EQ(cv_calls.size(), 3u);
  for (size_t i = 0; i < cv_calls.size(); ++i) {
    EXPECT_EQ(cv_calls[i].index, i);
    EXPECT_EQ(cv_calls[i].samples, 200u);
    EXPECT_EQ(cv_calls[i].minibatches, 4u);
    EXPECT_GE(cv_calls[i].error, 0.0);
  }
  EXPECT_LT(cv_calls.back().error, 0.2);  // the blobs are separable to about 8% error

  // Interrupted at 700 samples (a checkpoint at 400, the final one at 700), then continued.
  const std::string ckp_file = (dir_ / "part" / "model").string();
  {
    Model first;
    CheckpointConfig ckp{ckp_file, {400, DataUnit::Sample}, true, false};
    TrainingSession session(*first.trainer, first.source(reader(train_, true, io::kInfinitelyRepeat)),
                            MinibatchSizeSchedule(kMbSize), 700, {0, DataUnit::Sample}, ckp);
    session.train();
    EXPECT_EQ(first.trainer->total_number_of_samples_seen(), 700u);
    EXPECT_NE(first.parameters(), full.parameters());
  }
  ASSERT_TRUE(fs::exists(ckp_file + ".ckp"));
  Model second;  // a fresh model, trainer and reader: everything comes from the checkpoint
  {
    CheckpointConfig ckp{ckp_file, {400, DataUnit::Sample}, true, false};
    TrainingSession session(*second.trainer, second.source(reader(train_, true, io::kInfinitelyRepeat)),
                            MinibatchSizeSchedule(kMbSize), kMaxSamples, {0, DataUnit::Sample}, ckp);
    session.train();
  }
  EXPECT_EQ(second.trainer->total_number_of_samples_seen(), kMaxSamples);
  EXPECT_EQ(second.parameters(), full.parameters());
}

TEST_F(TrainingSessionTest, PreserveAllKeepsNumberedCheckpoints) {
  Model m;
  const std::string name = (dir_ / "keep").string();
  CheckpointConfig ckp{name, {200, DataUnit::Sample}, false, true};
  TrainingSession session(*m.trainer, m.source(reader(train_, false, io::kInfinitelyRepeat)),
                          MinibatchSizeSchedule(size_t(50)), 500, {0, DataUnit::Sample}, ckp);
  session.train();
  // Periods 0 and 1 at 200 and 400 samples, the partial period 2 at 500, the final state.
  for (const std::string suffix : {"0", "1", "2", ""}) {
    EXPECT_TRUE(fs::exists(name + suffix)) << suffix;
    EXPECT_TRUE(fs::exists(name + suffix + ".ckp")) << suffix;
  }
  EXPECT_FALSE(fs::exists(name + "3"));
}

TEST_F(TrainingSessionTest, CallbackFalseStopsAndMinibatchUnitsCount) {
  Model m;
  CrossValidationConfig cv;
  cv.frequency = {4, DataUnit::Minibatch};  // no source: the callback alone, with zeros
  size_t calls = 0;
  cv.callback = [&](size_t index, double error, size_t samples, size_t mbs) {
    EXPECT_EQ(index, calls);
    EXPECT_EQ(error, 0.0);
    EXPECT_EQ(samples + mbs, 0u);
    return ++calls < 2;
  };
  TrainingSession session(*m.trainer, m.source(reader(train_, false, io::kInfinitelyRepeat)),
                          MinibatchSizeSchedule(size_t(10)), 100000, {0, DataUnit::Sample}, {}, cv);
  session.train();
  EXPECT_EQ(calls, 2u);
  EXPECT_EQ(m.trainer->total_number_of_samples_seen(), 80u);  // 8 minibatches of 10
}

TEST_F(TrainingSessionTest, ProgressAndTestSummariesAsCntkPrints) {
  Model m;
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  TestConfig test{m.source(reader(cv_, false, 1)), MinibatchSizeSchedule(size_t(100))};
  // A minibatch size schedule: 20 for the first 300 samples, then 60.
  MinibatchSizeSchedule sizes(std::vector<std::pair<size_t, size_t>>{{1, 20}, {1, 60}}, 300);
  TrainingSession session(*m.trainer, m.source(reader(train_, false, 1)), sizes, kAllSamples, {300, DataUnit::Sample},
                          {}, {}, test, {std::make_shared<ProgressPrinter>(out, 2)});
  session.train();
  EXPECT_EQ(m.trainer->total_number_of_samples_seen(), 600u);  // one sweep (max_sweeps 1)
  EXPECT_EQ(m.trainer->parameter_learners()[0]->total_number_of_minibatches_seen(), 15u + 5u);
  std::rewind(out);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  EXPECT_NE(text.find("Finished Epoch[1 of 2]: [Training] loss = "), std::string::npos) << text;
  EXPECT_NE(text.find(" * 300, metric = "), std::string::npos) << text;
  EXPECT_NE(text.find("Finished Epoch[2 of 2]: [Training] loss = "), std::string::npos) << text;
  EXPECT_NE(text.find("Finished Evaluation [1]: Minibatch[1-2]: metric = "), std::string::npos) << text;
  EXPECT_NE(text.find("% * 200;"), std::string::npos) << text;
}

TEST_F(TrainingSessionTest, UnlimitedSourceIsAnError) {
  Model m;
  TrainingSession session(*m.trainer, m.source(reader(train_, false, io::kInfinitelyRepeat)),
                          MinibatchSizeSchedule(size_t(10)));
  EXPECT_THROW(session.train(), ValueError);
  EXPECT_THROW(TrainingSession(*m.trainer, nullptr, MinibatchSizeSchedule(size_t(10))), ValueError);
  EXPECT_THROW(reader_source(reader(train_, false, 1), {{m.x, "nope"}}), ValueError);
}

}  // namespace
