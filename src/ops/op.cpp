// The registry and the helpers every shape rule and kernel shares.
#include "ops/op.h"

#include <map>
#include <memory>
#include <sstream>

#include "kernels/backend.h"
#include "kernels/cpu/reduce.h"

namespace cntk {

void register_all_op_families();  // registry.cpp

namespace {
std::map<std::string, OpDef>& table() {
  static std::map<std::string, OpDef> t;
  return t;
}
void ensure_registered() {
  static bool done = [] {
    register_all_op_families();
    return true;
  }();
  (void)done;
}
}  // namespace

void register_op(OpDef def) {
  auto name = def.name;
  if (!table().emplace(name, std::move(def)).second) throw Error("op '" + name + "' registered twice");
}

const OpDef* find_op(const std::string& name) {
  ensure_registered();
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_ops() {
  ensure_registered();
  std::vector<std::string> out;
  for (auto& kv : table()) out.push_back(kv.first);
  return out;
}

void InferContext::fail(const std::string& what) const {
  std::ostringstream os;
  os << op_ << ": " << what << " (input shapes:";
  for (size_t i = 0; i < inputs_.size(); ++i) os << (i ? ", " : " ") << inputs_[i].shape().str();
  os << ")";
  throw ShapeError(os.str());
}

void InferContext::fail_type(const std::string& what) const {
  std::ostringstream os;
  os << op_ << ": " << what << " (input types:";
  for (size_t i = 0; i < inputs_.size(); ++i) os << (i ? ", " : " ") << to_string(inputs_[i].dtype());
  os << ")";
  throw TypeError(os.str());
}

void InferContext::expect_inputs(size_t n) const {
  if (inputs_.size() != n)
    fail("expects " + std::to_string(n) + " inputs, got " + std::to_string(inputs_.size()));
}

bool& inferring_from_guessed_state() {
  thread_local bool guessed = false;
  return guessed;
}

void InferContext::fill_inferred(size_t i, const NDShape& shape) {
  Variable& v = inputs_[i];
  if (v.shape() == shape) return;
  if (inferring_from_guessed_state() && v.is_parameter())
    fail("cannot infer the shape of parameter " + v.str() + " from the state of a recurrent loop, which is not "
         "known yet");
  if (v.shape().rank() == shape.rank()) {
    for (size_t k = 0; k < shape.rank(); ++k)
      if (v.shape()[k] != NDShape::kInferredDimension && v.shape()[k] != shape[k])
        fail("input " + std::to_string(i) + " of shape " + v.shape().str() + " cannot take shape " + shape.str());
  } else if (!v.shape().has_inferred()) {
    fail("cannot infer the shape of input " + std::to_string(i));
  }
  // Otherwise an inferred dimension stands for several axes (Dense over a whole input).
  // As in CNTK, only parameters, constants (and placeholders) take on an inferred shape;
  // an input keeps its inferred dimensions, which its data then fills in as free ones.
  if (!(v.is_parameter() || v.is_constant() || v.is_placeholder())) return;
  v.impl()->shape = shape;
  if (v.is_parameter() && !v.impl()->value.defined() && shape.is_known() && v.impl()->init)
    v.impl()->value = initialize_parameter(*v.impl()->init, shape, v.dtype());
}

std::vector<Axis> InferContext::unified_dynamic_axes() const {
  std::vector<Axis> best;
  for (auto& v : inputs_)
    if (v.dynamic_axes().size() > best.size()) best = v.dynamic_axes();
  for (auto& v : inputs_)
    for (auto& a : v.dynamic_axes()) {
      bool found = false;
      for (auto& b : best) found = found || a == b;
      if (!found) {
        std::ostringstream os;
        os << "inputs have incompatible dynamic axes (";
        for (size_t i = 0; i < inputs_.size(); ++i) {
          os << (i ? "; " : "");
          for (auto& ax : inputs_[i].dynamic_axes()) os << ax.name() << " ";
        }
        os << ")";
        fail(os.str());
      }
    }
  return best;
}

DataType InferContext::common_dtype() const {
  DataType t = DataType::Unknown;
  for (auto& v : inputs_) {
    DataType d = v.dtype();
    if (t == DataType::Unknown || (t == DataType::Float && d == DataType::Double))
      t = d;
    else if (d != t && !(t == DataType::Double && d == DataType::Float))
      fail_type("inputs have incompatible data types");
  }
  return t == DataType::Unknown ? DataType::Float : t;
}

std::vector<OutputInfo> infer_same_shape(InferContext& ctx) {
  ctx.expect_inputs(1);
  return ctx.one(ctx.shape(0));
}

NDShape broadcast_shapes(const InferContext& ctx, const std::vector<NDShape>& shapes) {
  size_t r = 0;
  for (auto& s : shapes) r = std::max(r, s.rank());
  std::vector<int64_t> out(r, 1);
  for (auto& s : shapes) {
    size_t pad = r - s.rank();
    for (size_t i = 0; i < s.rank(); ++i) {
      int64_t d = s[i], &o = out[pad + i];
      if (d == 1) continue;
      if (o == 1 || o == NDShape::kInferredDimension)
        o = d;
      else if (d == NDShape::kInferredDimension)
        continue;
      else if (d == NDShape::kFreeDimension)
        continue;  // a known dimension (other than 1) wins over a free one, as in CNTK
      else if (o == NDShape::kFreeDimension)
        o = d;
      else if (d != o)
        ctx.fail("operands cannot be broadcast together");
    }
  }
  return NDShape(out);
}

NDShape broadcast_inputs(InferContext& ctx) {
  std::vector<NDShape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.shape(i));
  NDShape out = broadcast_shapes(ctx, shapes);
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const NDShape& s = shapes[i];
    if (!s.has_inferred()) continue;
    const Variable& v = ctx.input(i);
    if (!(v.is_parameter() || v.is_constant() || v.is_placeholder())) continue;
    NDShape filled = s;
    size_t pad = out.rank() - s.rank();
    for (size_t k = 0; k < s.rank(); ++k)
      if (s[k] == NDShape::kInferredDimension && out[pad + k] >= 0) filled[k] = out[pad + k];
    if (filled.has_inferred()) continue;  // nothing to learn it from yet
    ctx.fill_inferred(i, filled);
  }
  return out;
}

