// The graph API behaviours the Python layer relies on: Combine, naming, deferred
// constants, cloning, placeholder binding, run-time checks and mixed-precision steps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "cntk/evaluation.h"
#include "cntk/function.h"
#include "cntk/ops.h"

using namespace cntk;

namespace {

NDArrayView filled(DataType t, const NDShape& s, double start = 0) {
  NDArrayView v(DataType::Double, s);
  for (int64_t i = 0; i < v.numel(); ++i) v.data<double>()[i] = start + double(i);
  return v.cast(t);
}

Variable batch_input(const NDShape& s, const std::string& name, DataType t = DataType::Float) {
  return Variable::input(s, t, false, false, {Axis::default_batch_axis()}, name);
}

std::vector<double> values_of(const NDArrayView& v) {
  NDArrayView d = v.to_dense().cast(DataType::Double).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

std::vector<Value> run(const FunctionPtr& f, const VariableValues& args, const std::vector<Variable>& outs = {}) {
  std::vector<Value> values;
  forward(f, args, outs, values, false);
  return values;
}

}  // namespace

TEST(GraphApi, CombineNeedsNoCatalogueEntry) {
  auto x = batch_input({2}, "x");
  auto a = Function::composite(Function::primitive("Plus", {x, x}, {}, "a"));
  auto b = Function::composite(Function::primitive("ElementTimes", {x, x}, {}, "b"));
  auto c = Function::combine({a->output(), b->output()}, "both");
  EXPECT_EQ(c->root_function()->op_name(), "Combine");
  ASSERT_EQ(c->outputs().size(), 2u);
  auto outs = run(c, {{x, Value(filled(DataType::Float, {1, 2}, 1))}});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(values_of(outs[0].data()), (std::vector<double>{2, 4}));
  EXPECT_EQ(values_of(outs[1].data()), (std::vector<double>{1, 4}));
}

TEST(GraphApi, OutputsAreNamedAfterTheirFunction) {
  auto x = batch_input({2}, "x");
  auto f = Function::primitive("Tanh", {x}, {}, "act");
  EXPECT_EQ(f->output().name(), "act");
  auto g = Function::primitive("Tanh", {x}, {});
  g->set_name("later");
  EXPECT_EQ(g->name(), "later");
  EXPECT_EQ(g->output().name(), "later");
}

TEST(GraphApi, NamedFunctionsCannotBeRenamed) {
  auto x = batch_input({2}, "x");
  auto f = Function::primitive("Tanh", {x}, {}, "first");
  EXPECT_THROW(f->set_name("second"), ValueError);
  EXPECT_NO_THROW(f->set_name("first"));
  EXPECT_EQ(f->name(), "first");
}

TEST(GraphApi, CustomAttributesAreKeptPerFunction) {
  auto x = batch_input({2}, "x");
  auto f = Function::primitive("Tanh", {x}, {});
  f->custom_attributes()["note"] = DictValue("abc");
  EXPECT_EQ(f->custom_attributes().at("note").as_string(), "abc");
  EXPECT_TRUE(f->attributes().empty());
}

TEST(GraphApi, ConstantWithInferredShapeGetsItsValueLater) {
  auto c = Variable::constant(NDShape{NDShape::kInferredDimension, 3}, DataType::Float, 2.0, "c");
  EXPECT_THROW(c.value(), ValueError);
  auto x = batch_input({4, 3}, "x");
  auto f = Function::composite(Function::primitive("Plus", {x, c}, {}));
  EXPECT_EQ(c.shape(), NDShape({4, 3}));
  EXPECT_EQ(c.value().shape(), NDShape({4, 3}));
  EXPECT_EQ(values_of(c.value())[11], 2.0);
  auto outs = run(f, {{x, Value(NDArrayView::zeros(DataType::Float, {1, 4, 3}))}});
  EXPECT_EQ(values_of(outs[0].data())[5], 2.0);
  EXPECT_THROW(Variable::constant(NDShape{NDShape::kFreeDimension}, DataType::Float, 1.0, ""), ValueError);
}

TEST(GraphApi, ElementwiseOpsFillInferredParameterDimensions) {
  Dictionary init{{"type", DictValue("constant")}, {"value", DictValue(0.5)}};
  auto p = Variable::parameter({NDShape::kInferredDimension}, DataType::Float, NDArrayView(),
                               std::make_shared<Dictionary>(init), "p");
  auto x = batch_input({3}, "x");
  auto f = Function::composite(Function::primitive("ElementTimes", {x, p}, {}));
  EXPECT_EQ(p.shape(), NDShape({3}));
  EXPECT_EQ(values_of(p.value()), (std::vector<double>{0.5, 0.5, 0.5}));
}

TEST(GraphApi, CloneCopiesUnsubstitutedInputsAndFollowsTheMethod) {
  auto x = batch_input({2}, "x");
  auto w = Variable::parameter({2}, DataType::Float, filled(DataType::Float, {2}, 1), nullptr, "w");
  auto c = Variable::constant(filled(DataType::Float, {2}, 5), "c");
  auto f = Function::composite(
      Function::primitive("Plus", {Function::primitive("ElementTimes", {x, w}, {})->output(), c}, {}));

  auto shared = f->clone(CloneMethod::Share, {});
  auto args = shared->arguments();
  ASSERT_EQ(args.size(), 1u);
  EXPECT_NE(args[0], x);  // a fresh copy of the input
  EXPECT_EQ(args[0].name(), "x");
  EXPECT_EQ(args[0].shape(), x.shape());
  EXPECT_EQ(shared->parameters()[0], w);
  EXPECT_EQ(shared->constants()[0], c);

  auto cloned = f->clone(CloneMethod::Clone, {});
  EXPECT_NE(cloned->parameters()[0], w);
  EXPECT_NE(cloned->constants()[0], c);
  EXPECT_EQ(values_of(cloned->parameters()[0].value()), values_of(w.value()));

  auto frozen = f->clone(CloneMethod::Freeze, {});
  EXPECT_TRUE(frozen->parameters().empty());
  EXPECT_EQ(frozen->constants().size(), 2u);

  auto x2 = batch_input({2}, "x2");
  auto substituted = f->clone(CloneMethod::Share, {{x.get(), x2}});
  ASSERT_EQ(substituted->arguments().size(), 1u);
  EXPECT_EQ(substituted->arguments()[0], x2);
}

TEST(GraphApi, CloneKeepsInputsThatASubstituteReads) {
  auto x = batch_input({2}, "x");
  auto t = Function::primitive("Tanh", {x}, {});
  auto f = Function::composite(Function::primitive("Plus", {t->output(), x}, {}));
  auto sub = Function::primitive("Exp", {x}, {});
  auto g = f->clone(CloneMethod::Share, {{t->output().get(), sub->output()}});
  auto args = g->arguments();
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(args[0], x);
}

TEST(GraphApi, ReplacePlaceholdersChecksItsKeysAndInfersShapes) {
  auto p = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "p");
  auto f = Function::composite(Function::primitive("Tanh", {p}, {}));
  EXPECT_TRUE(f->output().shape().is_unknown());
  auto x = batch_input({5}, "x");
  EXPECT_THROW(f->replace_placeholders({{x.get(), x}}), ValueError);
  f->replace_placeholders({{p.get(), x}});
  EXPECT_EQ(f->output().shape(), NDShape({5}));
  EXPECT_EQ(f->arguments()[0], x);
}

