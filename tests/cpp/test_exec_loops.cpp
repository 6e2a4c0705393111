#include <gtest/gtest.h>

#include <cmath>

#include "cntk/evaluation.h"
#include "cntk/function.h"
#include "core/output_hint.h"

using namespace cntk;

namespace {

// h[t] = tanh(w * h[t-1] + x[t]) over sequences of lengths 3 and 1, built in C++.
struct TanhLoop {
  Variable x, w;
  FunctionPtr delay, h;

  // `scaled`: w * h[t-1]; otherwise h[t] = tanh(h[t-1] + x[t]).
  explicit TanhLoop(const char* op = "PastValue", bool scaled_state = true) {
    x = Variable::input({2}, DataType::Double, false, false, {Axis::default_batch_axis(), Axis::default_dynamic_axis()},
                        "x");
    NDArrayView w0(DataType::Double, {2});
    w0.data<double>()[0] = 0.5;
    w0.data<double>()[1] = -0.8;
    w = Variable::parameter({2}, DataType::Double, w0, nullptr, "w");
    auto ph = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "h_fwd");
    auto init = Variable::constant(NDArrayView::full(DataType::Double, {2}, 0.25), "h0");
    delay = Function::primitive(op, {ph, init}, {{"offset", DictValue(1)}});
    auto scaled = Function::primitive("ElementTimes", {delay->output(), w}, {});
    auto sum = Function::primitive("Plus", {(scaled_state ? scaled : delay)->output(), x}, {});
    auto tanh = Function::primitive("Tanh", {sum->output()}, {});
    h = Function::composite(tanh);
    h->replace_placeholders({{ph.get(), tanh->output()}});
  }
};

Value batch_of_two(const std::vector<double>& xs) {
  NDArrayView d(DataType::Double, {2, 3, 2});  // [batch, time, 2], padded
  std::copy(xs.begin(), xs.end(), d.data<double>());
  return Value(d, std::make_shared<NDMask>(NDMask::from_lengths({3, 1}, 3)));
}

}  // namespace

TEST(ExecLoops, ForwardMatchesAStepByStepReference) {
  TanhLoop loop;
  std::vector<double> xs = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 1.0, 2.0, 9, 9, 9, 9};
  std::vector<Value> outs;
  forward(loop.h, {{loop.x, batch_of_two(xs)}}, {}, outs, false);
  ASSERT_EQ(outs.size(), 1u);
  const double* y = outs[0].data().contiguous().data<double>();
  const double w[2] = {0.5, -0.8};
  int lengths[2] = {3, 1};
  for (int b = 0; b < 2; ++b) {
    double h[2] = {0.25, 0.25};
    for (int t = 0; t < lengths[b]; ++t)
      for (int k = 0; k < 2; ++k) {
        h[k] = std::tanh(w[k] * h[k] + xs[(b * 3 + t) * 2 + k]);
        EXPECT_NEAR(y[(b * 3 + t) * 2 + k], h[k], 1e-12) << "b=" << b << " t=" << t;
      }
  }
}

TEST(ExecLoops, GradientMatchesFiniteDifferences) {
  TanhLoop loop;
  std::vector<double> xs = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 1.0, 2.0, 0, 0, 0, 0};
  auto loss_of = [&](const NDArrayView& wv) {
    loop.w.set_value(wv);
    std::vector<Value> outs;
    forward(loop.h, {{loop.x, batch_of_two(xs)}}, {}, outs, false);
    auto d = outs[0].data().contiguous();
    const double* y = d.data<double>();
    double s = 0;
    for (int i = 0; i < 12; ++i) s += (i < 6 || i == 6 || i == 7) ? y[i] * (1 + 0.1 * i) : 0;
    return s;
  };
  NDArrayView w0 = loop.w.value().copy();
  std::vector<Value> outs, grads;
  auto st = forward(loop.h, {{loop.x, batch_of_two(xs)}}, {}, outs, true);
  NDArrayView root(DataType::Double, {2, 3, 2});
  for (int i = 0; i < 12; ++i) root.data<double>()[i] = 1 + 0.1 * i;
  backward(st, {{loop.h->output(), Value(root, std::make_shared<NDMask>(NDMask::from_lengths({3, 1}, 3)))}}, {loop.w},
           grads);
  auto g = grads[0].data().contiguous();
  for (int k = 0; k < 2; ++k) {
    NDArrayView plus = w0.copy(), minus = w0.copy();
    plus.data<double>()[k] += 1e-6;
    minus.data<double>()[k] -= 1e-6;
    double numeric = (loss_of(plus) - loss_of(minus)) / 2e-6;
    EXPECT_NEAR(g.data<double>()[k], numeric, 1e-6);
  }
  loop.w.set_value(w0);
}

