// ONNX's control flow read at read time: Scan (other than OpenCNTK's own), Loop and If.
//
// The engine has no data-dependent control flow, so these nodes are read where what steers
// them is known while reading:
// - Scan: its scanned length is a static dimension, so the body is read once per iteration
//   (unrolled), each copy reading the previous copy's states and its slice of the scan inputs;
//   the scan outputs are stacked along their axes. A Scan written by OpenCNTK (a recurrent loop
//   over the Sequence dimension) is read as that loop again (import_rnn.cpp).
// - Loop: its trip count and condition are known at each iteration (computed from constants),
//   so the body is read once per iteration, as Scan's.
// - If: its condition is known, so only the taken branch is read.
// Otherwise the node is refused (ValueError naming it).
//
// Body inputs whose values are known (the iteration number, the condition, loop-carried values
// computed from constants alone) are bound as Constant nodes of the body, so that the body's
// shape, index and condition values computed from them fold while reading, as in the
// enclosing graph.
#include <algorithm>
#include <optional>

#include "cntk/evaluation.h"
#include "onnx/import.h"
#include "onnx/import_control.h"
#include "onnx/tensor.h"

namespace cntk::onnx_io {

namespace {

// How many iterations an unrolled Loop may take before the reader gives up on it.
constexpr int64_t kMaxUnrolledIterations = 10000;

// v's value where it is computed from constants (and, with `parameters`, parameters) alone.
std::optional<NDArrayView> known_value(const Variable& v, bool parameters) {
  if (v.is_constant()) return v.value();
  if (v.is_parameter()) return parameters ? std::optional<NDArrayView>(v.value()) : std::nullopt;
  if (!v.is_output() || !v.dynamic_axes().empty() || !v.shape().is_known()) return std::nullopt;
  FunctionPtr f = Function::composite(v.owner());
  if (!f->arguments().empty() || !f->placeholders().empty()) return std::nullopt;
  if (!parameters && !f->parameters().empty()) return std::nullopt;
  std::vector<Value> vals;
  forward(f, {}, {v}, vals, false);
  return vals.at(0).data().copy();
}

struct Builder {
  ImportContext& c;