TEST(GraphApi, ForwardChecksBatchSizesAcrossInputs) {
  auto x = batch_input({2}, "x"), y = batch_input({2}, "y");
  auto f = Function::composite(Function::primitive("Plus", {x, y}, {}));
  EXPECT_THROW(run(f, {{x, Value(NDArrayView::zeros(DataType::Float, {2, 2}))},
                       {y, Value(NDArrayView::zeros(DataType::Float, {3, 2}))}}),
               ValueError);
}

TEST(GraphApi, OutputsOfAnotherGraphAreRefusedByTheCheck) {
  auto x = batch_input({2}, "x");
  auto f = Function::composite(Function::primitive("Tanh", {x}, {}));
  auto other = Function::primitive("Exp", {x}, {});
  EXPECT_THROW(check_outputs_in_graph(f, {other->output()}), ValueError);
  EXPECT_NO_THROW(check_outputs_in_graph(f, {f->output()}));
  EXPECT_NO_THROW(check_outputs_in_graph(f, {f->output()}));  // remembered
  EXPECT_NO_THROW(check_outputs_in_graph(f, {x}));            // a leaf of the graph
  // forward itself computes whatever the arguments reach (the Trainer relies on it).
  auto outs = run(f, {{x, Value(NDArrayView::zeros(DataType::Float, {1, 2}))}}, {other->output()});
  EXPECT_EQ(values_of(outs[0].data()), (std::vector<double>{1, 1}));
}