NDArrayView ComputeContext::aligned(size_t i, size_t static_rank) const {
  const NDArrayView& x = inputs[i];
  size_t srank = x.rank() - in_dyn[i];
  if (srank > static_rank) throw Error("aligned: static rank larger than requested");
  std::vector<int64_t> dims;
  for (auto& a : out_axes) {
    int64_t d = 1;
    for (int k = 0; k < in_dyn[i]; ++k)
      if (in_axes[i][k] == a) d = x.shape()[k];
    dims.push_back(d);
  }
  for (size_t k = srank; k < static_rank; ++k) dims.push_back(1);
  for (size_t k = 0; k < srank; ++k) dims.push_back(x.shape()[in_dyn[i] + k]);
  return x.reshape(NDShape(dims));
}

NDArrayView ComputeContext::reduce_to_input(size_t i, const NDArrayView& grad) const {
  const NDShape& target = inputs[i].shape();
  NDArrayView g = grad;
  size_t srank = grad.rank() - out_dyn;
  NDShape aligned_shape = aligned(i, srank).shape();
  if (g.shape() != aligned_shape) g = kernels::sum_to(g, aligned_shape);
  return g.reshape(target);
}

NDShape ComputeContext::input_shape(size_t i) const {
  if (inputs[i].defined()) return inputs[i].shape();
  if (const LayoutValue* v = layout_input(i)) return v->shape;
  return inputs[i].shape();
}

const NDArrayView& ComputeContext::input(size_t i) {
  if (!inputs[i].defined() && layout_input(i)) {
    if (!make_plain) throw Error("'" + (fn ? fn->op_name() : std::string("?")) + "': an input in a backend layout and no way to make it plain");
    inputs[i] = make_plain(false, i);
  }
  return inputs[i];
}

const NDArrayView& ComputeContext::output(size_t k) {
  if (!outputs[k].defined() && layout_output(k)) {
    if (!make_plain) throw Error("'" + (fn ? fn->op_name() : std::string("?")) + "': an output in a backend layout and no way to make it plain");
    outputs[k] = make_plain(true, k);
  }
  return outputs[k];
}

const NDArrayView& ComputeContext::grad_output(size_t k) {
  if (!grad_outputs[k].defined() && layout_grad_output(k)) grad_outputs[k] = kernels::to_plain(*layout_grad_outputs[k]);
  return grad_outputs[k];
}

std::shared_ptr<RandomState> initial_random_state(const Dictionary& attrs) {
  auto rs = std::make_shared<RandomState>();
  rs->engine = rng::make_engine(uint64_t(attr_int(attrs, "rngSeed", 0)), uint64_t(attr_int(attrs, "rngOffset", 0)));
  return rs;
}

RandomStream ComputeContext::random() {
  return RandomStream(fn->op_state_or<RandomState>([this] { return initial_random_state(*attrs); }));
}

}  // namespace cntk