TEST(ExecLoops, RepeatedMinibatchAllocatesNothingNew) {
  TanhLoop loop;
  std::vector<double> xs(12, 0.3);
  NDArrayView root(DataType::Double, {2, 3, 2});
  root.fill(1.0);
  auto step = [&] {
    std::vector<Value> outs, grads;
    auto st = forward(loop.h, {{loop.x, batch_of_two(xs)}}, {}, outs, true);
    backward(st, {{loop.h->output(), Value(root)}}, {loop.w}, grads);
  };
  for (int i = 0; i < 3; ++i) step();
  size_t plans = plans_compiled(), allocs = storage_system_allocations();
  for (int i = 0; i < 10; ++i) step();
  EXPECT_EQ(plans_compiled(), plans);
  EXPECT_EQ(storage_system_allocations(), allocs);
}

TEST(ExecLoops, FutureValueLoopRunsBackwardInTime) {
  TanhLoop loop("FutureValue");
  std::vector<double> xs = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 1.0, 2.0, 9, 9, 9, 9};
  std::vector<Value> outs;
  forward(loop.h, {{loop.x, batch_of_two(xs)}}, {}, outs, false);
  const double* y = outs[0].data().contiguous().data<double>();
  double h0 = 0.25, h1 = 0.25;
  for (int t = 2; t >= 0; --t) {
    h0 = std::tanh(0.5 * h0 + xs[t * 2]);
    h1 = std::tanh(-0.8 * h1 + xs[t * 2 + 1]);
    EXPECT_NEAR(y[t * 2], h0, 1e-12);
    EXPECT_NEAR(y[t * 2 + 1], h1, 1e-12);
  }
  EXPECT_NEAR(y[6], std::tanh(0.5 * 0.25 + 1.0), 1e-12);  // the length-1 sequence starts from the initial state
}

namespace {

// Binds x_ph of `model`, a loop h[t] = h[t-1] * x[t-1] (h starting at 1, x at 2), to a
// sequence input and checks its output against a step-by-step reference.
void expect_state_times_delayed_input(const FunctionPtr& model, const Variable& x_ph) {
  auto x = Variable::input({2}, DataType::Double, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x_in");
  ASSERT_NO_THROW(model->replace_placeholders({{x_ph.get(), x}}));
  EXPECT_EQ(model->output().shape(), NDShape({2}));
  EXPECT_EQ(model->output().dynamic_axes().size(), 2u);
  std::vector<double> xs = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 1.0, 2.0, 9, 9, 9, 9};
  std::vector<Value> outs;
  forward(model, {{x, batch_of_two(xs)}}, {}, outs, false);
  const double* y = outs[0].data().contiguous().data<double>();
  int lengths[2] = {3, 1};
  for (int b = 0; b < 2; ++b) {
    double state[2] = {1.0, 1.0};
    for (int t = 0; t < lengths[b]; ++t)
      for (int k = 0; k < 2; ++k) {
        state[k] *= t == 0 ? 2.0 : xs[(b * 3 + t - 1) * 2 + k];
        EXPECT_NEAR(y[(b * 3 + t) * 2 + k], state[k], 1e-12) << "b=" << b << " t=" << t;
      }
  }
}

Variable unknown_placeholder(const char* name) {
  return Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, name);
}

FunctionPtr delay_of(const Variable& operand, double init) {
  auto c = Variable::constant(NDArrayView::full(DataType::Double, {}, init), "");
  return Function::primitive("PastValue", {operand, c}, {{"offset", DictValue(1)}});
}

}  // namespace

