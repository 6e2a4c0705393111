// BrainScript evaluation (src/brainscript/evaluator.h): the language on plain values, and
// network descriptions built into engine graphs and run forward.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "brainscript/command_line.h"
#include "brainscript/evaluator.h"
#include "brainscript_test_util.h"
#include "cntk/evaluation.h"

using namespace cntk;
using namespace cntk::brainscript;
using namespace cntk::brainscript::test_util;
namespace fs = std::filesystem;

TEST(BrainScriptEvaluator, NumbersRecordsLambdasArrays) {
  EXPECT_EQ(num("x = 1 + 2 * 3 - 4 / 2"), 5);
  EXPECT_EQ(num("fac(i) = if i > 1 then fac(i-1)*i else 1\nx = fac(5)"), 120);
  EXPECT_EQ(
      num("fibs(n) = [ vals = array[1..n] (i => if i < 3 then i-1 else vals[i-1]+vals[i-2]) ].vals[n]\nx = fibs(10)"),
      34);
  EXPECT_EQ(num("x = [ v = (i => i + delta) ].v(5) ; delta = 42"), 47);
  EXPECT_EQ(num("f(a, b = 10) = a * b\nx = f(2) + f(2, b = 3)"), 26);
  EXPECT_EQ(num("arr[i:1..4] = i * i\nx = arr[3]"), 9);
  EXPECT_EQ(num("x = (13:42:7)[1]"), 42);
  EXPECT_EQ(num("x = if !false && (1 < 2 || 1/0 > 0) then 1 else 0"), 1);
  EXPECT_EQ(num("r = [ a = 1 ; inner = [ b = a + 1 ] ]\nx = r.inner.b"), 2);  // lookups go outwards
  EXPECT_EQ(num("x = BS.Constants.One + 1"), 2);                              // the library is in scope
  EXPECT_EQ(as_string(evaluate_member(parse_record("x = 'a' + \"b\"", "t"), "x"), "x"), "ab");
}

TEST(BrainScriptEvaluator, ErrorsNameThePlace) {
  try {
    num("a = 1\nx = a + nothing\n");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("test.bs(2,9): evaluation error: unknown identifier 'nothing'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(num("x = y + 1\ny = x"), ConfigError);           // circular
  EXPECT_THROW(num("x = 'a' * 2"), ConfigError);                // no such operator
  EXPECT_THROW(num("f(a) = a\nx = f(1, 2)"), ConfigError);      // arity
  EXPECT_THROW(num("x = (1:2)[5]"), ConfigError);               // index out of range
  EXPECT_THROW(num("f(n) = f(n + 1)\nx = f(0)"), ConfigError);  // unbounded recursion
}

// The logistic-regression network of CNTK's HelloWorld tutorial, run forward against a
// hand-computed sigmoid(w . x + b).
TEST(BrainScriptEvaluator, LogisticRegressionNetworkRunsForward) {
  Network net = build_network(R"([
    SDim = 2 ; LDim = 1
    features = Input (SDim)
    labels   = Input (LDim)
    b = Parameter (LDim, 1)
    w = Parameter (LDim, SDim)
    p = Sigmoid (w * features + b)
    lr = Logistic (labels, p)
    err = SquareError (labels, p)
    featureNodes = (features) ; labelNodes = (labels)
    criterionNodes = (lr) ; evaluationNodes = (err) ; outputNodes = (p)
  ])");
  ASSERT_EQ(net.features.size(), 1u);
  EXPECT_EQ(net.features[0].name(), "features");
  EXPECT_EQ(net.features[0].shape(), NDShape({2}));
  EXPECT_EQ(net.nodes.at("w").shape(), NDShape({2, 1}));  // BrainScript [1 x 2], NumPy order
  EXPECT_EQ(net.nodes.at("b").shape(), NDShape({1}));     // a [1 x 1] bias column is a vector
  EXPECT_EQ(net.outputs[0].owner()->name(), "p");
  EXPECT_EQ(net.model->parameters().size(), 2u);

  const std::vector<float> w = values_of(net.nodes.at("w").value());
  const float b = values_of(net.nodes.at("b").value())[0];
  const std::vector<std::vector<float>> xs = {{0.5f, -1.f}, {2.f, 3.f}, {-1.5f, 0.25f}};
  NDArrayView batch(DataType::Float, NDShape{3, 2});
  for (size_t i = 0; i < 3; ++i) std::copy(xs[i].begin(), xs[i].end(), batch.data<float>() + 2 * i);
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.features[0], cntk::Value(batch)}}, {net.outputs[0]}, outs, false);
  const std::vector<float> p = values_of(outs[0].data());
  ASSERT_EQ(p.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const double z = w[0] * xs[i][0] + w[1] * xs[i][1] + b;
    EXPECT_NEAR(p[i], 1 / (1 + std::exp(-z)), 1e-6);
  }
}

