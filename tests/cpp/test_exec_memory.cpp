#include <gtest/gtest.h>

#include "cntk/evaluation.h"
#include "cntk/function.h"

using namespace cntk;

// A repeated minibatch of the same layout reuses the plan and the allocator's
// free lists: after warm-up, forward + backward take nothing new from the system.
TEST(ExecMemory, RepeatedMinibatchAllocatesNothingNew) {
  auto x = Variable::input({8}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  NDArrayView w0(DataType::Float, {8, 4});
  w0.fill(0.1);
  auto w = Variable::parameter({8, 4}, DataType::Float, w0, nullptr, "w");
  auto h = Function::primitive("Tanh", {Function::primitive("Times", {x, w}, {})->output()}, {});
  auto loss = Function::composite(
      Function::primitive("ReduceElements", {h->output()}, {{"reductionOpName", DictValue("Sum")}}));
  NDArrayView data(DataType::Float, {16, 8});
  data.fill(0.5);
  NDArrayView ones(DataType::Float, {16, 1});
  ones.fill(1.0);
  auto step = [&] {
    std::vector<Value> outs, grads;
    auto st = forward(loss, {{x, Value(data)}}, {}, outs, true);
    backward(st, {{loss->output(), Value(ones)}}, {w}, grads);
  };
  for (int i = 0; i < 3; ++i) step();
  size_t plans = plans_compiled(), allocs = storage_system_allocations();
  for (int i = 0; i < 10; ++i) step();
  EXPECT_EQ(plans_compiled(), plans);
  EXPECT_EQ(storage_system_allocations(), allocs);
}