// A step whose arguments pass through one block (as a Python step function's
// argument-ordering 'Tuple' does) and that delays its input x: the delay of x is
// no part of the loop, and the graph builds while x is still a placeholder.
TEST(ExecLoops, DelayOfAnInputRoutedThroughABlockWithTheStateIsNotALoop) {
  auto x_ph = unknown_placeholder("x"), h_fwd = unknown_placeholder("h_fwd");
  auto h_prev = delay_of(h_fwd, 1.0);
  auto a = unknown_placeholder("a"), b = unknown_placeholder("b");
  auto tuple = Function::block(Function::combine({a, b}), {{a, h_prev->output()}, {b, x_ph}}, "Tuple", "");
  auto h = Function::primitive("ElementTimes", {tuple->outputs()[0], delay_of(tuple->outputs()[1], 2.0)->output()}, {});
  auto model = Function::composite(h);
  ASSERT_NO_THROW(model->replace_placeholders({{h_fwd.get(), h->output()}}));
  expect_state_times_delayed_input(model, x_ph);
}

// Two blocks over one inside, with their arguments swapped: each block's outputs
// lead to its own arguments (the loop goes through the second block only).
TEST(ExecLoops, BlocksSharingAnInsideLeadToTheirOwnArguments) {
  auto x_ph = unknown_placeholder("x"), h_fwd = unknown_placeholder("h_fwd");
  auto h_prev = delay_of(h_fwd, 1.0);
  auto a = unknown_placeholder("a"), b = unknown_placeholder("b");
  auto inside = Function::combine({a, b});
  auto first = Function::block(inside, {{a, h_prev->output()}, {b, x_ph}}, "First", "");
  auto second = Function::block(inside, {{a, x_ph}, {b, h_prev->output()}}, "Second", "");
  auto x_delayed = delay_of(first->outputs()[1], 2.0);
  auto h = Function::primitive("ElementTimes", {second->outputs()[1], x_delayed->output()}, {});
  auto model = Function::composite(h);
  ASSERT_NO_THROW(model->replace_placeholders({{h_fwd.get(), h->output()}}));
  expect_state_times_delayed_input(model, x_ph);
}

// Graphs with loops are freed with their last handle: the edge that closes a loop
// does not own its producer (see LoopAnchor in cntk/function.h).
TEST(ExecLoops, GraphWithALoopIsFreedWithItsLastHandle) {
  const size_t before = live_functions();
  {
    TanhLoop loop;
    std::vector<Value> outs, grads;
    auto st = forward(loop.h, {{loop.x, batch_of_two(std::vector<double>(12, 0.1))}}, {}, outs, true);
    NDArrayView root = NDArrayView::full(DataType::Double, {2, 3, 2}, 1.0);
    backward(st, {{loop.h->output(), Value(root)}}, {loop.w}, grads);
    FunctionPtr copy = loop.h->clone(CloneMethod::Clone, {});
    std::vector<Value> outs2;
    forward(copy, {{copy->arguments()[0], batch_of_two(std::vector<double>(12, 0.1))}}, {}, outs2, false);
    EXPECT_GT(live_functions(), before);
  }
  EXPECT_EQ(live_functions(), before);
}

// h[t] = tanh(x[t] + c[t-1]) and c[t] = sigmoid(x[t] + h[t-1]): one loop through two
// delays. Its step is built with c first, and then only h is kept: c's function is
// reached from h only through the edge that closes the loop, and must stay alive.
TEST(ExecLoops, ALoopOutputReachedOnlyThroughTheLoopStaysAliveWhileTheLoopIsUsed) {
  const size_t before = live_functions();
  auto x = Variable::input({1}, DataType::Double, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x");
  {
    FunctionPtr only_h;
    {
      auto ph_h = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "h_prev");
      auto ph_c = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "c_prev");
      auto init = Variable::constant(NDArrayView::full(DataType::Double, {1}, 0.25), "init");
      Dictionary a;
      a["offset"] = int64_t(1);
      auto dh = Function::primitive("PastValue", {ph_h, init}, a);
      auto dc = Function::primitive("PastValue", {ph_c, init}, a);
      auto c = Function::primitive("StableSigmoid", {Function::primitive("Plus", {x, dh->output()}, {})->output()}, {});
      auto h = Function::primitive("Tanh", {Function::primitive("Plus", {x, dc->output()}, {})->output()}, {});
      auto both = Function::combine({c->output(), h->output()});
      both->replace_placeholders({{ph_h.get(), h->output()}, {ph_c.get(), c->output()}});
      only_h = Function::combine({both->outputs()[1]});
    }
    NDArrayView d(DataType::Double, {1, 4, 1});
    const double xs[4] = {0.3, -0.7, 1.1, 0.2};
    std::copy(xs, xs + 4, d.data<double>());
    std::vector<Value> outs;
    forward(only_h, {{x, Value(d)}}, {}, outs, false);
    const double* y = outs[0].data().contiguous().data<double>();
    double hp = 0.25, cp = 0.25;
    for (int t = 0; t < 4; ++t) {
      double hn = std::tanh(xs[t] + cp), cn = 1 / (1 + std::exp(-(xs[t] + hp)));
      hp = hn;
      cp = cn;
      EXPECT_NEAR(y[t], hp, 1e-12) << "t=" << t;
    }
  }
  EXPECT_EQ(live_functions(), before);
}