TEST(BrainScriptEvaluator, TutorialConfigBuildsItsNetwork) {
  const fs::path cfg = fs::path(CNTK_TEST_DATA_DIR) / ".." / "cntk-brainscript" / "Tutorials" /
                       "HelloWorld-LogisticRegression" / "lr_bs.cntk";
  if (!fs::exists(cfg)) GTEST_SKIP() << cfg << " is absent";
  auto cl = parse_command_line({"configFile=" + cfg.string()});
  Network net = build_network(cl.config->block("Train")->get("BrainScriptNetworkBuilder"));
  EXPECT_EQ(net.criteria.size(), 1u);
  EXPECT_EQ(net.criteria[0].owner()->name(), "lr");
  EXPECT_EQ(net.evaluations[0].owner()->name(), "err");
  EXPECT_EQ(net.labels[0].name(), "labels");
}

// Library layers: parameters with an inferred input dimension, made once per layer instance.
TEST(BrainScriptEvaluator, DenseLayersInSequential) {
  Network net = build_network(R"([
    features = Input (4)
    model = Sequential (DenseLayer {3, activation = Sigmoid} : DenseLayer {2})
    z = model (features)
    outputNodes = (z)
  ])");
  auto params = net.model->parameters();
  ASSERT_EQ(params.size(), 4u);
  std::map<std::string, NDShape> shapes;
  for (const auto& p : params) shapes[p.shape().str()] = p.shape();
  EXPECT_TRUE(shapes.count(NDShape({4, 3}).str()));  // inferred from the input
  EXPECT_TRUE(shapes.count(NDShape({3, 2}).str()));
  EXPECT_EQ(net.outputs[0].shape(), NDShape({2}));

  // z = W2 . sigmoid(W1 . x + b1) + b2 with the layers' own parameter values (biases are 0).
  Variable w1, w2;
  for (const auto& p : params) {
    if (p.shape() == NDShape({4, 3})) w1 = p;
    if (p.shape() == NDShape({3, 2})) w2 = p;
  }
  const std::vector<float> x = {0.5f, -1.f, 2.f, 0.25f};
  NDArrayView batch(DataType::Float, NDShape{1, 4});
  std::copy(x.begin(), x.end(), batch.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.nodes.at("features"), cntk::Value(batch)}}, {net.outputs[0]}, outs, false);
  const std::vector<float> z = values_of(outs[0].data()), a = values_of(w1.value()), b = values_of(w2.value());
  std::vector<double> h(3, 0.0);
  for (size_t j = 0; j < 3; ++j) {
    for (size_t i = 0; i < 4; ++i) h[j] += x[i] * a[i * 3 + j];
    h[j] = 1 / (1 + std::exp(-h[j]));
  }
  for (size_t k = 0; k < 2; ++k) {
    double expect = 0;
    for (size_t j = 0; j < 3; ++j) expect += h[j] * b[j * 2 + k];
    EXPECT_NEAR(z[k], expect, 1e-5);
  }
}