  Variable op(const std::string& name, std::vector<Variable> in, Dictionary attrs = {}) {
    return c.primitive(name, std::move(in), std::move(attrs))->output();
  }
  Variable reshape(const Variable& x, const std::vector<int64_t>& dims) {
    return op("Reshape", {x}, {{"newShape", NDShape(dims)}});
  }
  // x's entry `t` along `axis`, the axis dropped.
  Variable take(const Variable& x, int64_t axis, int64_t t) {
    auto dims = x.shape().dims();
    Variable s = op("Slice", {x}, {{"axis", Axis(int(axis))}, {"beginIndex", t}, {"endIndex", t + 1}});
    dims.erase(dims.begin() + axis);
    return reshape(s, dims);
  }
  // The parts stacked along a new axis `axis` (of the result's rank; negative from the end).
  Variable stack(const std::vector<Variable>& parts, int64_t axis, const std::string& what) {
    const auto dims = parts.at(0).shape().dims();
    const int64_t rank = int64_t(dims.size()) + 1;
    if (axis < -rank || axis >= rank) c.fail(what + ": the axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    std::vector<Variable> each;
    for (const Variable& p : parts) {
      if (p.shape().dims() != dims) c.fail(what + ": the iterations' values differ in shape");
      auto d = dims;
      d.insert(d.begin() + axis, 1);
      each.push_back(reshape(p, d));
    }
    return each.size() == 1 ? each[0] : op("Splice", each, {{"axis", Axis(int(axis))}});
  }

  // Reads the body with its inputs bound to `inputs`; those known while reading (`known`, else
  // computed from constants alone) become Constant nodes of the body.
  std::vector<Variable> read_body(const ::onnx::GraphProto& body, const std::vector<Variable>& inputs,
                                  const std::vector<std::optional<NDArrayView>>& known = {}) {
    if (int(inputs.size()) != body.input_size())
      c.fail("its body '" + body.name() + "' takes " + std::to_string(body.input_size()) + " inputs, not " +
             std::to_string(inputs.size()));
    ::onnx::GraphProto g;
    std::vector<Variable> bound;
    std::vector<::onnx::NodeProto> constants;
    for (int k = 0; k < body.input_size(); ++k) {
      const auto& vi = body.input(k);
      std::optional<NDArrayView> v = size_t(k) < known.size() ? known[size_t(k)] : std::nullopt;
      if (!v) v = known_value(inputs[size_t(k)], false);
      if (!v) {
        *g.add_input() = vi;
        bound.push_back(inputs[size_t(k)]);
        continue;
      }
      ::onnx::NodeProto n;
      n.set_op_type("Constant");
      n.add_output(vi.name());
      auto* a = n.add_attribute();
      a->set_name("value");
      a->set_type(::onnx::AttributeProto::TENSOR);
      const int32_t t = vi.type().tensor_type().elem_type();
      if (t && !is_float_type(t)) {
        const NDArrayView d = v->cast(DataType::Double).contiguous();
        std::vector<int64_t> ints(size_t(d.numel()));
        for (int64_t j = 0; j < d.numel(); ++j) ints[size_t(j)] = float_to_i64(std::round(d.data<double>()[j]));
        i64_to_tensor(ints, d.shape().dims(), *a->mutable_t());
        if (t == ::onnx::TensorProto::BOOL) {  // booleans as int32_data, 0 or 1
          a->mutable_t()->clear_raw_data();
          a->mutable_t()->set_data_type(t);
          for (int64_t x : ints) a->mutable_t()->add_int32_data(x != 0);
        }
      } else {
        view_to_tensor(*v, *a->mutable_t());
      }
      constants.push_back(std::move(n));
    }
    for (auto& n : constants) *g.add_node() = std::move(n);
    for (const auto& n : body.node()) *g.add_node() = n;
    for (const auto& t : body.initializer()) *g.add_initializer() = t;
    for (const auto& o : body.output()) *g.add_output() = o;
    g.set_name(body.name());
    return c.read_subgraph(g, bound);
  }

  // The body's outputs' element types declared as the node's outputs' (from `from` on).
  void declare_output_types(const ::onnx::GraphProto& body, int from, size_t first_output) {
    for (int k = from; k < body.output_size(); ++k) {
      const auto& type = body.output(k).type();
      if (type.has_sequence_type() || type.has_optional_type() || type.has_map_type())
        c.fail("its body's output '" + body.output(k).name() + "' is not a tensor (sequences are not read)");
      if (type.tensor_type().elem_type())
        c.set_output_elem_type(first_output + size_t(k - from), type.tensor_type().elem_type());
    }
  }
};

bool known_true(const NDArrayView& v) {
  const NDArrayView d = v.cast(DataType::Double).contiguous();
  return d.numel() > 0 && d.data<double>()[0] != 0;
}

// The Scan body over static scanned lengths, unrolled: states and scanned values as the body
// takes them (scan input j scanned along in_axes[j], backward where in_dirs[j]), returning the
// final states then the scan outputs stacked along out_axes (in reverse where out_dirs).
std::vector<Variable> unroll_scan(Builder& b, const ::onnx::GraphProto& body, std::vector<Variable> states,
                                  const std::vector<Variable>& scans, const std::vector<int64_t>& in_axes,
                                  const std::vector<int64_t>& in_dirs, const std::vector<int64_t>& out_axes,
                                  const std::vector<int64_t>& out_dirs) {
  const size_t N = states.size(), M = scans.size(), K = out_axes.size();
  int64_t S = -1;
  std::vector<int64_t> axes(M);
  for (size_t j = 0; j < M; ++j) {
    const Variable& x = scans[j];
    if (!x.dynamic_axes().empty()) b.c.fail("scan input " + std::to_string(j) + " has dynamic axes");
    const int64_t rank = int64_t(x.shape().rank());
    int64_t a = in_axes[j] < 0 ? in_axes[j] + rank : in_axes[j];
    if (a < 0 || a >= rank) b.c.fail("scan input " + std::to_string(j) + "'s axis is out of range");
    axes[j] = a;
    const int64_t len = x.shape().dims()[size_t(a)];
    if (len < 0) b.c.fail("scan input " + std::to_string(j) + "'s scanned length is not known while reading");
    if (S >= 0 && len != S) b.c.fail("the scan inputs' scanned lengths differ");
    S = len;
  }
  if (S <= 0) b.c.fail("a Scan of no iterations is not read");
  std::vector<std::vector<Variable>> per_out(K);
  for (int64_t t = 0; t < S; ++t) {
    std::vector<Variable> in = states;
    for (size_t j = 0; j < M; ++j) in.push_back(b.take(scans[j], axes[j], in_dirs[j] ? S - 1 - t : t));
    std::vector<Variable> outs = b.read_body(body, in);
    if (outs.size() != N + K) b.c.fail("its body's outputs do not match the Scan's");
    states.assign(outs.begin(), outs.begin() + std::ptrdiff_t(N));
    for (size_t k = 0; k < K; ++k) per_out[k].push_back(outs[N + k]);
  }
  std::vector<Variable> result = states;
  for (size_t k = 0; k < K; ++k) {
    if (out_dirs[k]) std::reverse(per_out[k].begin(), per_out[k].end());
    result.push_back(b.stack(per_out[k], out_axes[k], "scan output " + std::to_string(k)));
  }
  return result;
}

std::vector<int64_t> per_value(ImportContext& c, const char* name, size_t n) {
  auto v = c.attr_ints(name, std::vector<int64_t>(n, 0));
  if (v.size() != n) c.fail(std::string(name) + " must have one entry per scan value");
  return v;
}

// Scan from opset 9 on: states, then scan inputs, scanned along any axis in either direction.
std::vector<Variable> read_scan9(ImportContext& c) {
  if (auto engine = read_engine_scan(c)) return *engine;
  Builder b{c};
  const auto& body = c.attr_graph("body");
  const int64_t M = c.attr_int("num_scan_inputs");
  const int64_t N = int64_t(c.num_inputs()) - M;
  const int64_t K = body.output_size() - N;
  if (M <= 0 || N < 0 || K < 0 || body.input_size() != N + M)
    c.fail("the body's inputs and outputs do not match the Scan's");
  std::vector<Variable> states, scans;
  for (int64_t i = 0; i < N + M; ++i) (i < N ? states : scans).push_back(c.input(size_t(i)));
  b.declare_output_types(body, 0, 0);
  return unroll_scan(b, body, states, scans, per_value(c, "scan_input_axes", size_t(M)),
                     per_value(c, "scan_input_directions", size_t(M)), per_value(c, "scan_output_axes", size_t(K)),
                     per_value(c, "scan_output_directions", size_t(K)));
}

// Scan of opset 8: an optional sequence_lens, then states and scan inputs, all with a leading
// batch axis; the body sees one sample, scanned along axis 1. Read sample by sample.
std::vector<Variable> read_scan8(ImportContext& c) {
  Builder b{c};
  const auto& body = c.attr_graph("body");
  const int64_t M = c.attr_int("num_scan_inputs");
  const int64_t N = int64_t(c.num_inputs()) - 1 - M;
  const int64_t K = body.output_size() - N;
  if (M <= 0 || N < 0 || K < 0 || body.input_size() != N + M)
    c.fail("the body's inputs and outputs do not match the Scan's");
  const auto dirs = per_value(c, "directions", size_t(M));
  std::vector<Variable> in;
  for (int64_t i = 0; i < N + M; ++i) in.push_back(c.input(size_t(1 + i)));
  for (const Variable& x : in)
    if (x.shape().rank() < 1 || x.shape().dims()[0] < 0) c.fail("the batch dimension is not known while reading");
  const int64_t B = in[0].shape().dims()[0];
  for (int64_t j = 0; j < M; ++j)
    if (in[size_t(N + j)].shape().rank() < 2) c.fail("scan input " + std::to_string(j) + " must be [batch, seq, ...]");
  if (c.has_input(0)) {  // sequence_lens: only the full length is read
    auto lens = c.constant_input_i64(0);
    const int64_t S = in[size_t(N)].shape().dims()[1];
    if (!lens || std::any_of(lens->begin(), lens->end(), [&](int64_t l) { return l != S; }))
      c.fail("sequence_lens other than the full length (known while reading) are not read");
  }
  b.declare_output_types(body, 0, 0);
  std::vector<std::vector<Variable>> per_sample(size_t(N + K));
  for (int64_t s = 0; s < B; ++s) {
    std::vector<Variable> states, scans;
    for (int64_t i = 0; i < N + M; ++i) (i < N ? states : scans).push_back(b.take(in[size_t(i)], 0, s));
    auto outs = unroll_scan(b, body, states, scans, std::vector<int64_t>(size_t(M), 0), dirs,
                            std::vector<int64_t>(size_t(K), 0), std::vector<int64_t>(size_t(K), 0));
    for (size_t k = 0; k < outs.size(); ++k) per_sample[k].push_back(outs[k]);
  }
  std::vector<Variable> result;
  for (size_t k = 0; k < per_sample.size(); ++k) result.push_back(b.stack(per_sample[k], 0, "output"));
  return result;
}

// Loop: (trip count M, condition, loop-carried values...) -> (final values..., scan outputs...);
// the body (iteration number, condition, values...) -> (condition, values..., scan outputs...).
std::vector<Variable> read_loop(ImportContext& c) {
  Builder b{c};
  const auto& body = c.attr_graph("body");
  const int64_t N = int64_t(c.num_inputs()) - 2;
  const int64_t K = body.output_size() - 1 - N;
  if (N < 0 || K < 0 || body.input_size() != N + 2) c.fail("the body's inputs and outputs do not match the Loop's");
  std::optional<int64_t> trips;
  if (c.has_input(0)) {
    auto m = c.constant_input_i64(0);
    if (!m || m->size() != 1) c.fail("its trip count is not known while reading (only such Loops are read)");
    trips = (*m)[0];
  }
  bool cond = true;
  if (c.has_input(1)) {
    auto v = c.constant_input(1);
    if (!v) c.fail("its condition is not known while reading (only such Loops are read)");
    cond = known_true(*v);
  }
  if (!trips && !c.has_input(1)) c.fail("a Loop with neither a trip count nor a condition never ends");
  b.declare_output_types(body, 1, 0);
  std::vector<Variable> values;
  for (int64_t i = 0; i < N; ++i) values.push_back(c.input(size_t(2 + i)));
  auto per_out = std::vector<std::vector<Variable>>(size_t(K));
  int64_t i = 0;
  for (; cond && (!trips || i < *trips); ++i) {
    if (i >= kMaxUnrolledIterations)
      c.fail("it runs more than " + std::to_string(kMaxUnrolledIterations) + " iterations while reading");
    std::vector<Variable> in(2);  // the iteration number and condition: bound as known values
    in.insert(in.end(), values.begin(), values.end());
    std::vector<std::optional<NDArrayView>> known{NDArrayView::scalar(DataType::Float, double(i)),
                                                  NDArrayView::scalar(DataType::Float, 1.0)};
    auto outs = b.read_body(body, in, known);
    if (int64_t(outs.size()) != 1 + N + K) c.fail("its body's outputs do not match the Loop's");
    // (A condition computed from parameters is taken at their values while reading.)
    auto next = known_value(outs[0], true);
    if (!next) c.fail("its body's condition is not known while reading (only such Loops are read)");
    cond = known_true(*next);
    values.assign(outs.begin() + 1, outs.begin() + 1 + std::ptrdiff_t(N));
    for (int64_t k = 0; k < K; ++k) per_out[size_t(k)].push_back(outs[size_t(1 + N + k)]);
  }
  std::vector<Variable> result = values;
  for (int64_t k = 0; k < K; ++k) {
    if (!per_out[size_t(k)].empty()) {
      result.push_back(b.stack(per_out[size_t(k)], 0, "scan output " + std::to_string(k)));
      continue;
    }
    // No iterations: an empty scan output of the shape the body declares.
    const auto& tt = body.output(int(1 + N + k)).type().tensor_type();
    std::vector<int64_t> dims{0};
    for (const auto& d : tt.shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    if (!tt.has_shape() || std::count(dims.begin(), dims.end(), -1))
      c.fail("it runs no iterations, and its body leaves scan output " + std::to_string(k) + "'s shape open");
    const DataType dt = engine_type_of(tt.elem_type() ? tt.elem_type() : ::onnx::TensorProto::FLOAT, c.name());
    result.push_back(Variable::constant(NDArrayView::zeros(dt, NDShape(dims)), ""));
  }
  return result;
}

// If: only the branch its condition (known while reading) takes is read.
std::vector<Variable> read_if(ImportContext& c) {
  Builder b{c};
  auto v = c.constant_input(0);
  if (!v) c.fail("its condition is not known while reading (only such Ifs are read)");
  const auto& branch = c.attr_graph(known_true(*v) ? "then_branch" : "else_branch");
  b.declare_output_types(branch, 0, 0);
  return b.read_body(branch, {});
}

}  // namespace

void register_import_control() {
  register_onnx_import("Scan", read_scan8, 8);
  register_onnx_import("Scan", read_scan9, 9);
  register_onnx_import("Loop", read_loop, 1);
  register_onnx_import("If", read_if, 1);
}

}  // namespace cntk::onnx_io