// Two loops in a row closed by one replace_placeholders (as BrainScript closes every delay of
// a description at once): h1[t] = tanh(x[t] + h1[t-1]), h2[t] = tanh(2 h1[t] + h2[t-1]). The
// function between them (2 h1) reads the first loop and is reached from the second: with one
// anchor for both loops it would own that anchor through itself, and the graph was never freed.
TEST(ExecLoops, StackedLoopsClosedTogetherAreFreedWithTheirLastHandle) {
  const size_t before = live_functions();
  auto x = Variable::input({1}, DataType::Double, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x");
  {
    FunctionPtr model;
    {
      auto ph1 = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "h1_prev");
      auto ph2 = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "h2_prev");
      auto init = Variable::constant(NDArrayView::full(DataType::Double, {1}, 0.25), "init");
      auto two = Variable::constant(NDArrayView::full(DataType::Double, {1}, 2.0), "two");
      Dictionary a;
      a["offset"] = int64_t(1);
      auto d1 = Function::primitive("PastValue", {ph1, init}, a);
      auto h1 = Function::primitive("Tanh", {Function::primitive("Plus", {x, d1->output()}, {})->output()}, {});
      auto between = Function::primitive("ElementTimes", {h1->output(), two}, {});
      auto d2 = Function::primitive("PastValue", {ph2, init}, a);
      auto h2 = Function::primitive("Tanh",
                                    {Function::primitive("Plus", {between->output(), d2->output()}, {})->output()}, {});
      model = Function::combine({h2->output()});
      model->replace_placeholders({{ph1.get(), h1->output()}, {ph2.get(), h2->output()}});
    }
    NDArrayView d(DataType::Double, {1, 3, 1});
    const double xs[3] = {0.3, -0.7, 1.1};
    std::copy(xs, xs + 3, d.data<double>());
    std::vector<Value> outs;
    forward(model, {{x, Value(d)}}, {}, outs, false);
    const double* y = outs[0].data().contiguous().data<double>();
    double p1 = 0.25, p2 = 0.25;
    for (int t = 0; t < 3; ++t) {
      p1 = std::tanh(xs[t] + p1);
      p2 = std::tanh(2 * p1 + p2);
      EXPECT_NEAR(y[t], p2, 1e-12) << "t=" << t;
    }
  }
  EXPECT_EQ(live_functions(), before);
}

// Loop steps write their outputs straight into the loop's [T, B, ...] buffers and
// their gradients into buffers kept over the time steps: a pass asks the allocator
// for as many blocks whatever the sequence length.
TEST(ExecLoops, StepsAllocateNothingPerTimeStep) {
  auto requests_for = [](TanhLoop& loop, int64_t T, bool with_backward) {
    NDArrayView d = NDArrayView::full(DataType::Double, {2, T, 2}, 0.1);
    NDArrayView root = NDArrayView::full(DataType::Double, {2, T, 2}, 1.0);
    auto pass = [&] {
      std::vector<Value> outs, grads;
      auto st = forward(loop.h, {{loop.x, Value(d)}}, {}, outs, with_backward);
      if (with_backward) backward(st, {{loop.h->output(), Value(root)}}, {loop.x}, grads);
    };
    pass();  // plans and warms up
    size_t before = detail::storage_requests();
    pass();
    return detail::storage_requests() - before;
  };
  TanhLoop plain("PastValue", false);
  EXPECT_EQ(requests_for(plain, 3, false), requests_for(plain, 40, false));
  EXPECT_EQ(requests_for(plain, 3, true), requests_for(plain, 40, true));
  // With a parameter in the loop, forward too (backward still makes a temporary per
  // step there: the product before the parameter gradient's reduction over the batch).
  TanhLoop scaled;
  EXPECT_EQ(requests_for(scaled, 3, false), requests_for(scaled, 40, false));
}

