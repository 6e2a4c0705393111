// Helpers of the reader rules for ONNX's math and tensor-movement ops: ONNX axes as the
// engine's static axes, axes given as an attribute or (newer opsets) as an input, and the
// element type that a data-movement op passes on.
#pragma once
#include <string>
#include <vector>

#include "onnx/import.h"

namespace cntk::onnx_io {

// ONNX axis `a` of input i (rank: its dynamic and static dims together, negative counting
// from the end) as a static axis of the engine. An axis on a dynamic dim (sequence, batch of
// a model OpenCNTK wrote) has no static counterpart.
inline int64_t static_axis_of(ImportContext& c, size_t i, int64_t a, int64_t extra_rank = 0) {
  const int64_t nd = c.input_dyn(i), rank = nd + int64_t(c.input(i).shape().rank()) + extra_rank;
  if (a < -rank || a >= rank) c.fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  if (a < 0) a += rank;
  if (a < nd) c.fail("axis " + std::to_string(a) + " is a dynamic axis (sequence or batch) of the input");
  return a - nd;
}

// The `axes` of a node: its attribute before opset `input_since`, its input `index` from then.
// Empty where absent.
inline std::vector<int64_t> axes_of(ImportContext& c, int input_since, size_t index, const std::string& name = "axes") {
  if (c.opset() < input_since) return c.attr_ints(name, std::vector<int64_t>{});
  if (!c.has_input(index)) return {};
  auto v = c.constant_input_i64(index);
  if (!v) c.fail("its " + name + " input must be known while reading (an initializer or computed from constants)");
  return *v;
}

// Outputs of a data-movement rule keep the ONNX element type of input i.
inline std::vector<Variable> keep_type(ImportContext& c, size_t i, std::vector<Variable> outs) {
  const int32_t t = c.input_elem_type(i);
  if (t != ::onnx::TensorProto::FLOAT && t != ::onnx::TensorProto::DOUBLE && t != ::onnx::TensorProto::FLOAT16)
    for (size_t k = 0; k < outs.size(); ++k) c.set_output_elem_type(k, t);
  return outs;
}

// ONNX's (IEEE) natural log of x: NaN below 0, -inf at 0, exact below the engine's clip
// (import_elementwise.cpp).
Variable ieee_log(ImportContext& c, const Variable& x);

// Softmax over static axis `axis` of a float16 x step by step, each step rounded to float16
// (exp(x - max), then divided by its sum), as ONNX's reference computes it: the engine's
// Softmax rounds once and differs by an ulp or two (import_nn.cpp).
Variable float16_softmax(ImportContext& c, const Variable& x, const Axis& axis);

inline DictValue axis_list(const std::vector<int64_t>& axes) {
  DictValue::List l;
  for (int64_t a : axes) l.emplace_back(Axis(int(a)));
  return l;
}
inline DictValue int_list(const std::vector<int64_t>& v) {
  DictValue::List l;
  for (int64_t x : v) l.emplace_back(x);
  return l;
}

}  // namespace cntk::onnx_io
