// The C API's graph: variables, functions (ops, composition, cloning, lookup), evaluation,
// forward/backward and model files.
#include <unordered_map>

#include "capi_internal.h"
#include "cntk/serialize.h"

using namespace cntk;
using namespace cntk::capi;

namespace {

cntk_status make_variable(const std::function<Variable()>& make, cntk_variable** out) {
  return guard([&] {
    need(out, "out");
    *out = new cntk_variable{make()};
  });
}

cntk_status make_function(const std::function<FunctionPtr()>& make, cntk_function** out) {
  return guard([&] {
    need(out, "out");
    FunctionPtr f = make();
    *out = f ? new cntk_function{std::move(f)} : nullptr;
  });
}

std::unordered_map<VariableImpl*, Variable> pairs_arg(const cntk_variable* const* from, const cntk_variable* const* to,
                                                      size_t count) {
  std::vector<Variable> a = variables_arg(from, count, "variable"), b = variables_arg(to, count, "variable");
  std::unordered_map<VariableImpl*, Variable> map;
  for (size_t i = 0; i < count; ++i) map[a[i].get()] = b[i];
  return map;
}

void write_functions(const std::vector<FunctionPtr>& fs, cntk_function** out, size_t capacity, size_t* count) {
  need(count, "count");
  if (out && capacity >= fs.size())
    for (size_t i = 0; i < fs.size(); ++i) out[i] = new cntk_function{fs[i]};
  *count = fs.size();
}

// Runs forward and hands out one new value handle per requested output.
BackPropStatePtr run_forward(const cntk_function* f, const cntk_variable* const* arguments,
                             const cntk_value* const* argument_values, size_t num_arguments,
                             const cntk_variable* const* outputs, size_t num_outputs, cntk_value** out_values,
                             bool keep) {
  need(f, "function");
  if (num_outputs) need(out_values, "output values");
  VariableValues args = bindings_arg(arguments, argument_values, num_arguments);
  std::vector<Variable> outs = variables_arg(outputs, num_outputs, "output variable");
  check_outputs_in_graph(f->fn, outs);
  std::vector<Value> values;
  BackPropStatePtr state = forward(f->fn, args, outs, values, keep);
  for (size_t i = 0; i < num_outputs; ++i) out_values[i] = new cntk_value{values[i]};
  return state;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ Variable

cntk_status cntk_variable_input(const int64_t* dims, size_t rank, cntk_dtype dtype, int is_sparse, int needs_gradient,
                                const cntk_axis* const* dynamic_axes, size_t num_axes, const char* name,
                                cntk_variable** out) {
  return make_variable(
      [&] {
        std::vector<Axis> axes =
            dynamic_axes ? axes_arg(dynamic_axes, num_axes) : Axis::default_input_variable_dynamic_axes();
        return Variable::input(shape_arg(dims, rank), dtype_arg(dtype), is_sparse != 0, needs_gradient != 0, axes,
                               str_arg(name));
      },
      out);
}

cntk_status cntk_variable_parameter(const cntk_ndarray* value, const char* name, cntk_variable** out) {
  return make_variable(
      [&] {
        const NDArrayView& v = need(value, "value")->view;
        if (v.is_sparse()) throw ValueError("Parameter: the initial value must be dense");
        return Variable::parameter(v.shape(), v.dtype(), v.copy(), nullptr, str_arg(name));
      },
      out);
}

cntk_status cntk_variable_parameter_init(const int64_t* dims, size_t rank, cntk_dtype dtype, const cntk_dict* init,
                                         const char* name, cntk_variable** out) {
  return make_variable(
      [&] {
        auto spec = std::make_shared<Dictionary>(need(init, "initializer")->dict);
        NDShape shape = shape_arg(dims, rank);
        DataType dt = dtype_arg(dtype);
        // A constant fill is no random initializer: give it as the value.
        if (attr_string(*spec, "type", "") == "constant") {
          if (!shape.is_known()) throw ValueError("Parameter: a constant fill needs a known shape, got " + shape.str());
          return Variable::parameter(shape, dt, NDArrayView::full(dt, shape, attr_double(*spec, "value", 0.0)), nullptr,
                                     str_arg(name));
        }
        return Variable::parameter(shape, dt, NDArrayView(), spec, str_arg(name));
      },
      out);
}

cntk_status cntk_variable_constant(const cntk_ndarray* value, const char* name, cntk_variable** out) {
  return make_variable([&] { return Variable::constant(need(value, "value")->view.copy(), str_arg(name)); }, out);
}

cntk_status cntk_variable_constant_filled(const int64_t* dims, size_t rank, cntk_dtype dtype, double value,
                                          const char* name, cntk_variable** out) {
  return make_variable(
      [&] { return Variable::constant(shape_arg(dims, rank), dtype_arg(dtype), value, str_arg(name)); }, out);
}

cntk_status cntk_variable_placeholder(const int64_t* dims, size_t rank, const cntk_axis* const* dynamic_axes,
                                      size_t num_axes, const char* name, cntk_variable** out) {
  return make_variable(
      [&] { return Variable::placeholder(shape_arg(dims, rank), axes_arg(dynamic_axes, num_axes), str_arg(name)); },
      out);
}

void cntk_variable_release(cntk_variable* v) { delete v; }

cntk_status cntk_variable_clone_handle(const cntk_variable* v, cntk_variable** out) {
  return make_variable([&] { return need(v, "variable")->var; }, out);
}

cntk_status cntk_variable_get_kind(const cntk_variable* v, cntk_variable_kind* out) {
  return guard([&] { *need(out, "out") = cntk_variable_kind(int(need(v, "variable")->var.kind())); });
}

cntk_status cntk_variable_shape(const cntk_variable* v, int64_t* dims, size_t capacity, size_t* rank) {
  return guard([&] { write_dims(need(v, "variable")->var.shape(), dims, capacity, rank); });
}

cntk_status cntk_variable_dtype(const cntk_variable* v, cntk_dtype* out) {
  return guard([&] { *need(out, "out") = cntk_dtype(int(need(v, "variable")->var.dtype())); });
}

cntk_status cntk_variable_is_sparse(const cntk_variable* v, int* out) {
  return guard([&] { *need(out, "out") = need(v, "variable")->var.is_sparse(); });
}

cntk_status cntk_variable_needs_gradient(const cntk_variable* v, int* out) {
  return guard([&] { *need(out, "out") = need(v, "variable")->var.needs_gradient(); });
}

cntk_status cntk_variable_name(const cntk_variable* v, char* buffer, size_t capacity, size_t* length) {
  return guard([&] { write_string(need(v, "variable")->var.name(), buffer, capacity, length); });
}

cntk_status cntk_variable_uid(const cntk_variable* v, char* buffer, size_t capacity, size_t* length) {
  return guard([&] { write_string(need(v, "variable")->var.uid(), buffer, capacity, length); });
}

cntk_status cntk_variable_dynamic_axes(const cntk_variable* v, cntk_axis** axes, size_t capacity, size_t* count) {
  return guard([&] {
    need(count, "count");
    const auto& a = need(v, "variable")->var.dynamic_axes();
    if (axes && capacity >= a.size())
      for (size_t i = 0; i < a.size(); ++i) axes[i] = new cntk_axis{a[i]};
    *count = a.size();
  });
}

cntk_status cntk_variable_owner(const cntk_variable* v, cntk_function** out) {
  return make_function([&] { return need(v, "variable")->var.is_output() ? v->var.owner() : nullptr; }, out);
}

cntk_status cntk_variable_value(const cntk_variable* v, cntk_ndarray** out) {
  return guard([&] {
    need(out, "out");
    const Variable& var = need(v, "variable")->var;
    if (!var.is_parameter() && !var.is_constant())
      throw ValueError("only parameters and constants have a value, not " + var.str());
    *out = new cntk_ndarray{var.value().copy()};
  });
}

cntk_status cntk_variable_set_value(cntk_variable* v, const cntk_ndarray* value) {
  return guard([&] {
    Variable& var = need(v, "variable")->var;
    const NDArrayView& a = need(value, "value")->view;
    if (!var.is_parameter() && !var.is_constant())
      throw ValueError("only parameters and constants have a value, not " + var.str());
    if (a.shape() != var.shape())
      throw ValueError("the value's shape " + a.shape().str() + " differs from " + var.str());
    var.set_value(a.cast(var.dtype()).copy());
  });
}

cntk_status cntk_variable_equal(const cntk_variable* a, const cntk_variable* b, int* out) {
  return guard([&] { *need(out, "out") = need(a, "variable")->var == need(b, "variable")->var; });
}

cntk_status cntk_variable_hash(const cntk_variable* v, uint64_t* out) {
  return guard([&] { *need(out, "out") = uint64_t(reinterpret_cast<uintptr_t>(need(v, "variable")->var.get())); });
}

// ------------------------------------------------------------------ Function

cntk_status cntk_function_primitive(const char* op_name, const cntk_variable* const* inputs, size_t num_inputs,
                                    const cntk_dict* attributes, const char* name, cntk_function** out) {
  return make_function(
      [&] {
        std::string op = need(op_name, "op_name");
        std::vector<Variable> in = variables_arg(inputs, num_inputs, "input");
        Dictionary attrs = attributes ? attributes->dict : Dictionary();
        return Function::composite(Function::primitive(op, std::move(in), std::move(attrs), str_arg(name)),
                                   str_arg(name));
      },
      out);
}

cntk_status cntk_function_as_block(const cntk_function* composite, const cntk_variable* const* placeholders,
                                   const cntk_variable* const* arguments, size_t count, const char* op_name,
                                   const char* name, cntk_function** out) {
  return make_function(
      [&] {
        std::vector<Variable> ph = variables_arg(placeholders, count, "placeholder");
        std::vector<Variable> args = variables_arg(arguments, count, "argument");
        std::vector<std::pair<Variable, Variable>> mapping;
        for (size_t i = 0; i < count; ++i) mapping.emplace_back(ph[i], args[i]);
        FunctionPtr block =
            Function::block(need(composite, "composite")->fn, mapping, need(op_name, "op_name"), str_arg(name));
        return Function::composite(block, str_arg(name));
      },
      out);
}

cntk_status cntk_function_combine(const cntk_variable* const* outputs, size_t count, const char* name,
                                  cntk_function** out) {
  return make_function([&] { return Function::combine(variables_arg(outputs, count, "output"), str_arg(name)); }, out);
}

cntk_status cntk_function_alias(const cntk_variable* operand, const char* name, cntk_function** out) {
  return make_function(
      [&] {
        return Function::composite(
            Function::primitive("NoOp", {need(operand, "operand")->var}, Dictionary(), str_arg(name)), str_arg(name));
      },
      out);
}

void cntk_function_release(cntk_function* f) { delete f; }

cntk_status cntk_function_clone_handle(const cntk_function* f, cntk_function** out) {
  return make_function([&] { return need(f, "function")->fn; }, out);
}

cntk_status cntk_function_name(const cntk_function* f, char* buffer, size_t capacity, size_t* length) {
  return guard([&] { write_string(need(f, "function")->fn->name(), buffer, capacity, length); });
}

cntk_status cntk_function_set_name(cntk_function* f, const char* name) {
  return guard([&] { need(f, "function")->fn->set_name(need(name, "name")); });
}

cntk_status cntk_function_uid(const cntk_function* f, char* buffer, size_t capacity, size_t* length) {
  return guard([&] { write_string(need(f, "function")->fn->uid(), buffer, capacity, length); });
}

cntk_status cntk_function_op_name(const cntk_function* f, char* buffer, size_t capacity, size_t* length) {
  return guard([&] { write_string(need(f, "function")->fn->root_function()->op_name(), buffer, capacity, length); });
}

cntk_status cntk_function_kind(const cntk_function* f, int* out) {
  return guard([&] { *need(out, "out") = int(need(f, "function")->fn->kind()); });
}

cntk_status cntk_function_root(const cntk_function* f, cntk_function** out) {
  return make_function([&] { return need(f, "function")->fn->root_function(); }, out);
}

cntk_status cntk_function_variables(const cntk_function* f, int which, cntk_variable** out, size_t capacity,
                                    size_t* count) {
  return guard([&] {
    Function& fn = *need(f, "function")->fn;
    std::vector<Variable> vars;
    switch (which) {
      case 0: vars = fn.inputs(); break;
      case 1: vars = fn.outputs(); break;
      case 2: vars = fn.arguments(); break;
      case 3: vars = fn.parameters(); break;
      case 4: vars = fn.constants(); break;
      case 5: vars = fn.placeholders(); break;
      default: throw ValueError("unknown variable list " + std::to_string(which));
    }
    write_variables(vars, out, capacity, count);
  });
}

cntk_status cntk_function_find_by_name(const cntk_function* f, const char* name, int nested, cntk_function** out) {
  return make_function(
      [&] {
        auto all = need(f, "function")->fn->find_all_with_name(need(name, "name"), nested != 0);
        return all.empty() ? nullptr : all.front();
      },
      out);
}

cntk_status cntk_function_find_all_with_name(const cntk_function* f, const char* name, int nested, cntk_function** out,
                                             size_t capacity, size_t* count) {
  return guard([&] {
    write_functions(need(f, "function")->fn->find_all_with_name(need(name, "name"), nested != 0), out, capacity, count);
  });
}

cntk_status cntk_function_clone(const cntk_function* f, cntk_clone_method method, const cntk_variable* const* from,
                                const cntk_variable* const* to, size_t count, cntk_function** out) {
  return make_function(
      [&] {
        if (method < CNTK_CLONE || method > CNTK_CLONE_FREEZE)
          throw ValueError("unknown clone method " + std::to_string(int(method)));
        return need(f, "function")->fn->clone(CloneMethod(int(method)), pairs_arg(from, to, count));
      },
      out);
}

cntk_status cntk_function_replace_placeholders(cntk_function* f, const cntk_variable* const* placeholders,
                                               const cntk_variable* const* values, size_t count, cntk_function** out) {
  return make_function(
      [&] { return need(f, "function")->fn->replace_placeholders(pairs_arg(placeholders, values, count)); }, out);
}

cntk_status cntk_function_equal(const cntk_function* a, const cntk_function* b, int* out) {
  return guard([&] { *need(out, "out") = need(a, "function")->fn == need(b, "function")->fn; });
}

cntk_status cntk_function_evaluate(const cntk_function* f, const cntk_variable* const* arguments,
                                   const cntk_value* const* argument_values, size_t num_arguments,
                                   const cntk_variable* const* outputs, size_t num_outputs, cntk_value** out_values) {
  return guard(
      [&] { run_forward(f, arguments, argument_values, num_arguments, outputs, num_outputs, out_values, false); });
}

cntk_status cntk_function_forward(const cntk_function* f, const cntk_variable* const* arguments,
                                  const cntk_value* const* argument_values, size_t num_arguments,
                                  const cntk_variable* const* outputs, size_t num_outputs, cntk_value** out_values,
                                  cntk_backprop_state** state) {
  return guard([&] {
    need(state, "state");
    auto s = run_forward(f, arguments, argument_values, num_arguments, outputs, num_outputs, out_values, true);
    *state = new cntk_backprop_state{std::move(s)};
  });
}

cntk_status cntk_function_backward(const cntk_backprop_state* state, const cntk_variable* const* roots,
                                   const cntk_value* const* root_gradients, size_t num_roots,
                                   const cntk_variable* const* wrt, size_t num_wrt, cntk_value** out_gradients) {
  return guard([&] {
    need(state, "state");
    if (num_wrt) need(out_gradients, "gradients");
    VariableValues seeds = bindings_arg(roots, root_gradients, num_roots);
    std::vector<Variable> targets = variables_arg(wrt, num_wrt, "variable");
    std::vector<Value> grads;
    backward(state->state, seeds, targets, grads);
    for (size_t i = 0; i < num_wrt; ++i) out_gradients[i] = new cntk_value{grads[i]};
  });
}

void cntk_backprop_state_release(cntk_backprop_state* s) { delete s; }

cntk_status cntk_function_save(const cntk_function* f, const char* path) {
  return guard([&] { save_function(need(f, "function")->fn, need(path, "path")); });
}

cntk_status cntk_function_load(const char* path, cntk_function** out) {
  return make_function([&] { return load_function(need(path, "path")); }, out);
}

cntk_status cntk_function_save_bytes(const cntk_function* f, char* buffer, size_t capacity, size_t* length) {
  return guard([&] {
    need(length, "length");
    std::string bytes = save_function_to_bytes(need(f, "function")->fn);
    if (buffer && capacity >= bytes.size()) std::memcpy(buffer, bytes.data(), bytes.size());
    *length = bytes.size();
  });
}

cntk_status cntk_function_load_bytes(const char* bytes, size_t length, cntk_function** out) {
  return make_function([&] { return load_function_from_bytes(std::string(need(bytes, "bytes"), length)); }, out);
}

cntk_status cntk_function_restore(cntk_function* f, const char* path) {
  return guard([&] { restore_function_values(need(f, "function")->fn, need(path, "path")); });
}

}  // extern "C"
