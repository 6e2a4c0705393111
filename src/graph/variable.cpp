#include "cntk/variable.h"

#include <atomic>

#include "cntk/function.h"
#include "cntk/random.h"

namespace cntk {

std::string new_uid(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  return std::string(prefix) + std::to_string(counter++);
}

namespace {

// Dimensions must be sizes, or the markers a kind of variable may carry.
void check_dims(const NDShape& shape, bool allow_free, const char* what) {
  for (auto d : shape.dims())
    if (d < 0 && d != NDShape::kInferredDimension && !(allow_free && d == NDShape::kFreeDimension))
      throw ValueError(std::string(what) + ": shape " + shape.str() +
                       " has a dimension that is neither a size, InferredDimension" +
                       (allow_free ? " nor FreeDimension" : ""));
}

}  // namespace

Variable Variable::input(const NDShape& shape, DataType dtype, bool is_sparse, bool needs_gradient,
                         std::vector<Axis> dynamic_axes, const std::string& name) {
  check_dims(shape, true, "input_variable");
  if (dtype == DataType::Unknown) throw TypeError("input_variable: unknown data type");
  auto v = std::make_shared<VariableImpl>();
  v->kind = VariableKind::Input;
  v->shape = shape;
  v->dtype = dtype;
  v->is_sparse = is_sparse;
  v->needs_gradient = needs_gradient;
  v->dynamic_axes = std::move(dynamic_axes);
  v->name = name;
  v->uid = new_uid("Input");
  if (is_sparse && shape.rank() == 0) throw ValueError("input_variable: a sparse input needs at least one axis");
  return Variable(v);
}

Variable Variable::parameter(const NDShape& shape, DataType dtype, const NDArrayView& value,
                             std::shared_ptr<Dictionary> init, const std::string& name) {
  check_dims(shape, false, "parameter");
  auto v = std::make_shared<VariableImpl>();
  v->kind = VariableKind::Parameter;
  v->shape = shape;
  v->dtype = dtype;
  v->needs_gradient = true;
  v->name = name;
  v->uid = new_uid("Parameter");
  if (value.defined()) {
    if (value.shape() != shape)
      throw ValueError("parameter: value of shape " + value.shape().str() + " given for shape " + shape.str());
    v->value = value.dtype() == dtype ? value : value.cast(dtype);
  } else {
    if (!init) throw ValueError("parameter: needs an initial value or an initializer");
    v->init = std::move(init);
    // An initializer asking for an automatic seed gets it now, once per parameter
    // (as CNTK does), so that one initializer object shared by several parameters
    // gives each its own values, whenever the shape becomes known.
    auto seed = v->init->find("randomSeed");
    if (seed != v->init->end() && seed->second.is<int64_t>() && seed->second.as_int() < 0)
      seed->second = DictValue(int64_t(next_random_seed()));
    // Without a type yet (CNTK's DataType::Unknown) the first op it joins gives it one.
    if (!shape.has_inferred() && dtype != DataType::Unknown) v->value = initialize_parameter(*v->init, shape, dtype);
  }
  return Variable(v);
}

Variable Variable::constant(const NDArrayView& value, const std::string& name) {
  auto v = std::make_shared<VariableImpl>();
  v->kind = VariableKind::Constant;
  v->shape = value.shape();
  v->dtype = value.dtype();
  v->name = name;
  v->uid = new_uid("Constant");
  v->value = value;
  return Variable(v);
}

Variable Variable::constant(const NDShape& shape, DataType dtype, double fill, const std::string& name) {
  if (shape.is_unknown() || shape.has_free())
    throw ValueError("constant: shape " + shape.str() + " must be known or have only inferred dimensions");
  check_dims(shape, false, "constant");
  if (!shape.has_inferred()) return constant(NDArrayView::full(dtype, shape, fill), name);
  auto v = std::make_shared<VariableImpl>();
  v->kind = VariableKind::Constant;
  v->shape = shape;
  v->dtype = dtype;
  v->name = name;
  v->uid = new_uid("Constant");
  v->init = std::make_shared<Dictionary>(Dictionary{{"type", DictValue("constant")}, {"value", DictValue(fill)}});
  return Variable(v);
}

Variable Variable::placeholder(const NDShape& shape, std::vector<Axis> dynamic_axes, const std::string& name) {
  auto v = std::make_shared<VariableImpl>();
  v->kind = VariableKind::Placeholder;
  v->shape = shape;
  v->dynamic_axes = std::move(dynamic_axes);
  v->name = name;
  v->uid = new_uid("Placeholder");
  return Variable(v);
}

FunctionPtr Variable::owner() const {
  if (owner_ref_) return owner_ref_;
  if (impl_ && impl_->owner) return impl_->owner->shared_from_this();
  return nullptr;
}

const NDArrayView& Variable::value() const {
  if (!is_parameter() && !is_constant()) throw ValueError("value(): " + str() + " is not a parameter or a constant");
  if (!impl_->value.defined()) {
    if (impl_->shape.has_inferred() || impl_->shape.is_unknown())
      throw ValueError("value(): " + str() +
                       " has inferred dimensions that are not known yet; use it in a graph first");
    if (!impl_->init) throw ValueError("value(): " + str() + " has no value");
    impl_->value = initialize_parameter(*impl_->init, impl_->shape, impl_->dtype);
  }
  return impl_->value;
}

void Variable::set_value(const NDArrayView& v) {
  if (!is_parameter() && !is_constant())
    throw ValueError("set_value(): " + str() + " is not a parameter or a constant");
  if (v.shape() != impl_->shape)
    throw ValueError("set_value(): shape " + v.shape().str() + " does not match " + impl_->shape.str());
  if (!impl_->value.defined()) impl_->value = NDArrayView(impl_->dtype, impl_->shape);
  impl_->value.copy_from(v);
  ++impl_->value_version;
}

std::string Variable::str() const {
  if (!impl_) return "Variable(<undefined>)";
  // CNTK's form: Input('x', [#, *], [3 x 4]) -- dynamic axes (# batch, * sequence), then the shape.
  static const char* kinds[] = {"Input", "Output", "Parameter", "Constant", "Placeholder"};
  std::string axes;
  if (is_parameter() || is_constant()) {
    axes = "[]";
  } else {
    bool unknown = false;
    for (auto& a : dynamic_axes()) unknown = unknown || a.name() == "UnknownAxes";
    if (unknown) {
      axes = "[???]";
    } else {
      for (auto& a : dynamic_axes()) axes += std::string(axes.empty() ? "" : ", ") + (a.is_batch() ? "#" : "*");
      axes = "[" + axes + "]";
    }
  }
  std::string dims;
  if (shape().is_unknown()) {
    dims = "???";
  } else {
    for (size_t i = 0; i < shape().rank(); ++i) {
      int64_t d = shape()[i];
      dims += (i ? " x " : "") + (d == NDShape::kInferredDimension ? std::string("?")
                                  : d == NDShape::kFreeDimension   ? std::string("free")
                                                                   : std::to_string(d));
    }
  }
  return std::string(kinds[int(kind())]) + "('" + name() + "', " + axes + ", [" + dims + "])";
}

}  // namespace cntk
