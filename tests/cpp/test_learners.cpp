// Learners, schedules and the Trainer, checked against the formulas of CNTK's
// Learner.cpp / CPUMatrix written out by hand in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "cntk/learner.h"
#include "cntk/trainer.h"

using namespace cntk;

namespace {

Variable param(std::vector<double> values, DataType t = DataType::Double) {
  NDArrayView v(DataType::Double, NDShape{int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i) v.data<double>()[i] = values[i];
  if (t != DataType::Double) v = v.cast(t);
  return Variable::parameter(v.shape(), t, v, nullptr, "w");
}

NDArrayView vec(std::vector<double> values, DataType t = DataType::Double) {
  NDArrayView v(DataType::Double, NDShape{int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i) v.data<double>()[i] = values[i];
  return t == DataType::Double ? v : v.cast(t);
}

double at(const Variable& p, size_t i) { return p.value().cast(DataType::Double).data<double>()[i]; }

// The regression the Trainer tests share: inputs x (2) and y (1), W = [0.5, -1] as a [2, 1]
// parameter, z = x W, and a minibatch of three samples.
struct Regression {
  Variable x = Variable::input({2}, DataType::Double, false, false, {Axis::default_batch_axis()}, "x");
  Variable y = Variable::input({1}, DataType::Double, false, false, {Axis::default_batch_axis()}, "y");
  Variable W;
  FunctionPtr z;
  NDArrayView xs{DataType::Double, NDShape{3, 2}}, ys{DataType::Double, NDShape{3, 1}};
  static constexpr double xd[6] = {1, 2, -1, 0.5, 3, -2}, yd[3] = {1, 0, -1};
  Regression() {
    NDArrayView w0(DataType::Double, NDShape{2, 1});
    w0.data<double>()[0] = 0.5;
    w0.data<double>()[1] = -1.0;
    W = Variable::parameter({2, 1}, DataType::Double, w0, nullptr, "W");
    z = Function::primitive("Times", {x, W}, {});
    for (int i = 0; i < 6; ++i) xs.data<double>()[i] = xd[i];
    for (int i = 0; i < 3; ++i) ys.data<double>()[i] = yd[i];
  }
  VariableValues minibatch() const { return {{x, Value(xs)}, {y, Value(ys)}}; }
  // z_i with the initial W.
  static double z0(int i) { return xd[2 * i] * 0.5 + xd[2 * i + 1] * -1.0; }
};

}  // namespace

TEST(Schedule, ListPairsAndSweeps) {
  LearningRateSchedule c(0.5);
  EXPECT_EQ(c[0], 0.5);
  EXPECT_EQ(c[1000000], 0.5);
  EXPECT_TRUE(c.is_sweep_based());

  LearningRateSchedule l(std::vector<double>{0.2, 0.4}, 5);
  EXPECT_EQ(l[0], 0.2);
  EXPECT_EQ(l[4], 0.2);
  EXPECT_EQ(l[5], 0.4);
  EXPECT_EQ(l[500], 0.4);

  LearningRateSchedule p(std::vector<std::pair<size_t, double>>{{3, 0.2}, {2, 0.4}, {1, 0.8}}, 5, 13);
  EXPECT_EQ(p[14], 0.2);
  EXPECT_EQ(p[15], 0.4);
  EXPECT_EQ(p[24], 0.4);
  EXPECT_EQ(p[25], 0.8);
  EXPECT_EQ(p.minibatch_size(), 13u);

  // Without an epoch size the unit is a sweep.
  LearningRateSchedule s(std::vector<double>{1, 2, 3});
  EXPECT_EQ(s[0], 1);
  EXPECT_EQ(s[1], 2);
  EXPECT_EQ(s[7], 3);

  EXPECT_THROW(LearningRateSchedule(std::vector<std::pair<size_t, double>>{{0, 0.1}, {1, 0.2}}, 10), ValueError);

  auto tc = momentum_as_time_constant_schedule(1100);
  EXPECT_EQ(tc.minibatch_size(), 1u);
  EXPECT_DOUBLE_EQ(tc[0], std::exp(-1.0 / 1100));
}

TEST(Learner, SGDPerMinibatchAndPerSample) {
  // Per minibatch (reference size 0): lr on the mean gradient.
  auto w = param({1.0, -2.0});
  auto l = sgd_learner({w}, LearningRateSchedule(0.5));
  ParameterGradients g{{w, vec({4.0, 8.0})}};
  EXPECT_TRUE(l->update(g, 4));
  EXPECT_DOUBLE_EQ(at(w, 0), 1.0 - 0.5 / 4 * 4.0);
  EXPECT_DOUBLE_EQ(at(w, 1), -2.0 - 0.5 / 4 * 8.0);
  EXPECT_EQ(l->total_number_of_samples_seen(), 4u);

  // Per sample (reference size 1): lr on the summed gradient.
  auto v = param({1.0});
  auto ls = sgd_learner({v}, LearningRateSchedule(0.5, 1));
  ParameterGradients gs{{v, vec({4.0})}};
  ls->update(gs, 4);
  EXPECT_DOUBLE_EQ(at(v, 0), 1.0 - 0.5 * 4.0);

  // A zero learning rate stops learning without touching anything.
  auto z = param({1.0});
  auto lz = sgd_learner({z}, LearningRateSchedule(0.0));
  ParameterGradients gz{{z, vec({4.0})}};
  EXPECT_FALSE(lz->update(gz, 4));
  EXPECT_DOUBLE_EQ(at(z, 0), 1.0);
  EXPECT_EQ(lz->total_number_of_samples_seen(), 0u);
}

TEST(Learner, MomentumScaledToMinibatchSize) {
  const double m = 0.9, lr = 0.1;
  auto w = param({0.0});
  // momentum per 10 samples, learning rate per sample
  auto l = momentum_sgd_learner({w}, LearningRateSchedule(lr, 1), MomentumSchedule(m, 10), true);
  double wv = 0, sg = 0;
  for (size_t n : {5u, 20u, 10u}) {
    ParameterGradients g{{w, vec({double(n)})}};
    l->update(g, n);
    const double mm = std::pow(m, n / 10.0);
    sg = mm * sg + (1 - mm) * lr * double(n);
    wv -= sg;
    EXPECT_NEAR(at(w, 0), wv, 1e-12);
  }
}

TEST(Learner, AdamTwoSteps) {
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  auto w = param({0.5, -0.5});
  auto l = adam_learner({w}, LearningRateSchedule(lr), MomentumSchedule(b1), true, MomentumSchedule(b2), eps);
  double wv[2] = {0.5, -0.5}, m[2] = {0, 0}, v[2] = {0, 0};
  const double grads[2][2] = {{2.0, -1.0}, {0.5, 3.0}};
  for (int t = 1; t <= 2; ++t) {
    ParameterGradients g{{w, vec({grads[t - 1][0], grads[t - 1][1]})}};
    l->update(g, 2);
    const double corr = std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    for (int i = 0; i < 2; ++i) {
      const double gi = grads[t - 1][i];
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;
      m[i] = b1 * m[i] + (1 - b1) * gi;
      wv[i] -= m[i] * corr / (std::sqrt(v[i]) + eps) * (lr / 2);
      EXPECT_NEAR(at(w, i), wv[i], 1e-12);
    }
  }
}

TEST(Learner, FloatParametersAndErrors) {
  auto w = param({1.0, 2.0}, DataType::Float);
  auto l = sgd_learner({w}, LearningRateSchedule(1.0, 1));
  ParameterGradients g{{w, vec({0.5, 0.25})}};  // a float64 gradient is cast
  l->update(g, 1);
  EXPECT_FLOAT_EQ(float(at(w, 0)), 0.5f);
  EXPECT_FLOAT_EQ(float(at(w, 1)), 1.75f);

  ParameterGradients none;
  EXPECT_THROW(l->update(none, 1), ValueError);
  ParameterGradients empty{{w, vec({0.5, 0.25})}};
  EXPECT_THROW(l->update(empty, 0), ValueError);
  EXPECT_THROW(sgd_learner({w, w}, LearningRateSchedule(1.0)), ValueError);
  EXPECT_THROW(rmsprop_learner({w}, LearningRateSchedule(1.0), 1.5, 1.2, 0.7, 10, 1e-8), ValueError);
}

TEST(Learner, CheckpointRestoresTheTrajectory) {
  auto run = [](const LearnerPtr& l, const Variable& w, double g0) {
    ParameterGradients g{{w, vec({g0, -2 * g0})}};
    l->update(g, 3);
  };
  auto w = param({0.5, -0.5});
  auto l = adam_learner({w}, LearningRateSchedule(std::vector<double>{0.01, 0.005}, 4), MomentumSchedule(0.9), true,
                        MomentumSchedule(0.999));
  run(l, w, 1.0);
  Dictionary ckp = l->create_checkpoint();
  NDArrayView saved = w.value().copy();
  run(l, w, 2.0);
  run(l, w, -1.0);
  const double w0 = at(w, 0), w1 = at(w, 1);

  w.set_value(saved);
  run(l, w, 7.0);  // diverge, then come back
  l->restore_from_checkpoint(ckp);
  w.set_value(saved);
  EXPECT_EQ(l->total_number_of_samples_seen(), 3u);
  run(l, w, 2.0);
  run(l, w, -1.0);
  EXPECT_DOUBLE_EQ(at(w, 0), w0);
  EXPECT_DOUBLE_EQ(at(w, 1), w1);
  // Adam's two buffers side by side, as CNTK stores them: [2 * cols, rows] (rows = 2, cols = 1).
  EXPECT_EQ(ckp.at("smoothed_gradients").as_list()[0].as_array().shape(), NDShape({2, 2}));
  EXPECT_THROW(sgd_learner({w}, LearningRateSchedule(0.1))->restore_from_checkpoint(ckp), ValueError);
}

TEST(Learner, ReportsHyperParameterChanges) {
  auto w = param({0.0});
  auto l = momentum_sgd_learner({w}, LearningRateSchedule(std::vector<double>{0.3, 0.0}, 1, 1),
                                MomentumSchedule(std::vector<double>{0.6, 0.7}, 1));
  std::vector<std::pair<std::string, double>> seen;
  l->add_progress_reporter([&](const std::string& name, double v) { seen.emplace_back(name, v); });
  for (int i = 0; i < 4; ++i) {
    ParameterGradients g{{w, vec({1.0})}};
    l->update(g, 1);
  }
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], std::make_pair(std::string("Learning rate per 1 samples"), 0.3));
  EXPECT_EQ(seen[1], std::make_pair(std::string("Momentum per minibatch"), 0.6));
  EXPECT_EQ(seen[2], std::make_pair(std::string("Learning rate per 1 samples"), 0.0));
}