TEST(GraphApi, MixedFloatAndDoubleInputsComputeInDouble) {
  auto x = batch_input({2}, "x");
  auto w = Variable::parameter({2}, DataType::Double, filled(DataType::Double, {2}, 2), nullptr, "w");
  auto f = Function::composite(Function::primitive("ElementTimes", {x, w}, {}));
  EXPECT_EQ(f->output().dtype(), DataType::Double);
  std::vector<Value> outs;
  auto state = forward(f, {{x, Value(filled(DataType::Float, {1, 2}, 1))}}, {}, outs, true);
  EXPECT_EQ(outs[0].dtype(), DataType::Double);
  EXPECT_EQ(values_of(outs[0].data()), (std::vector<double>{2, 6}));
  std::vector<Value> grads;
  backward(state, {{f->output(), Value(NDArrayView::full(DataType::Double, {1, 2}, 1.0))}}, {x, w}, grads);
  EXPECT_EQ(grads[0].dtype(), DataType::Float);  // each gradient has its variable's type
  EXPECT_EQ(values_of(grads[0].data()), (std::vector<double>{2, 3}));
  EXPECT_EQ(grads[1].dtype(), DataType::Double);
  EXPECT_EQ(values_of(grads[1].data()), (std::vector<double>{1, 2}));
}

TEST(GraphApi, GradientsAccumulateOverRepeatedInputs) {
  auto x = batch_input({2}, "x");
  auto sq = Function::primitive("ElementTimes", {x, x}, {});
  auto f = Function::composite(Function::primitive("Plus", {sq->output(), x}, {}));
  std::vector<Value> outs, grads;
  auto state = forward(f, {{x, Value(filled(DataType::Float, {1, 2}, 1))}}, {}, outs, true);
  backward(state, {{f->output(), Value(NDArrayView::full(DataType::Float, {1, 2}, 1.0))}}, {x}, grads);
  EXPECT_EQ(values_of(grads[0].data()), (std::vector<double>{3, 5}));  // 2x + 1
}

TEST(Tensor, DropAxisIsAViewOfTheSameStorage) {
  auto a = filled(DataType::Float, {1, 3, 4});
  auto s = a.slice(1, 1, 3).drop_axis(0);
  EXPECT_EQ(s.shape(), NDShape({2, 4}));
  EXPECT_TRUE(s.same_storage(a));
  EXPECT_EQ(values_of(s)[0], 4.0);
  EXPECT_THROW(a.drop_axis(1), ValueError);
}

TEST(GraphApi, ShapesInferLaterWhenAPlaceholderIsBoundThroughAnotherFunction) {
  auto p = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "p");
  auto h = Function::composite(Function::primitive("Tanh", {p}, {}));
  auto z = Function::composite(Function::primitive("Exp", {h->output()}, {}));
  EXPECT_TRUE(z->output().shape().is_unknown());
  auto x = batch_input({2}, "x");
  h->replace_placeholders({{p.get(), x}});
  auto outs = run(z, {{x, Value(NDArrayView::zeros(DataType::Float, {1, 2}))}});
  EXPECT_EQ(z->output().shape(), NDShape({2}));
  EXPECT_EQ(values_of(outs[0].data()), (std::vector<double>{1, 1}));
}

TEST(GraphApi, BlockArgumentsMustBePlaceholdersOfTheComposite) {
  auto a = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "a");
  auto other = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "other");
  auto x = batch_input({2}, "x");
  auto inner = Function::composite(Function::primitive("Tanh", {a}, {}));
  EXPECT_THROW(Function::block(inner, {{a, x}, {other, x}}, "B", ""), ValueError);
  auto with_input = Function::composite(Function::primitive("Plus", {a, x}, {}));
  EXPECT_THROW(Function::block(with_input, {{a, x}}, "B", ""), ValueError);
  auto ok = Function::block(inner, {{a, x}}, "B", "b");
  EXPECT_EQ(ok->output().shape(), NDShape({2}));
}

