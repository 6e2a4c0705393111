// Sequence ops and sparse products through the C++ API: new sequence axes carry
// their own lengths, and one-hot data multiplies as a row gather.
#include <gtest/gtest.h>

#include "cntk/evaluation.h"
#include "cntk/function.h"

using namespace cntk;

namespace {

NDArrayView column(const std::vector<double>& values) {
  NDArrayView v(DataType::Float, NDShape{int64_t(values.size()), 1});
  for (size_t i = 0; i < values.size(); ++i) v.data<float>()[i] = float(values[i]);
  return v;
}

Variable sequence_input(const NDShape& s, bool sparse = false) {
  return Variable::input(s, DataType::Float, sparse, false, {Axis::default_batch_axis(), Axis::default_dynamic_axis()},
                         "x");
}

std::vector<double> values_of(const NDArrayView& v) {
  NDArrayView d = v.to_dense().cast(DataType::Double).contiguous();
  return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
}

}  // namespace

TEST(SequenceOps, WhereGivesANewAxisWithItsOwnLengths) {
  auto c = sequence_input({1});
  auto where = Function::composite(Function::primitive("Where", {c}, {}, "w"));
  const Variable& out = where->output();
  ASSERT_EQ(out.dynamic_axes().size(), 2u);
  EXPECT_NE(out.dynamic_axes()[1], c.dynamic_axes()[1]);
  Value data = Value::from_sequences({column({1, 0, 1, 1}), column({0, 0}), column({0, 1, 0})});
  std::vector<Value> outs;
  forward(where, {{c, data}}, {}, outs, false);
  ASSERT_EQ(outs.size(), 1u);
  ASSERT_TRUE(outs[0].mask());
  EXPECT_EQ(outs[0].mask()->lengths(), (std::vector<int64_t>{3, 0, 1}));
  std::vector<NDArrayView> seqs = outs[0].unpack(1);
  ASSERT_EQ(seqs.size(), 3u);
  EXPECT_EQ(values_of(seqs[0]), (std::vector<double>{0, 2, 3}));
  EXPECT_EQ(seqs[1].numel(), 0);
  EXPECT_EQ(values_of(seqs[2]), (std::vector<double>{1}));
}

TEST(SequenceOps, SparseTimesIsARowGather) {
  auto x = sequence_input({5}, true);
  NDArrayView w(DataType::Float, NDShape{5, 2});
  for (int64_t i = 0; i < 10; ++i) w.data<float>()[i] = float(i);
  auto param = Variable::parameter({5, 2}, DataType::Float, w, nullptr, "W");
  auto f = Function::composite(Function::primitive("Times", {x, param}, {}, "e"));
  Value data = Value::one_hot({{4, 0}, {2}}, 5, DataType::Float, true);
  ASSERT_TRUE(data.is_sparse());
  std::vector<Value> outs;
  auto state = forward(f, {{x, data}}, {}, outs, true);
  std::vector<NDArrayView> seqs = outs[0].unpack(1);
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(values_of(seqs[0]), (std::vector<double>{8, 9, 0, 1}));
  EXPECT_EQ(values_of(seqs[1]), (std::vector<double>{4, 5}));
  // The gradient for W (root gradient: ones on the valid steps) counts each row's uses.
  NDArrayView ones = NDArrayView::full(DataType::Float, outs[0].shape(), 1.0);
  std::vector<Value> grads;
  backward(state, {{f->output(), Value(ones, outs[0].mask())}}, {param}, grads);
  EXPECT_EQ(values_of(grads[0].data()), (std::vector<double>{1, 1, 0, 0, 1, 1, 0, 0, 1, 1}));
}
