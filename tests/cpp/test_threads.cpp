// The engine used from several threads at once (the contract in docs/architecture.md,
// "Threads"): one Function evaluated from 8 threads gives the single-thread outputs
// (a fused oneDNN LSTM stack, a step-by-step recurrence whose delays carry state, and a
// convolution + batch normalization + dropout model in inference), and 4 different
// models trained in 4 threads end bit-identical to training them one after another.
// `make tsan` runs these under ThreadSanitizer.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <thread>

#include "cntk/evaluation.h"
#include "cntk/ops.h"
#include "cntk/trainer.h"

using namespace cntk;

namespace {

// Fewer rounds under ThreadSanitizer, which runs the kernels ~10x slower.
#if defined(__SANITIZE_THREAD__)
constexpr int kRounds = 2;
#else
constexpr int kRounds = 6;
#endif

NDArrayView uniform(const NDShape& shape, uint32_t seed, float scale = 1.0f) {
  NDArrayView a(DataType::Float, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = u(rng);
  return a;
}

std::vector<float> values_of(const NDArrayView& v) {
  NDArrayView d = v.to_dense().cast(DataType::Float).contiguous();
  return std::vector<float>(d.data<float>(), d.data<float>() + d.numel());
}

Variable parameter(const NDShape& shape, uint32_t seed, float scale, const char* name) {
  return Variable::parameter(shape, DataType::Float, uniform(shape, seed, scale), nullptr, name);
}

Variable sequence_input(int64_t dim) {
  return Variable::input({dim}, DataType::Float, false, false,
                         {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x");
}

// Runs work(0..n-1) on n threads; exceptions come back as test failures.
void run_threads(int n, const std::function<void(int)>& work) {
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int k = 0; k < n; ++k)
    threads.emplace_back([&, k] {
      try {
        work(k);
      } catch (const std::exception& e) {
        errors[size_t(k)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int k = 0; k < n; ++k) EXPECT_EQ(errors[size_t(k)], "") << "thread " << k;
}

std::vector<float> eval(const FunctionPtr& f, const Variable& x, const Value& data) {
  std::vector<Value> out;
  forward(f, {{x, data}}, {f->output()}, out, /*keep_for_backward=*/false);
  return values_of(out[0].data());
}

// 8 threads evaluate `f` kRounds times each; every output equals the single-thread one.
void check_concurrent_eval(const FunctionPtr& f, const Variable& x, const Value& data) {
  const std::vector<float> expected = eval(f, x, data);
  ASSERT_FALSE(expected.empty());
  std::vector<int> mismatches(8, 0);
  run_threads(8, [&](int k) {
    for (int r = 0; r < kRounds; ++r)
      if (eval(f, x, data) != expected) ++mismatches[size_t(k)];
  });
  for (int k = 0; k < 8; ++k) EXPECT_EQ(mismatches[size_t(k)], 0) << "thread " << k;
}

// Sequences of lengths 3..8 with `dim` features, as one padded batch.
Value sequences(int64_t dim) {
  std::vector<NDArrayView> seqs;
  for (int i = 0; i < 6; ++i) seqs.push_back(uniform({3 + i, dim}, 100 + uint32_t(i)));
  return Value::from_sequences(seqs);
}

}  // namespace

TEST(Threads, FusedLstmStackEvaluatedFromEightThreads) {
  // float32 OptimizedRNNStack runs oneDNN's LSTM primitive: one cached primitive, executed
  // concurrently with a scratchpad per call.
  auto x = sequence_input(8);
  const int64_t H = 16;
  Dictionary attrs{{"hiddenSize", DictValue(H)},
                   {"numLayers", DictValue(int64_t(2))},
                   {"bidirectional", DictValue(true)},
                   {"recurrentOp", DictValue("lstm")}};
  // Weights: 2 layers x 2 directions, cuDNN's packing (rows of H).
  const int64_t rows = 2 * (4 * (8 + H) + 8) + 2 * (4 * (2 * H + H) + 8);
  auto W = parameter({rows, H}, 1, 0.2f, "W");
  auto f = Function::composite(Function::primitive("OptimizedRNNStack", {x, W}, attrs));
  check_concurrent_eval(f, x, sequences(8));
}

TEST(Threads, StepByStepRecurrenceEvaluatedFromEightThreads) {
  // h[t] = tanh(x[t] W + h[t-1] R): the delay's carries are written by every call.
  auto x = sequence_input(4);
  auto W = parameter({4, 6}, 2, 0.5f, "W");
  auto R = parameter({6, 6}, 3, 0.5f, "R");
  auto ph = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "h_fwd");
  auto init = Variable::constant(NDArrayView::full(DataType::Float, {6}, 0.0), "h0");
  auto delay = Function::primitive("PastValue", {ph, init}, {{"offset", DictValue(1)}});
  auto h = ops::tanh(ops::plus(ops::times(x, W), ops::times(delay->output(), R)));
  auto f = Function::composite(h);
  f->replace_placeholders({{ph.get(), h->output()}});
  check_concurrent_eval(f, x, sequences(4));
}

TEST(Threads, ConvBatchNormDropoutEvaluatedFromEightThreads) {
  // Inference: batch normalization runs oneDNN's primitive on the running statistics, and
  // dropout passes its input through.
  auto x = Variable::input({1, 8, 8}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  auto K = parameter({4, 1, 3, 3}, 4, 0.5f, "K");
  auto conv = ops::convolution(K, x);
  auto scale = parameter({4}, 5, 1.0f, "scale"), bias = parameter({4}, 6, 0.5f, "bias");
  auto mean = Variable::constant(uniform({4}, 7, 0.3f), "mean");
  NDArrayView v = uniform({4}, 8, 0.5f);
  for (int64_t i = 0; i < 4; ++i) v.data<float>()[i] += 1.0f;  // variances in [0.5, 1.5]
  auto var = Variable::constant(v, "var");
  auto count = Variable::constant(NDArrayView::full(DataType::Float, NDShape{}, 10.0), "count");
  Dictionary bn{{"spatial", DictValue(true)},
                {"normalizationTimeConstant", DictValue(4096.0)},
                {"blendTimeConstant", DictValue(0.0)},
                {"epsilon", DictValue(1e-5)}};
  auto norm = Function::primitive("BatchNormalization", {conv->output(), scale, bias, mean, var, count}, bn);
  Dictionary drop{
      {"dropoutRate", DictValue(0.3)}, {"rngSeed", DictValue(int64_t(9))}, {"rngOffset", DictValue(int64_t(0))}};
  auto dropped = Function::primitive("Dropout", {ops::relu(norm->output())->output()}, drop);
  auto D = parameter({4, 8, 8, 3}, 10, 0.1f, "D");
  auto f = Function::composite(ops::times(dropped->output(), D));
  check_concurrent_eval(f, x, Value(uniform({5, 1, 8, 8}, 11)));
}

namespace {

// A two-layer classifier with dropout, trained by Adam on its own random data; its
// parameters after `steps` minibatches.
std::vector<std::vector<float>> train_model(uint32_t seed, int steps) {
  auto x = Variable::input({10}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  auto y = Variable::input({3}, DataType::Float, false, false, {Axis::default_batch_axis()}, "y");
  auto W1 = parameter({10, 16}, seed, 0.4f, "W1"), b1 = parameter({16}, seed + 1, 0.1f, "b1");
  auto W2 = parameter({16, 3}, seed + 2, 0.4f, "W2"), b2 = parameter({3}, seed + 3, 0.1f, "b2");
  auto hidden = ops::relu(ops::plus(ops::times(x, W1), b1));
  Dictionary drop{
      {"dropoutRate", DictValue(0.2)}, {"rngSeed", DictValue(int64_t(seed))}, {"rngOffset", DictValue(int64_t(0))}};
  auto dropped = Function::primitive("Dropout", {hidden->output()}, drop);
  auto z = ops::plus(ops::times(dropped->output(), W2), b2);
  auto loss = ops::cross_entropy_with_softmax(z, y);
  std::vector<Variable> params{W1, b1, W2, b2};
  Trainer trainer(Function::composite(z), Function::composite(loss), nullptr,
                  {adam_learner(params, LearningRateSchedule(0.01), MomentumSchedule(0.9))});
  std::mt19937 rng(seed);
  for (int s = 0; s < steps; ++s) {
    NDArrayView features = uniform({32, 10}, seed * 1000 + uint32_t(s));
    NDArrayView labels = NDArrayView::zeros(DataType::Float, {32, 3});
    for (int i = 0; i < 32; ++i) labels.data<float>()[i * 3 + rng() % 3] = 1.0f;
    trainer.train_minibatch({{x, Value(features)}, {y, Value(labels)}});
  }
  std::vector<std::vector<float>> out;
  for (auto& p : params) out.push_back(values_of(p.value()));
  return out;
}

}  // namespace

TEST(Threads, FourModelsTrainedInFourThreadsMatchSequentialTraining) {
  const int steps = kRounds * 4;
  std::vector<std::vector<std::vector<float>>> expected, got(4);
  for (uint32_t k = 0; k < 4; ++k) expected.push_back(train_model(10 * k + 1, steps));
  run_threads(4, [&](int k) { got[size_t(k)] = train_model(10 * uint32_t(k) + 1, steps); });
  for (size_t k = 0; k < 4; ++k) {
    ASSERT_EQ(got[k].size(), 4u) << "model " << k;
    for (size_t p = 0; p < 4; ++p) EXPECT_EQ(got[k][p], expected[k][p]) << "model " << k << " parameter " << p;
  }
  // The models differ (the test would not see a mix-up otherwise).
  EXPECT_NE(expected[0][0], expected[1][0]);
}