// PastValue/FutureValue recurrences that refer to themselves: running sums forwards and backwards.
TEST(BrainScriptEvaluator, DelaysCloseRecurrences) {
  Network net = build_network(R"([
    x = Input (1)
    forward = PastValue (1, forward, defaultHiddenActivation = 0) + x
    backward = x + FutureValue (1, backward, defaultHiddenActivation = 0)
    shifted = PastValue (1, x, timeStep = 2)   # default initial activation 0.1
    outputNodes = (forward : backward : shifted)
  ])");
  EXPECT_EQ(net.nodes.at("x").dynamic_axes().size(), 2u);  // sequence ops keep the inputs' sequence axis
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.nodes.at("x"), one_sequence({1, 2, 3, 4}, 1)}}, net.outputs, outs, false);
  EXPECT_EQ(values_of(outs[0].data()), (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(values_of(outs[1].data()), (std::vector<float>{10, 9, 7, 4}));
  const std::vector<float> shifted = values_of(outs[2].data());
  ASSERT_EQ(shifted.size(), 4u);
  EXPECT_NEAR(shifted[0], 0.1, 1e-6);
  EXPECT_NEAR(shifted[1], 0.1, 1e-6);
  EXPECT_EQ(shifted[2], 1);
  EXPECT_EQ(shifted[3], 2);
}

// The library's RecurrentLSTMLayer against an LSTM computed here from its parameters.
TEST(BrainScriptEvaluator, RecurrentLSTMLayerMatchesReference) {
  Network net = build_network(R"([
    x = Input (2)
    h = RecurrentLSTMLayer {3} (x)
    outputNodes = (h)
  ])");
  const std::vector<float> xs = {0.5f, -1.f, 1.5f, 0.25f, -0.75f, 2.f};  // 3 steps of 2
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.nodes.at("x"), one_sequence(xs, 2)}}, {net.outputs[0]}, outs, false);
  const std::vector<float> got = values_of(outs[0].data());
  std::vector<float> W, H, b;  // engine shapes (2, 12), (3, 12), (12)
  for (const auto& p : net.model->parameters()) {
    if (p.shape() == NDShape({2, 12})) W = values_of(p.value());
    if (p.shape() == NDShape({3, 12})) H = values_of(p.value());
    if (p.shape() == NDShape({12})) b = values_of(p.value());
  }
  ASSERT_EQ(W.size(), 24u);
  ASSERT_EQ(H.size(), 36u);
  ASSERT_EQ(b.size(), 12u);
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> h(3, 0.1), c(3, 0.1);  // PastValue's default initial activation, as in CNTK
  ASSERT_EQ(got.size(), 9u);
  for (size_t t = 0; t < 3; ++t) {
    std::vector<double> proj(12);
    for (size_t j = 0; j < 12; ++j) {
      proj[j] = b[j];
      for (size_t i = 0; i < 2; ++i) proj[j] += xs[t * 2 + i] * W[i * 12 + j];
      for (size_t k = 0; k < 3; ++k) proj[j] += h[k] * H[k * 12 + j];
    }
    for (size_t k = 0; k < 3; ++k) {
      c[k] = sigmoid(proj[6 + k]) * c[k] + sigmoid(proj[k]) * std::tanh(proj[3 + k]);
      h[k] = sigmoid(proj[9 + k]) * std::tanh(c[k]);
      EXPECT_NEAR(got[t * 3 + k], h[k], 1e-5) << "step " << t << " unit " << k;
    }
  }
}