TEST(Trainer, LinearRegressionStepAndCounters) {
  Regression r;
  const Variable y = r.y, W = r.W;
  auto b = Variable::parameter({1}, DataType::Double, vec({0.25}), nullptr, "b");
  auto z = Function::primitive("Plus", {r.z->output(), b}, {});
  auto diff = Function::primitive("Minus", {z->output(), y}, {});
  auto sq = Function::primitive("ElementTimes", {diff->output(), diff->output()}, {});
  Dictionary red{{"reductionOpName", DictValue("Sum")},
                 {"axis", DictValue(Axis::all_static_axes())},
                 {"reductionKeepDimensions", DictValue(true)}};
  auto loss = Function::composite(Function::primitive("ReduceElements", {sq->output()}, red));
  auto model = Function::composite(z);

  // Two learners over disjoint parameters.
  auto lw = sgd_learner({W}, LearningRateSchedule(0.1, 1));
  auto lb = sgd_learner({b}, LearningRateSchedule(0.2, 1));
  Trainer t(model, loss, loss, {lw, lb});

  const double* xd = Regression::xd;
  const double* yd = Regression::yd;
  EXPECT_TRUE(t.train_minibatch(r.minibatch()));

  double gW[2] = {0, 0}, gb = 0, loss_sum = 0;
  for (int i = 0; i < 3; ++i) {
    const double residual = Regression::z0(i) + 0.25 - yd[i];
    loss_sum += residual * residual;
    gW[0] += 2 * residual * xd[2 * i];
    gW[1] += 2 * residual * xd[2 * i + 1];
    gb += 2 * residual;
  }
  EXPECT_EQ(t.previous_minibatch_sample_count(), 3u);
  EXPECT_NEAR(t.previous_minibatch_loss_average(), loss_sum / 3, 1e-12);
  EXPECT_NEAR(t.previous_minibatch_evaluation_average(), loss_sum / 3, 1e-12);
  EXPECT_NEAR(W.value().data<double>()[0], 0.5 - 0.1 * gW[0], 1e-12);
  EXPECT_NEAR(W.value().data<double>()[1], -1.0 - 0.1 * gW[1], 1e-12);
  EXPECT_NEAR(b.value().data<double>()[0], 0.25 - 0.2 * gb, 1e-12);
  EXPECT_EQ(t.total_number_of_samples_seen(), 3u);
  t.train_minibatch(r.minibatch());
  EXPECT_EQ(t.total_number_of_samples_seen(), 6u);
  EXPECT_FALSE(t.train_minibatch({}));
  EXPECT_THROW(t.previous_minibatch_loss_average(), ValueError);

  // A parameter in two learners, or one outside the model, is refused.
  EXPECT_THROW(Trainer(model, loss, nullptr,
                       {sgd_learner({W}, LearningRateSchedule(0.1)), sgd_learner({W, b}, LearningRateSchedule(0.1))}),
               ValueError);
  auto stray = param({1.0});
  EXPECT_THROW(Trainer(model, loss, nullptr, {sgd_learner({W, b, stray}, LearningRateSchedule(0.1))}), ValueError);
  Trainer partial(model, loss, nullptr, {sgd_learner({W}, LearningRateSchedule(0.1))});
  ASSERT_EQ(partial.parameters_not_covered().size(), 1u);
  EXPECT_EQ(partial.parameters_not_covered()[0], b);
  EXPECT_THROW(partial.test_minibatch(r.minibatch()), ValueError);
}

