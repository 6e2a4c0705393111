// Backward's early reports (GradientReadyFn): each gradient handed out once, as soon as
// no later step adds to it, and equal to what backward returns.
#include <gtest/gtest.h>

#include <vector>

#include "cntk/evaluation.h"
#include "cntk/function.h"

using namespace cntk;

namespace {

Variable param(const char* name, NDShape shape, double v) {
  NDArrayView init(DataType::Double, shape);
  init.fill(v);
  return Variable::parameter(shape, DataType::Double, init, nullptr, name);
}

}  // namespace

// loss = sum(tanh(tanh(x W1) W2) + x W1): W1 is read twice, W2 once; b is not reached.
TEST(ExecBackward, ReportsEachGradientOnceWhenFinal) {
  auto x = Variable::input({3}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
  Variable w1 = param("w1", {3, 4}, 0.2), w2 = param("w2", {4, 4}, -0.1), unused = param("b", {4}, 1.0);
  auto h1 = Function::primitive("Times", {x, w1}, {})->output();
  auto h2 = Function::primitive("Times", {Function::primitive("Tanh", {h1}, {})->output(), w2}, {})->output();
  auto sum = Function::primitive("Plus", {Function::primitive("Tanh", {h2}, {})->output(), h1}, {})->output();
  auto loss =
      Function::composite(Function::primitive("ReduceElements", {sum}, {{"reductionOpName", DictValue("Sum")}}));
  NDArrayView data(DataType::Double, {5, 3});
  for (int64_t i = 0; i < data.numel(); ++i) data.data<double>()[i] = 0.1 * double(i % 7) - 0.3;
  NDArrayView ones(DataType::Double, {5, 1});
  ones.fill(1.0);

  std::vector<Value> outs, grads, early_grads;
  auto st = forward(loss, {{x, Value(data)}}, {}, outs, true);
  std::vector<size_t> order;
  std::vector<NDArrayView> reported(3);
  backward(st, {{loss->output(), Value(ones)}}, {w1, w2, unused}, grads, [&](size_t i, const NDArrayView& g) {
    order.push_back(i);
    reported.at(i) = g.copy();
  });
  // W2's gradient is final before W1's (W1 is also read by the first Times); the
  // unreached parameter comes last, as zeros.
  ASSERT_EQ(order, (std::vector<size_t>{1, 0, 2}));
  ASSERT_EQ(grads.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    NDArrayView want = grads[i].data().contiguous();
    ASSERT_EQ(reported[i].shape(), want.shape());
    for (int64_t k = 0; k < want.numel(); ++k) EXPECT_EQ(reported[i].data<double>()[k], want.data<double>()[k]);
  }
  for (int64_t k = 0; k < reported[2].numel(); ++k) EXPECT_EQ(reported[2].data<double>()[k], 0.0);

  // The same pass without reports returns the same gradients.
  std::vector<Value> plain;
  st = forward(loss, {{x, Value(data)}}, {}, outs, true);
  backward(st, {{loss->output(), Value(ones)}}, {w1, w2, unused}, plain);
  for (size_t i = 0; i < 3; ++i) {
    NDArrayView a = plain[i].data().contiguous(), b = grads[i].data().contiguous();
    for (int64_t k = 0; k < a.numel(); ++k) EXPECT_EQ(a.data<double>()[k], b.data<double>()[k]);
  }
}