TEST(GraphApi, VariablesRejectMeaninglessDimensions) {
  EXPECT_THROW(batch_input({-5}, "x"), ValueError);
  EXPECT_NO_THROW(batch_input({NDShape::kFreeDimension, 3}, "x"));
  EXPECT_THROW(Variable::parameter({-5, 3}, DataType::Float, NDArrayView(),
                                   std::make_shared<Dictionary>(Dictionary{{"type", DictValue("zero")}}), "p"),
               ValueError);
  EXPECT_THROW(Variable::parameter({NDShape::kFreeDimension}, DataType::Float, NDArrayView(),
                                   std::make_shared<Dictionary>(Dictionary{{"type", DictValue("zero")}}), "p"),
               ValueError);
  EXPECT_THROW(NDMask(-1, 2), ValueError);
}

TEST(Exec, EmptyBatchesComputeToEmptyResults) {
  auto x = batch_input({3}, "x");
  auto f = Function::composite(Function::primitive("ElementTimes", {x, x}, {}));
  std::vector<Value> outs, grads;
  auto state = forward(f, {{x, Value(NDArrayView::zeros(DataType::Float, {0, 3}))}}, {}, outs, true);
  EXPECT_EQ(outs[0].shape(), NDShape({0, 3}));
  backward(state, {{f->output(), Value(NDArrayView::zeros(DataType::Float, {0, 3}))}}, {x}, grads);
  EXPECT_EQ(grads[0].shape(), NDShape({0, 3}));
}

TEST(GraphApi, VariablesDescribeThemselvesAsCntkDoes) {
  EXPECT_EQ(batch_input({3, 4}, "a").str(), "Input('a', [#], [3 x 4])");
  auto s = Variable::input({3}, DataType::Float, false, false,
                           {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "s");
  EXPECT_EQ(s.str(), "Input('s', [#, *], [3])");
  auto p = Variable::parameter({NDShape::kInferredDimension, 2}, DataType::Float, NDArrayView(),
                               std::make_shared<Dictionary>(Dictionary{{"type", DictValue("zero")}}), "p");
  EXPECT_EQ(p.str(), "Parameter('p', [], [? x 2])");
  auto ph = Variable::placeholder(NDShape::unknown(), {Axis::dynamic("UnknownAxes")}, "ph");
  EXPECT_EQ(ph.str(), "Placeholder('ph', [???], [???])");
}

TEST(GraphApi, NceLossFromCpp) {
  const int64_t C = 5, D = 3, k = 4;
  auto W = Variable::parameter({C, D}, DataType::Float, filled(DataType::Float, {C, D}, 0.1), nullptr, "W");
  auto b = Variable::parameter({C, 1}, DataType::Float, filled(DataType::Float, {C, 1}), nullptr, "b");
  auto x = batch_input({D}, "x");
  auto y = batch_input({C}, "y");
  NDArrayView noise = filled(DataType::Double, {C}, 1);  // weights 1..5, normalized by the op
  auto loss = ops::nce_loss(W, b, x, y, noise, k, true, 7, "nce");
  // The constants: q = w / 15, and with duplicates an importance weight of q / (k q) = 1/k.
  std::map<std::string, std::vector<double>> consts;
  for (auto& in : loss->root_function()->direct_inputs())
    if (in.is_constant()) consts[in.name()] = values_of(in.value());
  ASSERT_EQ(consts.size(), 3u);
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_NEAR(consts["noise"][size_t(c)], double(c + 1) / 15, 1e-7);
    EXPECT_NEAR(consts["importanceWeights"][size_t(c)], 1.0 / k, 1e-6);
    EXPECT_NEAR(consts["logNoisePrior"][size_t(c)], std::log(k * double(c + 1) / 15), 1e-6);
  }
  // One finite loss per sample.
  NDArrayView xs = filled(DataType::Float, {2, D}), ys = NDArrayView::zeros(DataType::Float, {2, C});
  ys.data<float>()[1] = 1;
  ys.data<float>()[C + 3] = 1;
  auto out = run(loss, {{x, Value(xs)}, {y, Value(ys)}});
  auto v = values_of(out[0].data());
  ASSERT_EQ(v.size(), 2u);
  for (double l : v) EXPECT_TRUE(std::isfinite(l) && l > 0);
  // Bad noise weights and sample counts are named.
  EXPECT_THROW(ops::nce_loss(W, b, x, y, filled(DataType::Double, {C}, -3), k), ValueError);
  EXPECT_THROW(ops::nce_loss(W, b, x, y, noise, 0), ValueError);
  EXPECT_THROW(ops::nce_loss(W, b, x, y, noise, C, false), ValueError);
}