TEST(Trainer, AdditionalMetricsComeFromTheSameForwardPass) {
  // Loss and evaluation sum((z - y)^2); additional metrics |z - y| and z, measured with the
  // parameters before the minibatch's update.
  Regression r;
  auto diff = Function::primitive("Minus", {r.z->output(), r.y}, {});
  auto sq = Function::composite(Function::primitive("ElementTimes", {diff->output(), diff->output()}, {}));
  auto abs = Function::composite(Function::primitive("Abs", {diff->output()}, {}));
  Trainer t(Function::composite(r.z), sq, sq, {sgd_learner({r.W}, LearningRateSchedule(0.1, 1))});
  t.set_additional_metrics({abs, Function::composite(r.z)});
  ASSERT_TRUE(t.train_minibatch(r.minibatch()));
  double abs_sum = 0, z_sum = 0;
  for (int i = 0; i < 3; ++i) {
    abs_sum += std::abs(Regression::z0(i) - Regression::yd[i]);
    z_sum += Regression::z0(i);
  }
  const auto& more = t.previous_minibatch_additional_metrics();
  ASSERT_EQ(more.size(), 2u);
  EXPECT_NEAR(more[0].sum, abs_sum, 1e-12);
  EXPECT_EQ(more[0].samples, 3u);
  EXPECT_NEAR(more[1].sum, z_sum, 1e-12);
  EXPECT_EQ(more[1].samples, 3u);
  EXPECT_NE(r.W.value().data<double>()[0], 0.5);  // the update happened after the measurement
  EXPECT_THROW(t.set_additional_metrics({nullptr}), ValueError);
}

