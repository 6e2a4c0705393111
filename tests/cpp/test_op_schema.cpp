// The op catalogue's schema: register_op rejects malformed entries, attribute reads take
// their defaults from the declaration, and primitives reject keys their op does not declare.
#include <gtest/gtest.h>

#include "cntk/ops.h"
#include "ops/op.h"

using namespace cntk;

namespace {

OpDef valid_op(const std::string& name) {
  OpDef d;
  d.name = name;
  d.inputs = {{"x"}};
  d.attrs = {{"scale", AttrType::Double, 2.0}};
  d.infer = infer_same_shape;
  d.forward = [](ComputeContext& ctx) { return ctx.inputs; };
  d.backward = [](ComputeContext& ctx, size_t) { return ctx.grad_outputs[0]; };
  return d;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OpSchema, RegisterRejectsDifferentiableInputWithoutRule) {
  OpDef d = valid_op("SchemaTestNoRule");
  d.backward = nullptr;
  std::string what = error_of([&] { register_op(d); });
  EXPECT_NE(what.find("input 'x' is differentiable"), std::string::npos) << what;
  EXPECT_EQ(find_op("SchemaTestNoRule"), nullptr);
  // With the input declared zero by definition, the same entry is accepted.
  d.inputs = {{"x", Gradient::Zero}};
  d.gradient = Gradient::Zero;
  register_op(d);
  EXPECT_NE(find_op("SchemaTestNoRule"), nullptr);
}

TEST(OpSchema, RegisterRejectsMalformedAttributes) {
  OpDef twice = valid_op("SchemaTestTwice");
  twice.attrs.push_back({"scale", AttrType::Double, 1.0});
  EXPECT_NE(error_of([&] { register_op(twice); }).find("declared twice"), std::string::npos);

  OpDef typed = valid_op("SchemaTestBadDefault");
  typed.attrs = {{"scale", AttrType::Int, std::string("two")}};
  EXPECT_NE(error_of([&] { register_op(typed); }).find("is not a int"), std::string::npos);

  OpDef axes = valid_op("SchemaTestAxisOrder");
  axes.attrs = {{"axis", AttrType::Axis}};  // axes without an order
  EXPECT_NE(error_of([&] { register_op(axes); }).find("axis order"), std::string::npos);

  OpDef nameless = valid_op("SchemaTestNoKey");
  nameless.attrs = {{"", AttrType::Int, 0}};
  EXPECT_NE(error_of([&] { register_op(nameless); }).find("without a key"), std::string::npos);

  OpDef variadic = valid_op("SchemaTestVariadic");
  variadic.inputs = {{"xs", Gradient::Rule, true}, {"y"}};
  EXPECT_NE(error_of([&] { register_op(variadic); }).find("variadic"), std::string::npos);

  for (auto* name :
       {"SchemaTestTwice", "SchemaTestBadDefault", "SchemaTestAxisOrder", "SchemaTestNoKey", "SchemaTestVariadic"})
    EXPECT_EQ(find_op(name), nullptr) << name;
}

TEST(OpSchema, ReadsTakeDeclaredDefaults) {
  register_op(valid_op("SchemaTestDefaults"));
  const OpDef* op = find_op("SchemaTestDefaults");
  ASSERT_NE(op, nullptr);
  Dictionary none, given{{"scale", 0.5}};
  EXPECT_EQ(op_attr_double("SchemaTestDefaults", none, "scale"), 2.0);
  EXPECT_EQ(op_attr_double("SchemaTestDefaults", given, "scale"), 0.5);
  // Reading a key the op does not declare is a programming error.
  EXPECT_NE(error_of([&] { op_attr_double("SchemaTestDefaults", none, "shift"); }).find("does not declare"),
            std::string::npos);
  // Times' output rank: one declaration, read everywhere.
  EXPECT_EQ(op_attr_int("Times", none, "outputRank"), 1);
  EXPECT_EQ(op_attr_int("Times", none, "inferInputRankToMap"), -1);
}

TEST(OpSchema, PrimitiveRejectsUndeclaredKey) {
  auto x = Variable::input({3}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  try {
    Function::primitive("Tanh", {x}, {{"alpha", 1.0}});
    FAIL() << "an undeclared key was accepted";
  } catch (const ValueError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("Tanh"), std::string::npos) << what;
    EXPECT_NE(what.find("alpha"), std::string::npos) << what;
  }
  // A declared key of the wrong type is a TypeError; a declared one is taken.
  EXPECT_THROW(Function::primitive("ELU", {x}, {{"alpha", std::string("one")}}), TypeError);
  EXPECT_NO_THROW(Function::primitive("ELU", {x}, {{"alpha", 0.5}}));
}

TEST(OpSchema, CatalogueEntriesAreComplete) {
  for (auto& name : registered_ops()) {
    const OpDef* op = find_op(name);
    ASSERT_NE(op, nullptr);
    // CNTK's op numbers: every number names one op, and back.
    if (op->op_type >= 0) {
      EXPECT_EQ(cntk_op_name(op->op_type), name);
      EXPECT_EQ(cntk_op_number(name), op->op_type);
    }
    for (size_t i = 0; i < op->inputs.size(); ++i)
      if (op->inputs[i].gradient == Gradient::Rule) EXPECT_TRUE(bool(op->backward)) << name;
  }
  EXPECT_EQ(cntk_op_name(57), "Block");
  EXPECT_EQ(cntk_op_number("Sigmoid"), 1);
  EXPECT_EQ(cntk_op_number("Plus"), 19);
  EXPECT_TRUE(find_op("PastValue")->is(kDelay));
  EXPECT_TRUE(find_op("Plus")->is(kElementwiseBinary));
  EXPECT_TRUE(find_op("Tanh")->is(kElementwiseUnary));
  EXPECT_TRUE(bool(find_op("LeakyReLU")->cntk_block));
}
