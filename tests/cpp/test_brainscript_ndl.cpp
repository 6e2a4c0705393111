// NDL (src/brainscript/ndl.h): network descriptions in CNTK's Network Description Language,
// built through the BrainScript evaluator and run forward.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "brainscript/ndl.h"
#include "cntk/evaluation.h"

using namespace cntk;
using namespace cntk::brainscript;

namespace {

std::vector<float> values_of(const NDArrayView& v) {
  NDArrayView c = v.contiguous();
  return std::vector<float>(c.data<float>(), c.data<float>() + c.numel());
}

// Macros in CNTK's forms (a block after the header, `= [ ]`, one-line), names in other cases
// than their definitions, a dotted name into a macro instance, tags and role lists.
const char* kConfig = R"(
run = net
NDLNetworkBuilder = [ ]
net = [
  FF(X1, W1, B1)
  {
    T = Times(W1, X1)
    P = Plus(T, B1)
  }
  BFF(in, rows, cols) = [
    B = Parameter(rows, init = fixedValue, value = 0.5)
    W = Parameter(rows, cols, init = "fixedvalue", value = 2)
    FF = FF(in, w, b)
  ]
  Twice(z) = Scale(Const(2), z)
  x = Input(3, tag = feature)
  L1 = BFF(X, 2, 3)
  y = Sigmoid(L1.ff.T)
  d = Twice(L1)
  OutputNodes = (L1 : y)
  e = Minus(d, y, tag = output)
]
)";

}  // namespace

TEST(BrainScriptNdl, MacrosDottedNamesRolesAndValues) {
  auto config = ConfigRecord::parse(kConfig);
  Network net = build_ndl_network(*config);
  ASSERT_EQ(net.features.size(), 1u);
  ASSERT_EQ(net.outputs.size(), 3u);
  // A macro instance's nodes are named by their path, as CNTK named them.
  EXPECT_EQ(net.outputs[0].owner()->name(), "L1.FF.P");
  EXPECT_EQ(net.outputs[1].owner()->name(), "y");
  EXPECT_EQ(net.outputs[2].owner()->name(), "e");

  NDArrayView batch(DataType::Float, NDShape{2, 3});
  const float xs[2][3] = {{1, 2, 3}, {-1, 0.5f, 0.25f}};
  std::copy(&xs[0][0], &xs[0][0] + 6, batch.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.features[0], cntk::Value(batch)}}, net.outputs, outs, false);
  const std::vector<float> p = values_of(outs[0].data()), y = values_of(outs[1].data()), e = values_of(outs[2].data());
  ASSERT_EQ(p.size(), 4u);
  for (size_t i = 0; i < 2; ++i) {
    const double t = 2.0 * (xs[i][0] + xs[i][1] + xs[i][2]);  // W is 2 everywhere
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_NEAR(p[2 * i + k], t + 0.5, 1e-5);
      EXPECT_NEAR(y[2 * i + k], 1 / (1 + std::exp(-t)), 1e-6);
      EXPECT_NEAR(e[2 * i + k], 2 * (t + 0.5) - 1 / (1 + std::exp(-t)), 1e-4);
    }
  }
}

TEST(BrainScriptNdl, ErrorsNameTheNdlLine) {
  auto config = ConfigRecord::parse(
      "run = net\nNDLNetworkBuilder = [ ]\nnet = [\n  x = Input(2, tag = feature)\n"
      "  h = Sigmoid(q)\n  OutputNodes = (h)\n]\n");
  try {
    build_ndl_network(*config);
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.location.line, 4u);  // 0-based: the line of `h = Sigmoid(q)`
    EXPECT_NE(std::string(e.what()).find("undefined name 'q'"), std::string::npos) << e.what();
  }
}

// A section named by run= whose value is `default` (a key the config language treats as not
// given) is no section: an error, not a read of a value that is not there (found by fuzzing).
TEST(BrainScriptNdl, RunNamingADefaultValueIsAnError) {
  auto config = ConfigRecord::parse("run = n\nNDLNetworkBuilder = [ ]\nn = default\n");
  EXPECT_THROW(ndl_network_source(*config), ValueError);
}

// InputValue's dynamicAxis=name: inputs naming one axis share it, apart from the default one.
TEST(BrainScriptNdl, InputOnANamedDynamicAxis) {
  auto config = ConfigRecord::parse(
      "run = net\nNDLNetworkBuilder = [ ]\nnet = [\n  q = Input(3, dynamicAxis = queryAxis, tag = feature)\n"
      "  r = Input(3, dynamicAxis = queryAxis, tag = feature)\n  l = Input(3, tag = label)\n"
      "  s = Plus(q, r)\n  OutputNodes = (s, l)\n]\n");
  const Network net = build_ndl_network(*config);
  ASSERT_EQ(net.features.size(), 2u);
  const Axis q = net.features[0].dynamic_axes().at(1), r = net.features[1].dynamic_axes().at(1);
  EXPECT_EQ(q.name(), "queryAxis");
  EXPECT_EQ(q, r);
  EXPECT_NE(q, Axis::default_dynamic_axis());
}