// A loop state that starts from a scalar initial state takes its shape from the step's
// output: h[t] = W h[t-1] + b + x[t] with W's input size still open, closed while x is
// a placeholder and bound after; W then takes the state's size.
TEST(ExecLoops, ScalarInitialStateTakesItsShapeFromTheStep) {
  auto x_ph = unknown_placeholder("x"), h_fwd = unknown_placeholder("h_fwd");
  auto h_prev = delay_of(h_fwd, 0.5);
  auto init = std::make_shared<Dictionary>();
  (*init)["type"] = DictValue(std::string("uniform"));
  (*init)["scale"] = DictValue(0.5);
  (*init)["randomSeed"] = DictValue(int64_t(3));
  auto W = Variable::parameter({NDShape::kInferredDimension, 3}, DataType::Double, NDArrayView(), init, "W");
  auto b = Variable::parameter({3}, DataType::Double, NDArrayView::full(DataType::Double, {3}, 0.1), nullptr, "b");
  auto times = Function::primitive("Times", {h_prev->output(), W}, {});
  auto plus_b = Function::primitive("Plus", {times->output(), b}, {});
  auto h = Function::primitive("Plus", {plus_b->output(), x_ph}, {});
  auto model = Function::composite(h);
  ASSERT_NO_THROW(model->replace_placeholders({{h_fwd.get(), h->output()}}));
  auto x = Variable::input({3}, DataType::Double, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x");
  ASSERT_NO_THROW(model->replace_placeholders({{x_ph.get(), x}}));
  EXPECT_EQ(h_prev->output().shape(), NDShape({3}));
  EXPECT_EQ(W.shape(), NDShape({3, 3}));
  EXPECT_EQ(model->output().shape(), NDShape({3}));
  // The step by hand: one sequence of 2 steps.
  NDArrayView d(DataType::Double, {1, 2, 3});
  for (int i = 0; i < 6; ++i) d.data<double>()[i] = 0.1 * i;
  std::vector<Value> outs;
  forward(model, {{x, Value(d, std::make_shared<NDMask>(NDMask::from_lengths({2}, 2)))}}, {}, outs, false);
  NDArrayView y = outs[0].data().contiguous();
  NDArrayView w = W.value().contiguous();
  double state[3] = {0.5, 0.5, 0.5};
  for (int t = 0; t < 2; ++t) {
    double next[3];
    for (int n = 0; n < 3; ++n) {
      next[n] = 0.1 + d.data<double>()[t * 3 + n];
      for (int k = 0; k < 3; ++k) next[n] += state[k] * w.data<double>()[k * 3 + n];
    }
    for (int n = 0; n < 3; ++n) {
      state[n] = next[n];
      EXPECT_NEAR(y.data<double>()[t * 3 + n], state[n], 1e-12) << "t=" << t << " n=" << n;
    }
  }
}

// A state that nothing in the step gives a shape is a clear error naming the fix.
TEST(ExecLoops, ScalarInitialStateWithNoShapeFromTheStepIsAClearError) {
  auto h_fwd = unknown_placeholder("h_fwd");
  auto h_prev = delay_of(h_fwd, 0.5);
  auto x = Variable::input({}, DataType::Double, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x");
  auto init = std::make_shared<Dictionary>();
  (*init)["type"] = DictValue(std::string("uniform"));
  auto W = Variable::parameter({NDShape::kInferredDimension, 3}, DataType::Double, NDArrayView(), init, "W");
  auto times = Function::primitive("Times", {h_prev->output(), W}, {});
  auto h = Function::primitive("Plus", {times->output(), x}, {});
  auto model = Function::composite(h);
  try {
    model->replace_placeholders({{h_fwd.get(), h->output()}});
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("initial_state of the state's shape"), std::string::npos) << e.what();
  }
}