namespace {

// A [rows, cols] float parameter of distinct values.
Variable matrix_param(int64_t rows, int64_t cols, double offset) {
  NDArrayView v(DataType::Float, NDShape{rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) v.data<float>()[i] = float(std::sin(double(i) + offset));
  return Variable::parameter(v.shape(), DataType::Float, v, nullptr, "E");
}

// Gradient rows `used` of a [rows, cols] matrix, sparse and the same values dense.
std::pair<NDArrayView, NDArrayView> row_gradient(int64_t rows, int64_t cols, const std::vector<int64_t>& used,
                                                 int step) {
  NDArrayView dense = NDArrayView::zeros(DataType::Float, NDShape{rows, cols});
  std::vector<int64_t> starts{0}, indices;
  std::vector<float> values;
  size_t j = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (j < used.size() && used[j] == r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float v = float(std::cos(double(r * cols + c) * 0.37 + step));
        indices.push_back(c);
        values.push_back(v);
        dense.data<float>()[r * cols + c] += v;
      }
      ++j;
    }
    starts.push_back(int64_t(indices.size()));
  }
  return {NDArrayView::sparse(DataType::Float, dense.shape(), starts, indices, values.data()), dense};
}

}  // namespace

// An embedding's gradient arrives as the rows a minibatch used; every rule reads the
// rows it lacks as zeros and must update exactly as from the dense gradient, on one
// thread (small) and on every thread (past 2^15 elements).
TEST(Learner, SparseRowGradientsUpdateAsTheirDenseForm) {
  using Make = std::function<LearnerPtr(const Variable&)>;
  const LearningRateSchedule lr(0.05);
  AdditionalLearningOptions mean;
  const std::vector<std::pair<std::string, Make>> rules = {
      {"sgd", [&](const Variable& p) { return sgd_learner({p}, lr); }},
      {"momentum", [&](const Variable& p) { return momentum_sgd_learner({p}, lr, MomentumSchedule(0.9)); }},
      {"nesterov", [&](const Variable& p) { return nesterov_learner({p}, lr, MomentumSchedule(0.9)); }},
      {"adagrad", [&](const Variable& p) { return adagrad_learner({p}, lr, false); }},
      {"adagrad averaged", [&](const Variable& p) { return adagrad_learner({p}, lr, true); }},
      {"adadelta", [&](const Variable& p) { return adadelta_learner({p}, lr, 0.9, 1e-6); }},
      {"fsadagrad", [&](const Variable& p) { return fsadagrad_learner({p}, lr, MomentumSchedule(0.9)); }},
      {"adam", [&](const Variable& p) { return adam_learner({p}, lr, MomentumSchedule(0.9)); }},
      {"adamax",
       [&](const Variable& p) {
         return adam_learner({p}, lr, MomentumSchedule(0.9), true, default_variance_momentum(), 1e-8, true);
       }},
      {"rmsprop", [&](const Variable& p) { return rmsprop_learner({p}, lr, 0.9, 1.2, 0.7, 2.0, 0.1, false); }},
      {"rmsprop averaged", [&](const Variable& p) { return rmsprop_learner({p}, lr, 0.9, 1.2, 0.7, 2.0, 0.1, true); }},
  };
  for (int64_t rows : {int64_t(40), int64_t(3000)}) {
    const int64_t cols = 24;
    // Used rows: the first, one in the middle, a run, and the last; another set next step.
    const std::vector<std::vector<int64_t>> used = {{0, rows / 2, rows / 2 + 1, rows / 2 + 2, rows - 1},
                                                    {3, 7, rows - 2}};
    for (const auto& [name, make] : rules) {
      Variable a = matrix_param(rows, cols, 0.0), b = matrix_param(rows, cols, 0.0);
      LearnerPtr la = make(a), lb = make(b);
      for (int step = 0; step < 3; ++step) {
        auto [sparse, dense] = row_gradient(rows, cols, used[size_t(step % 2)], step);
        ParameterGradients ga{{a, sparse}}, gb{{b, dense}};
        la->update(ga, 4);
        lb->update(gb, 4);
      }
      const NDArrayView va = a.value(), vb = b.value();
      for (int64_t i = 0; i < rows * cols; ++i)
        ASSERT_EQ(va.data<float>()[i], vb.data<float>()[i]) << name << ", " << rows << " rows, element " << i;
    }
  }
}
