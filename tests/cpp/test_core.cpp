#include <gtest/gtest.h>

#include "cntk/evaluation.h"
#include "cntk/function.h"

using namespace cntk;

namespace {

NDArrayView arange(const NDShape& s) {
  NDArrayView v(DataType::Float, s);
  for (int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = float(i);
  return v;
}

}  // namespace

TEST(Shape, StrAndSize) {
  NDShape s{2, 3};
  EXPECT_EQ(s.str(), "(2, 3)");
  EXPECT_EQ(s.total_size(), 6);
  EXPECT_THROW(NDShape({2, NDShape::kInferredDimension}).total_size(), ShapeError);
}

TEST(Tensor, SliceAndCopy) {
  auto a = arange({3, 4});
  auto s = a.slice(1, 1, 3).contiguous();
  EXPECT_EQ(s.shape(), NDShape({3, 2}));
  EXPECT_EQ(s.data<float>()[0], 1.f);
  EXPECT_EQ(s.data<float>()[3], 6.f);
}

TEST(Graph, PlusTimesForwardBackward) {
  auto x = Variable::input({3}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  auto w = Variable::parameter({3, 2}, DataType::Float, arange({3, 2}), nullptr, "w");
  auto t = Function::primitive("Times", {x, w}, {}, "t");
  auto f = Function::composite(t);
  EXPECT_EQ(f->output().shape(), NDShape({2}));
  std::vector<Value> outs;
  auto state = forward(f, {{x, Value(arange({2, 3}))}}, {}, outs, true);
  ASSERT_EQ(outs.size(), 1u);
  const float* o = outs[0].data().data<float>();
  // [0 1 2] @ [[0 1] [2 3] [4 5]] = [10 13]
  EXPECT_FLOAT_EQ(o[0], 10.f);
  EXPECT_FLOAT_EQ(o[1], 13.f);
  std::vector<Value> grads;
  backward(state, {{f->output(), Value(NDArrayView::full(DataType::Float, {2, 2}, 1.0))}}, {w}, grads);
  // dW = x^T @ 1: column sums of x rows [0 1 2] + [3 4 5]
  const float* g = grads[0].data().data<float>();
  EXPECT_FLOAT_EQ(g[0], 3.f);
  EXPECT_FLOAT_EQ(g[5], 7.f);
}

TEST(Graph, ShapeErrorsNameTheOp) {
  auto a = Variable::input({3}, DataType::Float, false, false, {}, "a");
  auto b = Variable::input({4}, DataType::Float, false, false, {}, "b");
  try {
    Function::primitive("Plus", {a, b}, {});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("Plus"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("(3,)"), std::string::npos);
  }
}

TEST(Exec, PlanIsCachedPerLayout) {
  auto x = Variable::input({4}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  auto f = Function::composite(Function::primitive("Tanh", {x}, {}));
  std::vector<Value> outs;
  forward(f, {{x, Value(arange({2, 4}))}}, {}, outs, false);
  size_t before = plans_compiled();
  forward(f, {{x, Value(arange({2, 4}))}}, {}, outs, false);
  EXPECT_EQ(plans_compiled(), before);
}
