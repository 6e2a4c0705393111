// OptimizedRNNStack through the C++ API: the weight count and layout, a one-step LSTM
// against its equations, per-sequence independence, and the CNTK v2 model round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "cntk/evaluation.h"
#include "cntk/function.h"
#include "cntk/serialize.h"
#include "kernels/cpu/rnn_stack.h"

using namespace cntk;

namespace {

Variable sequence_input(int64_t dim) {
  return Variable::input({dim}, DataType::Double, false, false,
                         {Axis::default_batch_axis(), Axis::default_dynamic_axis()}, "x");
}

NDArrayView wave(const NDShape& s, double scale, double phase) {
  NDArrayView v(DataType::Double, s);
  for (int64_t i = 0; i < v.numel(); ++i) v.data<double>()[i] = scale * std::sin(0.7 * double(i) + phase);
  return v;
}

std::vector<double> values_of(const NDArrayView& v) {
  NDArrayView d = v.to_dense().cast(DataType::Double).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

Dictionary stack_attrs(int64_t hidden, int64_t layers, bool bidirectional, const std::string& op) {
  Dictionary a;
  a["hiddenSize"] = hidden;
  a["numLayers"] = layers;
  a["bidirectional"] = bidirectional;
  a["recurrentOp"] = op;
  return a;
}

std::vector<NDArrayView> run(const FunctionPtr& f, const Variable& x, const std::vector<NDArrayView>& seqs) {
  std::vector<Value> outs;
  forward(f, {{x, Value::from_sequences(seqs)}}, {f->output()}, outs, false);
  return outs[0].unpack(1);
}

}  // namespace

TEST(RnnStack, WeightCountFollowsCudnnPacking) {
  kernels::RnnStackDims d;
  d.cell = kernels::RnnCell::Lstm;
  d.input_size = 3;
  d.hidden = 5;
  d.layers = 2;
  d.bidirectional = true;
  // Layer 0: 2 directions x (4*5*(3+5) + 2*4*5); layer 1 reads 10 values per step.
  EXPECT_EQ(d.weight_count(), 2 * (20 * 8 + 40) + 2 * (20 * 15 + 40));
  auto o = kernels::rnn_block_offsets(d, 1, 1);
  EXPECT_EQ(o.w, 2 * 20 * 8 + 20 * 15);  // after layer 0 and layer 1's forward matrices
  EXPECT_EQ(o.r, o.w + 20 * 10);
  EXPECT_EQ(o.bw, 2 * 20 * 8 + 2 * 20 * 15 + 3 * 40);  // all matrices, then 3 bias pairs
  EXPECT_EQ(o.br, o.bw + 20);
  EXPECT_THROW(kernels::rnn_cell_from_name("relu"), ValueError);
}

TEST(RnnStack, OneLstmStepMatchesItsEquations) {
  auto x = sequence_input(2);
  const int64_t H = 2;
  kernels::RnnStackDims d{kernels::RnnCell::Lstm, 2, H, 1, false};
  NDArrayView w = wave({d.weight_count() / H, H}, 0.5, 0.3);
  auto W = Variable::parameter(w.shape(), DataType::Double, w, nullptr, "W");
  auto f = Function::composite(Function::primitive("OptimizedRNNStack", {x, W}, stack_attrs(H, 1, false, "lstm")));
  NDArrayView in = wave({1, 2}, 1.0, 1.1);
  auto y = values_of(run(f, x, {in})[0]);
  const double* p = w.data<double>();
  const double* xi = in.data<double>();
  // One step from zero state: gates = W x + bW + bR (R h = 0), cuDNN order i, f, g, o.
  auto pre = [&](int64_t row) {
    const int64_t bias = 4 * H * (2 + H);
    return p[row * 2] * xi[0] + p[row * 2 + 1] * xi[1] + p[bias + row] + p[bias + 4 * H + row];
  };
  for (int64_t j = 0; j < H; ++j) {
    double i = 1 / (1 + std::exp(-pre(j))), g = std::tanh(pre(2 * H + j)), o = 1 / (1 + std::exp(-pre(3 * H + j)));
    EXPECT_NEAR(y[size_t(j)], o * std::tanh(i * g), 1e-12);
  }
}

TEST(RnnStack, SequencesOfDifferentLengthsAreIndependent) {
  auto x = sequence_input(3);
  kernels::RnnStackDims d{kernels::RnnCell::LbrGru, 3, 4, 2, true};
  NDArrayView w = wave({d.weight_count() / 4, 4}, 0.4, 0.0);
  auto W = Variable::parameter(w.shape(), DataType::Double, w, nullptr, "W");
  auto f = Function::composite(Function::primitive("OptimizedRNNStack", {x, W}, stack_attrs(4, 2, true, "gru")));
  EXPECT_EQ(f->output().shape(), (NDShape{8}));
  NDArrayView a = wave({5, 3}, 1.0, 0.5), b = wave({2, 3}, 1.0, 2.0);
  auto both = run(f, x, {a, b});
  auto alone_a = run(f, x, {a}), alone_b = run(f, x, {b});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].shape(), (NDShape{2, 8}));
  auto va = values_of(both[0]), vb = values_of(both[1]), wa = values_of(alone_a[0]), wb = values_of(alone_b[0]);
  for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], wa[i], 1e-13);
  for (size_t i = 0; i < vb.size(); ++i) EXPECT_NEAR(vb[i], wb[i], 1e-13);
}

