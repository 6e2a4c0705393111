// ONNX's image ops (Conv, pooling, BatchNormalization, LRN) take [N, C, spatial...] with
// one leading N. The writer's tensor is [Sequence?, batch?, static...]: with the batch axis
// alone it is that form already; without dynamic axes a leading 1 is added and taken off
// again; sequence and batch are merged into N and split again after the op.
#pragma once
#include "onnx/export.h"

namespace cntk::onnx_io {

// `emit(x, out)` writes the op over x ([N, C, ...]), naming its result `out` where not
// empty, and returns the result's name; input i is the operand, output 0 the result.
template <class Emit>
void over_batch_export(ExportContext& c, size_t i, Emit emit) {
  const int dyn = c.input_dyn(i);
  const NDShape out = c.output_var(0).shape();
  if (dyn == 1) {
    emit(c.input(i), c.output(0));
    return;
  }
  if (!out.is_known()) c.unsupported("an operand without a batch axis and an output of free size");
  if (dyn == 0) {
    std::string y = emit(c.unsqueeze(c.input(i), {0}), "");
    c.node1("Reshape", {y, c.constant_i64(out.dims())}, {}, c.output(0));
    return;
  }
  const NDShape in = c.input_var(i).shape();
  if (!in.is_known()) c.unsupported("a sequence operand of free size");
  if (c.opset() < 10) c.unsupported("a sequence operand below opset 10");
  std::vector<int64_t> flat{-1};
  for (auto d : in.dims()) flat.push_back(d);
  std::string x = c.node1("Reshape", {c.input(i), c.constant_i64(flat)});
  std::string y = emit(x, "");
  std::string lead = c.node1("Slice", {c.node1("Shape", {c.input(i)}), c.constant_i64({0}), c.constant_i64({2})});
  std::string shape = c.node1("Concat", {lead, c.constant_i64(out.dims())}, {Attr("axis", int64_t(0))});
  c.node1("Reshape", {y, shape}, {}, c.output(0));
}

}  // namespace cntk::onnx_io