// ConvolutionalLayer (centred zero padding) and MaxPoolingLayer against loops written here.
TEST(BrainScriptEvaluator, ConvolutionAndPoolingLayers) {
  Network net = build_network(R"([
    image = Input (4:4:1)   # width, height, channels
    conv = ConvolutionalLayer {2, (3:3), pad = true, activation = ReLU} (image)
    pooled = MaxPoolingLayer {(2:2), stride = (2:2)} (conv)
    outputNodes = (conv : pooled)
  ])");
  EXPECT_EQ(net.outputs[0].shape(), NDShape({2, 4, 4}));
  EXPECT_EQ(net.outputs[1].shape(), NDShape({2, 2, 2}));
  std::vector<float> x(16);
  for (size_t i = 0; i < 16; ++i) x[i] = float(std::sin(double(i) * 0.7) * 2);
  NDArrayView batch(DataType::Float, NDShape{1, 1, 4, 4});
  std::copy(x.begin(), x.end(), batch.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.nodes.at("image"), cntk::Value(batch)}}, net.outputs, outs, false);
  std::vector<float> W;
  for (const auto& p : net.model->parameters())
    if (p.shape() == NDShape({2, 1, 3, 3})) W = values_of(p.value());
  ASSERT_EQ(W.size(), 18u);
  const std::vector<float> conv = values_of(outs[0].data()), pooled = values_of(outs[1].data());
  std::vector<double> ref(32, 0.0);  // (2, 4, 4); the bias is 0
  for (int o = 0; o < 2; ++o)
    for (int r = 0; r < 4; ++r)
      for (int c = 0; c < 4; ++c) {
        double sum = 0;
        for (int i = 0; i < 3; ++i)
          for (int j = 0; j < 3; ++j) {
            const int rr = r + i - 1, cc = c + j - 1;
            if (rr >= 0 && rr < 4 && cc >= 0 && cc < 4) sum += x[rr * 4 + cc] * W[o * 9 + i * 3 + j];
          }
        ref[o * 16 + r * 4 + c] = std::max(sum, 0.0);
        EXPECT_NEAR(conv[o * 16 + r * 4 + c], ref[o * 16 + r * 4 + c], 1e-5);
      }
  for (int o = 0; o < 2; ++o)
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) {
        double m = -1e30;
        for (int i = 0; i < 2; ++i)
          for (int j = 0; j < 2; ++j) m = std::max(m, ref[o * 16 + (2 * r + i) * 4 + 2 * c + j]);
        EXPECT_NEAR(pooled[o * 4 + r * 2 + c], m, 1e-5);
      }
}

// Dropout nodes take the SGD block's rate: dropped in training passes, the identity otherwise.
TEST(BrainScriptEvaluator, DropoutTakesTheRateSetForTraining) {
  Network net = build_network(R"([
    x = Input (1000)
    d = Dropout (x)
    outputNodes = (d)
  ])");
  NDArrayView ones = NDArrayView::full(DataType::Float, NDShape{1, 1000}, 1.0);
  auto run = [&](bool training) {
    std::vector<cntk::Value> outs;
    forward(net.model, {{net.nodes.at("x"), cntk::Value(ones)}}, net.outputs, outs, training);
    return values_of(outs[0].data());
  };
  EXPECT_EQ(run(true), std::vector<float>(1000, 1.f));  // rate 0 until the train action sets one
  set_dropout_rate(net.model, 0.5);
  const std::vector<float> dropped = run(true);
  size_t zeros = 0;
  for (float v : dropped) {
    EXPECT_TRUE(v == 0.f || v == 2.f) << v;
    zeros += v == 0.f;
  }
  EXPECT_GT(zeros, 400u);
  EXPECT_LT(zeros, 600u);
  EXPECT_EQ(run(false), std::vector<float>(1000, 1.f));
  EXPECT_THROW(set_dropout_rate(net.model, 1.0), cntk::ValueError);
}

// BatchNormalizationLayer: a training pass normalizes each element by the minibatch's mean and
// (biased) variance; the running statistics start as CNTK's (mean 0, variance 0).
TEST(BrainScriptEvaluator, BatchNormalizationLayerNormalizesTheMinibatch) {
  Network net = build_network(R"([
    x = Input (3)
    y = BatchNormalizationLayer {} (x)
    outputNodes = (y)
  ])");
  const std::vector<float> xs = {1, 10, -2, 3, 20, -2, 5, 60, 4, 7, 30, 0};  // 4 samples of 3
  NDArrayView batch(DataType::Float, NDShape{4, 3});
  std::copy(xs.begin(), xs.end(), batch.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.nodes.at("x"), cntk::Value(batch)}}, net.outputs, outs, /*training=*/true);
  const std::vector<float> y = values_of(outs[0].data());
  ASSERT_EQ(y.size(), 12u);
  for (size_t k = 0; k < 3; ++k) {
    double mean = 0, var = 0;
    for (size_t i = 0; i < 4; ++i) mean += xs[i * 3 + k] / 4.0;
    for (size_t i = 0; i < 4; ++i) var += (xs[i * 3 + k] - mean) * (xs[i * 3 + k] - mean) / 4.0;
    for (size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(y[i * 3 + k], (xs[i * 3 + k] - mean) / std::sqrt(var + 1e-5), 1e-3) << "feature " << k;
  }
}