TEST(RnnStack, InfersTheWeightShapeAndRejectsBadOnes) {
  auto x = sequence_input(3);
  auto init = std::make_shared<Dictionary>();
  (*init)["type"] = "uniform";
  (*init)["scale"] = 0.1;
  auto W = Variable::parameter({NDShape::kInferredDimension, 1}, DataType::Double, NDArrayView(), init, "W");
  auto f = Function::primitive("OptimizedRNNStack", {x, W}, stack_attrs(5, 1, false, "rnnTanh"));
  kernels::RnnStackDims d{kernels::RnnCell::RnnTanh, 3, 5, 1, false};
  EXPECT_EQ(f->inputs()[1].shape(), (NDShape{d.weight_count() / 5, 5}));
  auto bad = Variable::parameter({4, 5}, DataType::Double, wave({4, 5}, 1, 0), nullptr, "bad");
  EXPECT_THROW(Function::primitive("OptimizedRNNStack", {x, bad}, stack_attrs(5, 1, false, "lstm")), ValueError);
  EXPECT_THROW(Function::primitive("OptimizedRNNStack", {x, W}, stack_attrs(5, 1, false, "relu")), ValueError);
}

TEST(RnnStack, SavesAndLoadsAsCntkOptimizedRnnStack) {
  auto x = sequence_input(3);
  kernels::RnnStackDims d{kernels::RnnCell::Lstm, 3, 2, 2, true};
  NDArrayView w = wave({d.weight_count() / 2, 2}, 0.5, 0.2);
  auto W = Variable::parameter(w.shape(), DataType::Double, w, nullptr, "W");
  auto f =
      Function::composite(Function::primitive("OptimizedRNNStack", {x, W}, stack_attrs(2, 2, true, "lstm"), "rnn"));
  Dictionary dict = function_to_dictionary(f);
  auto fns = dict.at("primitive_functions").as_list();
  ASSERT_EQ(fns.size(), 1u);
  Dictionary pf = fns[0].as_dict();
  EXPECT_EQ(pf.at("op").as_int(), 49);  // CNTK's PrimitiveOpType::OptimizedRNNStack
  Dictionary attrs = pf.at("attributes").as_dict();
  EXPECT_EQ(attrs.at("hiddenSize").as_int(), 2);
  EXPECT_EQ(attrs.at("numLayers").as_int(), 2);
  EXPECT_TRUE(attrs.at("bidirectional").as_bool());
  EXPECT_EQ(attrs.at("recurrentOp").as_string(), "lstm");
  FunctionPtr g = function_from_dictionary(dictionary_from_bytes(dictionary_to_bytes(dict)));
  EXPECT_EQ(g->root_function()->op_name(), "OptimizedRNNStack");
  NDArrayView seq = wave({4, 3}, 1.0, 0.9);
  auto before = values_of(run(f, x, {seq})[0]);
  auto after = values_of(run(g, g->arguments()[0], {seq})[0]);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_DOUBLE_EQ(before[i], after[i]);
}

// The float32 path runs on oneDNN's RNN primitives after repacking the cuDNN-layout
// weights; outputs and both gradients agree with the float64 reference loops.
TEST(RnnStack, Float32FusedPathMatchesFloat64Reference) {
  for (auto cell :
       {kernels::RnnCell::Lstm, kernels::RnnCell::LbrGru, kernels::RnnCell::RnnTanh, kernels::RnnCell::RnnRelu}) {
    kernels::RnnStackDims d{cell, 3, 5, 2, true};
    const std::vector<int64_t> lengths{4, 1, 3};
    NDArrayView x = wave({4, 3, 3}, 1.0, 0.4), w = wave({d.weight_count() / 5, 5}, 0.4, 0.1);
    NDArrayView dy = wave({4, 3, 10}, 1.0, 2.2);
    std::shared_ptr<kernels::RnnStackTape> t64, t32;
    auto y64 = values_of(kernels::rnn_stack_forward(d, x, lengths, w, &t64));
    auto y32 =
        values_of(kernels::rnn_stack_forward(d, x.cast(DataType::Float), lengths, w.cast(DataType::Float), &t32));
    ASSERT_EQ(y64.size(), y32.size());
    for (size_t i = 0; i < y64.size(); ++i) EXPECT_NEAR(y32[i], y64[i], 1e-5) << "cell " << int(cell) << " y " << i;
    auto g64 = kernels::rnn_stack_backward(d, x, lengths, w, dy, *t64);
    auto g32 = kernels::rnn_stack_backward(d, x.cast(DataType::Float), lengths, w.cast(DataType::Float),
                                           dy.cast(DataType::Float), *t32);
    auto dx64 = values_of(g64.dx), dx32 = values_of(g32.dx), dw64 = values_of(g64.dw), dw32 = values_of(g32.dw);
    for (size_t i = 0; i < dx64.size(); ++i) EXPECT_NEAR(dx32[i], dx64[i], 1e-4) << "cell " << int(cell) << " dx " << i;
    for (size_t i = 0; i < dw64.size(); ++i) EXPECT_NEAR(dw32[i], dw64[i], 1e-4) << "cell " << int(cell) << " dw " << i;
    // Padded steps hold zeros.
    EXPECT_EQ(y32[size_t((1 * 3 + 1) * 10)], 0.0);
  }
}