// A recurrence through PastValue/Delay that refers to a node defined after it (NDL resolves
// names over the whole section): a running sum, and a sum with the input two steps back.
TEST(BrainScriptNdl, DelaysReferToLaterNodes) {
  auto config = ConfigRecord::parse(R"(
run = net
NDLNetworkBuilder = [ ]
net = [
  x = Input(1, tag = feature)
  h = PastValue(1, s, defaultHiddenActivation = 0)
  s = Plus(h, x, tag = output)
  d = Plus(Delay(1, x, delayTime = 2, defaultHiddenActivation = 0), x, tag = output)
]
)");
  Network net = build_ndl_network(*config);
  ASSERT_EQ(net.outputs.size(), 2u);
  NDArrayView v(DataType::Float, NDShape{4, 1});
  const float xs[4] = {1, 2, 3, 4};
  std::copy(xs, xs + 4, v.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.features[0], cntk::Value::from_sequences({v})}}, net.outputs, outs, false);
  EXPECT_EQ(values_of(outs[0].data()), (std::vector<float>{1, 3, 6, 10}));
  EXPECT_EQ(values_of(outs[1].data()), (std::vector<float>{1, 2, 4, 6}));
}

// NDL functions that CNTK's v1 nodes defined and that map onto other primitives here.
TEST(BrainScriptNdl, RowSliceRowStackClipCrossEntropy) {
  auto config = ConfigRecord::parse(R"(
run = net
NDLNetworkBuilder = [ ]
net = [
  x = Input(4, tag = feature)
  p = Input(2, tag = feature)
  top = RowSlice(1, 2, x)
  both = RowStack(top, Reciprocal(top))
  clipped = Clip(Const(0.5), Const(2.5), x)
  ce = CrossEntropy(p, Softmax(top))
  OutputNodes = (both : clipped : ce)
]
)");
  Network net = build_ndl_network(*config);
  const float xs[4] = {0.25f, 1.f, 2.f, 4.f}, ps[2] = {0.25f, 0.75f};
  NDArrayView xv(DataType::Float, NDShape{1, 4}), pv(DataType::Float, NDShape{1, 2});
  std::copy(xs, xs + 4, xv.data<float>());
  std::copy(ps, ps + 2, pv.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.features[0], cntk::Value(xv)}, {net.features[1], cntk::Value(pv)}}, net.outputs, outs,
          false);
  EXPECT_EQ(values_of(outs[0].data()), (std::vector<float>{1, 2, 1, 0.5f}));
  EXPECT_EQ(values_of(outs[1].data()), (std::vector<float>{0.5f, 1, 2, 2.5f}));
  const double z = std::log(std::exp(1.0) + std::exp(2.0));  // log-sum-exp of the slice
  EXPECT_NEAR(values_of(outs[2].data()).at(0), -(0.25 * (1 - z) + 0.75 * (2 - z)), 1e-5);
}

// Legacy pooling over an HWC image (ImageInput's default layout), without padding.
TEST(BrainScriptNdl, LegacyPoolingOfImages) {
  auto config = ConfigRecord::parse(R"(
run = net
NDLNetworkBuilder = [ ]
net = [
  pic = ImageInput(4, 4, 1, tag = feature)
  mp = MaxPooling(pic, 2, 2, 2, 2)
  ap = AveragePooling(pic, 3, 2, 1, 2, imageLayout = "HWC")
  OutputNodes = (mp : ap)
]
)");
  Network net = build_ndl_network(*config);
  float img[16];  // rows of 4 (height, then width)
  for (int i = 0; i < 16; ++i) img[i] = float((i * 7) % 11);
  NDArrayView v(DataType::Float, NDShape{1, 4, 4, 1});
  std::copy(img, img + 16, v.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.features[0], cntk::Value(v)}}, net.outputs, outs, false);
  std::vector<float> mp, ap;
  for (int r = 0; r < 4; r += 2)
    for (int c = 0; c < 4; c += 2)
      mp.push_back(std::max({img[r * 4 + c], img[r * 4 + c + 1], img[r * 4 + 4 + c], img[r * 4 + 5 + c]}));
  for (int r = 0; r < 4; r += 2)
    for (int c = 0; c + 3 <= 4; ++c) {
      float sum = 0;
      for (int dr = 0; dr < 2; ++dr)
        for (int dc = 0; dc < 3; ++dc) sum += img[(r + dr) * 4 + c + dc];
      ap.push_back(sum / 6);
    }
  EXPECT_EQ(values_of(outs[0].data()), mp);
  const std::vector<float> got = values_of(outs[1].data());
  ASSERT_EQ(got.size(), ap.size());
  for (size_t i = 0; i < ap.size(); ++i) EXPECT_NEAR(got[i], ap[i], 1e-5);
}

// Parameter(rows, cols, init = fromFile, initFromFilePath = ...) reads CNTK's text matrix (one
// line per row), as the ResNet NDLs load their fixed projections.
TEST(BrainScriptNdl, ParameterFromFile) {
  const std::string path = (std::filesystem::temp_directory_path() / "ndl_parameter_from_file.txt").string();
  std::ofstream(path) << "1 0 2\n0 -1 3\n";
  auto config = ConfigRecord::parse(
      "run = net\nNDLNetworkBuilder = [ ]\nnet = [\n  x = Input(3, tag = feature)\n"
      "  W = Parameter(2, 3, init = fromFile, initFromFilePath = \"" +
      path + "\", learningRateMultiplier = 0)\n  y = Times(W, x, tag = output)\n]\n");
  Network net = build_ndl_network(*config);
  EXPECT_TRUE(net.model->parameters().empty());  // learningRateMultiplier 0: a constant
  NDArrayView batch(DataType::Float, NDShape{1, 3});
  const float xs[3] = {1, 10, 100};
  std::copy(xs, xs + 3, batch.data<float>());
  std::vector<cntk::Value> outs;
  forward(net.model, {{net.features[0], cntk::Value(batch)}}, net.outputs, outs, false);
  const std::vector<float> y = values_of(outs[0].data());
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 201, 1e-4);
  EXPECT_NEAR(y[1], 290, 1e-4);
}
