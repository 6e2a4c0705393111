// BatchNormalization through the C++ API: training forward updates the running
// statistics CNTK's way, inference uses them and leaves them alone.
#include <gtest/gtest.h>

#include <cmath>

#include "cntk/evaluation.h"
#include "cntk/function.h"

using namespace cntk;

namespace {

NDArrayView vec(std::vector<double> v, const NDShape& s) {
  NDArrayView a(DataType::Double, s);
  for (size_t i = 0; i < v.size(); ++i) a.data<double>()[i] = v[i];
  return a;
}

double at(const Variable& v, int64_t i) { return v.value().cast(DataType::Double).contiguous().data<double>()[i]; }

}  // namespace

TEST(NormOps, BatchNormalizationRunningStatistics) {
  auto x = Variable::input({2}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
  auto scale = Variable::parameter({2}, DataType::Double, vec({1, 2}, {2}), nullptr, "scale");
  auto bias = Variable::parameter({2}, DataType::Double, vec({0, 1}, {2}), nullptr, "bias");
  auto mean = Variable::constant(vec({0, 0}, {2}), "mean");
  auto var = Variable::constant(vec({0, 0}, {2}), "var");
  auto count = Variable::constant(vec({0}, NDShape{}), "count");
  Dictionary attrs{{"spatial", DictValue(false)},
                   {"normalizationTimeConstant", DictValue(4.0)},
                   {"blendTimeConstant", DictValue(0.0)},
                   {"epsilon", DictValue(1e-5)}};
  auto f =
      Function::composite(Function::primitive("BatchNormalization", {x, scale, bias, mean, var, count}, attrs, "bn"));

  // First minibatch: the running statistics become the batch's (unbiased variance).
  std::vector<Value> out;
  forward(f, {{x, Value(vec({1, 10, 3, 20, 5, 30}, {3, 2}))}}, {}, out, /*keep_for_backward=*/true);
  EXPECT_DOUBLE_EQ(at(mean, 0), 3.0);
  EXPECT_DOUBLE_EQ(at(mean, 1), 20.0);
  EXPECT_DOUBLE_EQ(at(var, 0), 4.0);
  EXPECT_DOUBLE_EQ(at(var, 1), 100.0);
  EXPECT_DOUBLE_EQ(at(count, 0), 3.0);
  NDArrayView y = out[0].data().cast(DataType::Double).contiguous();
  EXPECT_NEAR(y.data<double>()[0], (1 - 3) / std::sqrt(8.0 / 3 + 1e-5), 1e-12);

  // Second minibatch of 2: factor 1 - exp(-2 / 4) on the new statistics.
  forward(f, {{x, Value(vec({7, 0, 9, 0}, {2, 2}))}}, {}, out, true);
  const double k = -std::expm1(-0.5);
  EXPECT_NEAR(at(mean, 0), k * 8 + (1 - k) * 3, 1e-12);
  EXPECT_NEAR(at(var, 0), k * 2 + (1 - k) * 4, 1e-12);
  EXPECT_NEAR(at(var, 1), (1 - k) * 100, 1e-12);
  EXPECT_DOUBLE_EQ(at(count, 0), 5.0);

  // Inference: the running statistics normalize, nothing changes.
  const double m0 = at(mean, 0), v0 = at(var, 0);
  forward(f, {{x, Value(vec({2, 4}, {1, 2}))}}, {}, out, false);
  y = out[0].data().cast(DataType::Double).contiguous();
  EXPECT_NEAR(y.data<double>()[0], (2 - m0) / std::sqrt(v0 + 1e-5), 1e-12);
  EXPECT_DOUBLE_EQ(at(mean, 0), m0);
  EXPECT_DOUBLE_EQ(at(count, 0), 5.0);
}

TEST(NormOps, BatchNormalizationShapeErrors) {
  auto x = Variable::input({3, 4}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  auto p = Variable::parameter({3}, DataType::Float, NDArrayView::zeros(DataType::Float, {3}), nullptr, "p");
  auto c = Variable::constant(NDArrayView::zeros(DataType::Float, {3}), "c");
  auto n = Variable::constant(NDArrayView::zeros(DataType::Float, NDShape{}), "n");
  // One scale per channel is right for spatial, wrong for per-element normalization.
  EXPECT_NO_THROW(Function::primitive("BatchNormalization", {x, p, p, c, c, n}, {{"spatial", DictValue(true)}}));
  EXPECT_THROW(Function::primitive("BatchNormalization", {x, p, p, c, c, n}, {{"spatial", DictValue(false)}}),
               ShapeError);
  EXPECT_THROW(Function::primitive("BatchNormalization", {x, p, p, c, c}, {}), ShapeError);
}
