// Trains a two-class logistic regression from C++ with a learner and a Trainer,
// as CNTK's logistic-regression tutorial does in Python:
//
//   x : 2 features with a batch axis; y : one-hot label over 2 classes
//   z = x @ W + b                               W: (2, 2), b: (2,)
//   loss   = cross_entropy_with_softmax(z, y)   per sample
//   metric = classification_error(z, y)         per sample
//
// The data are two Gaussian blobs (one per class) drawn with <random> from a
// fixed seed. Plain SGD with a learning-rate schedule (0.5 on the mean gradient
// of a minibatch for the first 5 epochs' worth of samples, then 0.1) trains the
// model; the program prints the loss every 100 minibatches, then the error over
// the whole training set and over a held-out set, and exits with status 1 when
// the training error is above 10% (it runs as a ctest test).
#include <cstdio>
#include <random>
#include <vector>

#include "cntk/ops.h"
#include "cntk/trainer.h"
#include "keep_model.h"

using namespace cntk;

namespace {

constexpr int64_t kFeatures = 2, kClasses = 2;

struct Dataset {
  NDArrayView features;  // (n, kFeatures)
  NDArrayView labels;    // (n, kClasses), one-hot
};

// n samples, classes alternating; class c is N(mean_c, 1) in every feature with
// mean_0 = -1.5 and mean_1 = +1.5 (the Bayes error is about 1.7%).
Dataset make_blobs(int64_t n, std::mt19937& rng) {
  Dataset d{NDArrayView(DataType::Float, NDShape{n, kFeatures}), NDArrayView(DataType::Float, NDShape{n, kClasses})};
  std::normal_distribution<float> noise(0.0f, 1.0f);
  float* x = d.features.data<float>();
  float* y = d.labels.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = i % kClasses;
    const float mean = c == 0 ? -1.5f : 1.5f;
    for (int64_t k = 0; k < kFeatures; ++k) x[i * kFeatures + k] = mean + noise(rng);
    for (int64_t k = 0; k < kClasses; ++k) y[i * kClasses + k] = k == c ? 1.0f : 0.0f;
  }
  return d;
}

// Rows [begin, begin + count) of a (n, k) array, copied.
NDArrayView rows(const NDArrayView& a, int64_t begin, int64_t count) {
  const int64_t k = a.shape()[1];
  NDArrayView r(a.dtype(), NDShape{count, k});
  const float* src = a.data<float>() + begin * k;
  std::copy(src, src + count * k, r.data<float>());
  return r;
}

}  // namespace

int main() {
  using namespace cntk::ops;

  const int64_t train_size = 4000, test_size = 2000, minibatch_size = 40, epochs = 10;
  std::mt19937 rng(20251122);
  Dataset train = make_blobs(train_size, rng), test = make_blobs(test_size, rng);

  auto x = Variable::input({kFeatures}, DataType::Float, false, false, {Axis::default_batch_axis()}, "features");
  auto y = Variable::input({kClasses}, DataType::Float, false, false, {Axis::default_batch_axis()}, "labels");
  auto W = Variable::parameter({kFeatures, kClasses}, DataType::Float,
                               NDArrayView::full(DataType::Float, {kFeatures, kClasses}, 0.0), nullptr, "W");
  auto b = Variable::parameter({kClasses}, DataType::Float, NDArrayView::full(DataType::Float, {kClasses}, 0.0),
                               nullptr, "b");

  auto z = plus(times(x, W), b, "z");
  auto loss = cross_entropy_with_softmax(z, y, -1, "loss");
  auto error = classification_error(z, y, "error");

  // Learning rate per minibatch (reference minibatch size 0: applied to the mean
  // gradient): 0.5 for the first 5 * train_size samples, 0.1 from then on.
  LearningRateSchedule lr(std::vector<std::pair<size_t, double>>{{5, 0.5}, {1, 0.1}}, size_t(train_size));
  auto learner = sgd_learner(z->parameters(), lr);
  Trainer trainer(z, loss, error, {learner});

  std::printf("logistic regression: %lld training samples in 2 Gaussian blobs, minibatches of %lld, %lld epochs\n",
              (long long)train_size, (long long)minibatch_size, (long long)epochs);
  int64_t minibatch = 0;
  double loss_sum = 0, error_sum = 0;
  size_t samples = 0;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    for (int64_t begin = 0; begin < train_size; begin += minibatch_size) {
      trainer.train_minibatch({{x, Value(rows(train.features, begin, minibatch_size))},
                               {y, Value(rows(train.labels, begin, minibatch_size))}});
      loss_sum += trainer.previous_minibatch_loss().sum;
      error_sum += trainer.previous_minibatch_evaluation().sum;
      samples += trainer.previous_minibatch_sample_count();
      if (++minibatch % 100 == 0) {
        std::printf("minibatch %5lld  samples %7zu  lr %.2f  loss %.4f  error %5.2f%%\n", (long long)minibatch,
                    trainer.total_number_of_samples_seen(), learner->learning_rate(), loss_sum / double(samples),
                    100.0 * error_sum / double(samples));
        loss_sum = error_sum = 0;
        samples = 0;
      }
    }
  }

  // The metric averaged over whole sets, with the final parameters.
  const double train_error = trainer.test_minibatch({{x, Value(train.features)}, {y, Value(train.labels)}});
  const double test_error = trainer.test_minibatch({{x, Value(test.features)}, {y, Value(test.labels)}});
  keep_model(z, "train_logistic_regression");
  const NDArrayView w = W.value().contiguous(), bias = b.value().contiguous();
  std::printf("W = [[%.3f, %.3f], [%.3f, %.3f]]  b = [%.3f, %.3f]\n", w.data<float>()[0], w.data<float>()[1],
              w.data<float>()[2], w.data<float>()[3], bias.data<float>()[0], bias.data<float>()[1]);
  std::printf("final error: training %.2f%%, held-out %.2f%%\n", 100 * train_error, 100 * test_error);
  if (train_error > 0.10) {
    std::printf("FAILED: the training error is above 10%%\n");
    return 1;
  }
  return 0;
}
