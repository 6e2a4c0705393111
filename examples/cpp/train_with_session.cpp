// Trains a two-class logistic regression with a TrainingSession from C++: periodic
// checkpoints, cross-validation with a callback, CNTK's epoch summaries, and a restart that
// continues from the last checkpoint.
//
// The data are two Gaussian blobs held in memory and served by a TrainingSource written here
// (a reader from src/io serves CTF and other files the same way, see reader_source). The
// source's position is part of each checkpoint, so a session started again after an
// interruption reads exactly what an uninterrupted one would. The program trains once
// without interruption, then again in two sessions (the second restored from the first's
// checkpoint), and exits with status 1 unless both end with the same parameters and the
// validation error is below 10% (it runs as a ctest test).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <vector>

#include "cntk/ops.h"
#include "cntk/training_session.h"
#include "keep_model.h"

using namespace cntk;

namespace {

constexpr int64_t kFeatures = 2, kClasses = 2;

// `n` samples of two blobs (class c around (2c - 1) * 1.5 in every feature), served in
// order; with `repeat` the data starts over after each sweep, else it ends.
class BlobSource : public TrainingSource {
 public:
  BlobSource(Variable x, Variable y, int64_t n, unsigned seed, bool repeat)
      : x_(std::move(x)), y_(std::move(y)), n_(n), repeat_(repeat), features_(n * kFeatures), labels_(n * kClasses) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = i % kClasses;
      for (int64_t k = 0; k < kFeatures; ++k) features_[i * kFeatures + k] = (c == 0 ? -1.5f : 1.5f) + noise(rng);
      for (int64_t k = 0; k < kClasses; ++k) labels_[i * kClasses + k] = k == c ? 1.0f : 0.0f;
    }
  }

  SourceMinibatch next_minibatch(size_t max_samples, size_t, size_t) override {
    const int64_t at = position_ % n_;
    if (!repeat_ && position_ >= n_) return {};
    const int64_t count = std::min<int64_t>(int64_t(max_samples), n_ - at);  // up to the sweep's end
    NDArrayView f(DataType::Float, NDShape{count, kFeatures}), l(DataType::Float, NDShape{count, kClasses});
    std::copy_n(features_.data() + at * kFeatures, count * kFeatures, f.data<float>());
    std::copy_n(labels_.data() + at * kClasses, count * kClasses, l.data<float>());
    position_ += count;
    SourceMinibatch mb;
    mb.arguments = {{x_, Value(f)}, {y_, Value(l)}};
    mb.sweep_end = position_ % n_ == 0;
    return mb;
  }
  bool has_state() const override { return true; }
  Dictionary checkpoint_state() const override { return {{"position", position_}}; }
  void restore_from_checkpoint(const Dictionary& state) override { position_ = state.at("position").as_int(); }
  bool is_infinite() const override { return repeat_; }

 private:
  Variable x_, y_;
  int64_t n_;
  bool repeat_;
  std::vector<float> features_, labels_;
  int64_t position_ = 0;
};

struct Run {
  std::vector<float> parameters;
  FunctionPtr model;
  double last_validation_error = 1.0;
};

// Trains a fresh model until `max_samples` samples have been seen (resuming from the
// checkpoint at `checkpoint` if there is one) and returns its parameters.
Run train(const std::string& checkpoint, size_t max_samples) {
  using namespace cntk::ops;
  const std::vector<Axis> batch{Axis::default_batch_axis()};
  auto x = Variable::input({kFeatures}, DataType::Float, false, false, batch, "features");
  auto y = Variable::input({kClasses}, DataType::Float, false, false, batch, "labels");
  auto W = Variable::parameter({kFeatures, kClasses}, DataType::Float,
                               NDArrayView::full(DataType::Float, {kFeatures, kClasses}, 0.0), nullptr, "W");
  auto b = Variable::parameter({kClasses}, DataType::Float, NDArrayView::full(DataType::Float, {kClasses}, 0.0),
                               nullptr, "b");
  auto z = plus(times(x, W), b, "z");
  Trainer trainer(z, cross_entropy_with_softmax(z, y, -1, "loss"), classification_error(z, y, "error"),
                  {momentum_sgd_learner(z->parameters(), LearningRateSchedule(0.1), MomentumSchedule(0.9))});

  Run run;
  CheckpointConfig ckp{checkpoint, {500, DataUnit::Sample}, /*restore=*/true, /*preserve_all=*/false};
  CrossValidationConfig cv;
  cv.source = std::make_shared<BlobSource>(x, y, 400, 2, /*repeat=*/false);
  cv.frequency = {1000, DataUnit::Sample};
  cv.minibatch_size = MinibatchSizeSchedule(size_t(100));
  cv.callback = [&](size_t index, double error, size_t samples, size_t) {
    std::printf("cross-validation %zu: error %.2f%% over %zu samples\n", index + 1, 100.0 * error, samples);
    run.last_validation_error = error;
    return true;  // false would stop training here
  };
  TrainingSession session(trainer, std::make_shared<BlobSource>(x, y, 1000, 1, /*repeat=*/true),
                          MinibatchSizeSchedule(size_t(40)), max_samples, {1000, DataUnit::Sample}, ckp, cv,
                          /*test=*/{}, {std::make_shared<ProgressPrinter>(stdout, 3)});
  session.train();
  run.model = z;
  for (const Variable& p : {W, b})
    run.parameters.insert(run.parameters.end(), p.value().data<float>(),
                          p.value().data<float>() + p.value().shape().total_size());
  return run;
}

}  // namespace

int main() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("cntk_train_with_session_" + std::to_string(::getpid()));
  fs::create_directories(dir);

  std::printf("-- uninterrupted, 3000 samples\n");
  const Run whole = train((dir / "whole.model").string(), 3000);
  keep_model(whole.model, "train_with_session");
  // Stopped at a minibatch boundary (40 minibatches of 40): a stop elsewhere would make the
  // last minibatch shorter than the uninterrupted run's, and the runs would differ by that.
  std::printf("-- first 1600 samples, then a new session restored from the checkpoint\n");
  train((dir / "split.model").string(), 1600);
  const Run resumed = train((dir / "split.model").string(), 3000);
  fs::remove_all(dir);

  const bool same = whole.parameters == resumed.parameters;
  std::printf("restored run %s the uninterrupted one; validation error %.2f%%\n", same ? "matches" : "DIFFERS FROM",
              100.0 * whole.last_validation_error);
  return same && whole.last_validation_error < 0.10 ? 0 : 1;
}
