// The cntk._cntk extension: a thin nanobind layer over the C++ engine. Python's
// cntk package builds CNTK's API on these few types and functions.
#include <nanobind/nanobind.h>
#include <mutex>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/optional.h>

#include "core/output_hint.h"
#include "cntk/crop.h"
#include "cntk/evaluation.h"
#include "cntk/ops.h"
#include "convert.h"
#include "cntk/random.h"
#include "cntk/switches.h"
#include "cntk/user_function.h"
#include "ops/op.h"

namespace nb = nanobind;
using namespace cntk;
using namespace cntk::bindings;

namespace {

// A data type given as an engine code (1, 2, 4) or anything numpy.dtype() accepts.
DataType to_data_type(const nb::handle& h) {
  if (nb::isinstance<nb::int_>(h)) {
    int code = nb::cast<int>(h);
    if (code == 1 || code == 2 || code == 4 || code == 5 || code == 6) return DataType(code);
  } else {
    std::string name = nb::cast<std::string>(nb::module_::import_("numpy").attr("dtype")(h).attr("name"));
    if (name == "float32") return DataType::Float;
    if (name == "float64") return DataType::Double;
    if (name == "float16") return DataType::Float16;
    if (name == "int8") return DataType::Int8;
    if (name == "int16") return DataType::Int16;
  }
  throw TypeError("data type " + nb::cast<std::string>(nb::repr(h)) +
                  " is not supported (use float32, float64 or float16)");
}

template <class A>
DataType dtype_of(const A& a) {
  auto d = a.dtype();
  if (d == nb::dtype<float>()) return DataType::Float;
  if (d == nb::dtype<double>()) return DataType::Double;
  if (d.code == uint8_t(nb::dlpack::dtype_code::Float) && d.bits == 16) return DataType::Float16;
  if (d == nb::dtype<int8_t>()) return DataType::Int8;
  if (d == nb::dtype<int16_t>()) return DataType::Int16;
  return DataType::Unknown;
}

// NumPy array -> NDArrayView. Contiguous arrays of a computable type are borrowed, not copied.
NDArrayView from_numpy(nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> a, bool borrow) {
  DataType t = dtype_of(a);
  if (t == DataType::Unknown)
    throw TypeError("only float32, float64, float16, int8 and int16 arrays can become NDArrayViews");
  std::vector<int64_t> dims(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) dims[i] = int64_t(a.shape(i));
  NDShape shape(dims);
  if (borrow) {
    auto keep = std::shared_ptr<void>(new nb::object(nb::cast(a)), [](void* p) {
      nb::gil_scoped_acquire g;
      delete static_cast<nb::object*>(p);
    });
    return NDArrayView::borrow(t, shape, const_cast<void*>(a.data()), keep);
  }
  NDArrayView v(t, shape);
  if (v.numel()) std::memcpy(v.raw_data(), a.data(), v.numel() * element_size(t));
  return v;
}

nb::object to_numpy(const NDArrayView& v_in) {
  NDArrayView v = v_in.to_dense().contiguous();
  if (v.same_storage(v_in)) v = v.copy();  // the array owns its own memory
  auto* holder = new NDArrayView(v);
  nb::capsule owner(holder, [](void* p) noexcept { delete static_cast<NDArrayView*>(p); });
  std::vector<size_t> shape(v.shape().dims().begin(), v.shape().dims().end());
  void* data = holder->raw_data();
  switch (v.dtype()) {
    case DataType::Float: return nb::cast(nb::ndarray<nb::numpy, float>(data, shape.size(), shape.data(), owner));
    case DataType::Double: return nb::cast(nb::ndarray<nb::numpy, double>(data, shape.size(), shape.data(), owner));
    case DataType::Float16: {
      nb::dlpack::dtype dt{uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
      return nb::cast(nb::ndarray<nb::numpy>(data, shape.size(), shape.data(), owner, nullptr, dt));
    }
    case DataType::Int8: return nb::cast(nb::ndarray<nb::numpy, int8_t>(data, shape.size(), shape.data(), owner));
    case DataType::Int16: return nb::cast(nb::ndarray<nb::numpy, int16_t>(data, shape.size(), shape.data(), owner));
    default: throw TypeError("unknown data type");
  }
}

std::unordered_map<VariableImpl*, Variable> to_var_map(const std::vector<std::pair<Variable, Variable>>& pairs) {
  std::unordered_map<VariableImpl*, Variable> m;
  for (auto& [k, v] : pairs) m[k.get()] = v;
  return m;
}

// Python callables that construct objects when Python code calls a bound class
// (C.Function(f) as a decorator, C.Variable(shape, ...)); set by the cntk package.
nb::object* g_function_factory = nullptr;
nb::object* g_variable_factory = nullptr;

// What forward keeps for backward, as an opaque Python object.
struct StateHandle {
  BackPropStatePtr state;
};

// A Python object released with the GIL held, whichever thread drops the last reference.
std::shared_ptr<nb::object> own_object(nb::object o) {
  return std::shared_ptr<nb::object>(new nb::object(std::move(o)), [](nb::object* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

// Python objects the engine holds for as long as a graph lives (user functions' instances).
// The garbage collector cannot see these references, so a cycle through one is never
// collected: a user function's instance refers to its class, the class's methods to their
// module's globals, and those often hold the Function built from it. At exit (before the
// modules are torn down) release_held_objects() drops every such reference, which breaks the
// cycles. Per-call objects (forward states) live only until their backward call and are not
// registered.
std::mutex g_held_mutex;
std::vector<std::weak_ptr<nb::object>>* g_held = new std::vector<std::weak_ptr<nb::object>>();

std::shared_ptr<nb::object> hold_object(nb::object o) {
  std::shared_ptr<nb::object> held = own_object(std::move(o));
  std::lock_guard<std::mutex> lock(g_held_mutex);
  if (g_held->size() >= 64 && g_held->size() == g_held->capacity())  // drop the expired before growing
    std::erase_if(*g_held, [](const std::weak_ptr<nb::object>& w) { return w.expired(); });
  g_held->push_back(held);
  return held;
}

// Called at exit with the GIL held: every held object becomes None (a user function called
// after this raises that its instance is gone).
void release_held_objects() {
  std::vector<std::shared_ptr<nb::object>> live;
  {
    std::lock_guard<std::mutex> lock(g_held_mutex);
    for (auto& w : *g_held)
      if (auto p = w.lock()) live.push_back(std::move(p));
    g_held->clear();
  }
  for (auto& p : live) *p = nb::none();  // outside the lock: freeing may run Python code
}

// The engine's view of a cntk.ops.functions.UserFunction: each call takes the GIL
// and calls the object's _cntk_* methods, which call the user's methods and convert
// the data to and from NumPy.
class PyUserBackend : public UserFunctionBackend {
 public:
  PyUserBackend(nb::object obj, std::string op_name)
      : obj_(hold_object(std::move(obj))), op_name_(std::move(op_name)) {}
  const nb::object& object() const { return *obj_; }
  std::string op_name() const override { return op_name_; }

  std::vector<Variable> infer_outputs(Function&, const std::vector<Variable>& inputs) override {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::vector<Variable>>(object().attr("_cntk_infer_outputs")(inputs));
  }

  std::shared_ptr<void> forward(Function& self, const std::vector<Value>& inputs, bool training,
                                std::vector<Value>& outputs) override {
    nb::gil_scoped_acquire gil;
    nb::tuple r = nb::cast<nb::tuple>(
        object().attr("_cntk_forward")(self.direct_inputs(), output_variables(self), inputs, training));
    outputs = nb::cast<std::vector<Value>>(r[1]);
    return own_object(nb::borrow(r[0]));
  }

  std::vector<Value> backward(Function& self, const std::shared_ptr<void>& state, const std::vector<Value>& roots,
                              const std::vector<bool>& wanted) override {
    nb::gil_scoped_acquire gil;
    nb::object st = state ? *static_cast<nb::object*>(state.get()) : nb::none();
    nb::list root_list;
    for (auto& r : roots) root_list.append(r.is_valid() ? nb::cast(r) : nb::none());
    nb::object res =
        object().attr("_cntk_backward")(self.direct_inputs(), output_variables(self), st, root_list, wanted);
    std::vector<Value> out;
    for (auto item : res) out.push_back(item.is_none() ? Value() : nb::cast<Value>(item));
    return out;
  }

  FunctionPtr clone(Function&, const std::vector<Variable>& inputs) override {
    nb::gil_scoped_acquire gil;
    return nb::cast<FunctionPtr>(object().attr("_cntk_clone")(inputs));
  }

  Dictionary serialize(Function&) override {
    nb::gil_scoped_acquire gil;
    return to_dictionary(object().attr("_cntk_serialize")());
  }

 private:
  static std::vector<Variable> output_variables(Function& f) {
    std::vector<Variable> out;
    for (auto& impl : f.output_impls()) out.push_back(Variable(impl));
    return out;
  }
  std::shared_ptr<nb::object> obj_;
  std::string op_name_;
};

}  // namespace

NB_MODULE(_cntk, m) {
  m.doc() = "OpenCNTK native engine";
  m.def("_set_factories", [](nb::object function_factory, nb::object variable_factory) {
    g_function_factory = new nb::object(function_factory);
    g_variable_factory = new nb::object(variable_factory);
  });

  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    // The message, then the native call stack under CNTK's '[CALL STACK]' heading.
    auto message = [](const cntk::Error& e) {
      std::string stack = e.call_stack();
      return stack.empty() ? std::string(e.what()) : std::string(e.what()) + "\n\n[CALL STACK]\n" + stack;
    };
    try {
      std::rethrow_exception(p);
    } catch (const cntk::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, message(e).c_str());
    } catch (const cntk::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, message(e).c_str());
    } catch (const cntk::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, message(e).c_str());
    } catch (const cntk::IOError& e) {
      PyErr_SetString(PyExc_IOError, message(e).c_str());
    } catch (const cntk::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, message(e).c_str());
    }
  });

  m.attr("DeviceKind_CPU") = int(DeviceKind::CPU);
  m.attr("DeviceKind_GPU") = int(DeviceKind::GPU);
  m.attr("MaskKind_Invalid") = int(MaskKind::Invalid);
  m.attr("MaskKind_Valid") = int(MaskKind::Valid);
  m.attr("MaskKind_SequenceBegin") = int(MaskKind::SequenceBegin);
  m.attr("InferredDimension") = NDShape::kInferredDimension;
  m.attr("FreeDimension") = NDShape::kFreeDimension;
  m.attr("UnknownDimension") = NDShape::kUnknownDimension;

  nb::class_<DeviceDescriptor>(m, "DeviceDescriptor")
      .def_static("cpu", &DeviceDescriptor::cpu)
      .def_static("gpu", &DeviceDescriptor::gpu)
      .def_static("all_devices", &DeviceDescriptor::all_devices)
      .def_static("use_default_device", &DeviceDescriptor::use_default_device)
      .def_static("try_set_default_device", &DeviceDescriptor::try_set_default_device, nb::arg("device"),
                  nb::arg("acquire_device_lock") = false)
      .def_static("is_default_device_locked", &DeviceDescriptor::is_default_device_locked)
      .def("type", [](const DeviceDescriptor& d) { return int(d.type()); })
      .def("id", &DeviceDescriptor::id)
      .def("is_locked", &DeviceDescriptor::is_locked)
      .def("__eq__", &DeviceDescriptor::operator==)
      .def("__hash__", [](const DeviceDescriptor& d) { return int(d.type()) * 1000 + d.id(); })
      .def("__str__", &DeviceDescriptor::str)
      .def("__repr__", &DeviceDescriptor::str);

  nb::class_<Axis>(m, "Axis")
      .def(nb::init<int>())
      .def("__init__", [](Axis* self, const std::string& name) { new (self) Axis(Axis::dynamic(name)); })
      .def_static("dynamic", &Axis::dynamic, nb::arg("name"), nb::arg("ordered") = true)
      .def_static("default_batch_axis", &Axis::default_batch_axis)
      .def_static("default_dynamic_axis", &Axis::default_dynamic_axis)
      .def_static("all_static_axes", &Axis::all_static_axes)
      .def_static("all_axes", &Axis::all_axes)
      .def_static("new_unique_dynamic_axis", &Axis::new_unique_dynamic_axis, nb::arg("name"), nb::arg("ordered") = true)
      .def_static("new_leading_axis", &Axis::new_leading_axis)
      .def_prop_ro("kind", [](const Axis& a) { return int(a.kind()); })
      .def_prop_ro("is_static_axis", &Axis::is_static)
      .def_prop_ro("is_dynamic_axis", &Axis::is_dynamic)
      .def_prop_ro("is_batch_axis", &Axis::is_batch)
      .def_prop_ro("is_sequence_axis", &Axis::is_sequence)
      .def_prop_ro("is_ordered", &Axis::is_ordered)
      .def_prop_ro("static_index", &Axis::static_index)
      .def_prop_ro("name", &Axis::name)
      .def("__eq__",
           [](const Axis& a, const nb::handle& o) { return nb::isinstance<Axis>(o) && a == nb::cast<Axis>(o); })
      .def("__hash__", [](const Axis& a) { return std::hash<std::string>()(a.name()) ^ a.static_index(); });

  nb::class_<NDArrayView>(m, "NDArrayView")
      .def(
          "__init__",
          [](NDArrayView* self, const nb::handle& shape, const nb::handle& dt, const nb::handle&) {
            new (self) NDArrayView(NDArrayView::zeros(to_data_type(dt), to_shape(shape)));
          },
          nb::arg("shape"), nb::arg("data_type"), nb::arg("device").none() = nb::none())
      .def_static("from_numpy", &from_numpy, nb::arg("array"), nb::arg("borrow") = false)
      .def_static("zeros",
                  [](int dt, const nb::handle& shape) { return NDArrayView::zeros(DataType(dt), to_shape(shape)); })
      .def_static("full", [](int dt, const nb::handle& shape,
                             double v) { return NDArrayView::full(DataType(dt), to_shape(shape), v); })
      .def_static("sparse",
                  [](int dt, const nb::handle& shape, std::vector<int64_t> starts, std::vector<int64_t> indices,
                     nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> values) {
                    if (dtype_of(values) != DataType(dt)) throw TypeError("sparse values have the wrong dtype");
                    return NDArrayView::sparse(DataType(dt), to_shape(shape), std::move(starts), std::move(indices),
                                               values.data());
                  })
      .def("to_numpy", &to_numpy)
      .def_prop_ro("_shape", [](const NDArrayView& v) { return from_shape(v.shape()); })
      .def_prop_ro("_dtype", [](const NDArrayView& v) { return int(v.dtype()); })
      .def("get_data_type", [](const NDArrayView& v) { return int(v.dtype()); })  // CNTK's DataType code
      .def_prop_ro("_is_sparse", &NDArrayView::is_sparse)
      .def_prop_rw("_is_read_only", &NDArrayView::is_read_only, &NDArrayView::set_read_only)
      .def("sparse_parts",
           [](const NDArrayView& v) {
             const SparseCSC& s = v.sparse_data();
             NDArrayView vals = NDArrayView::borrow(v.dtype(), NDShape{s.nnz()}, s.values->data(), s.values);
             return nb::make_tuple(s.starts, s.indices, to_numpy(vals.copy()));
           })
      .def("copy", &NDArrayView::copy)
      .def("to_dense", &NDArrayView::to_dense)
      .def("cast", [](const NDArrayView& v, int dt) { return v.cast(DataType(dt)); })
      .def("copy_from",
           [](NDArrayView& v, const NDArrayView& src) {
             v.copy_from(src);
             note_user_write();
           })
      .def("fill",
           [](NDArrayView& v, double value) {
             v.fill(value);
             note_user_write();
           })
      .def("slice", &NDArrayView::slice, nb::arg("axis"), nb::arg("begin"), nb::arg("end"), nb::arg("stride") = 1)
      .def("reshape", [](const NDArrayView& v, const nb::handle& s) { return v.reshape(to_shape(s)); })
      .def("drop_axis", &NDArrayView::drop_axis)
      .def("same_storage", &NDArrayView::same_storage)
      .def_prop_ro("_is_contiguous", &NDArrayView::is_contiguous);

  nb::class_<NDMask>(m, "NDMask")
      .def("__init__", [](NDMask* self, int64_t b, int64_t t) { new (self) NDMask(b, t); })
      .def(
          "__init__",
          [](NDMask* self, const nb::handle& shape, const nb::handle&) {
            NDShape s = to_shape(shape);
            if (s.rank() != 2) throw ValueError("NDMask needs a shape (batch, max_len), not " + s.str());
            new (self) NDMask(s[0], s[1]);
          },
          nb::arg("shape"), nb::arg("device").none() = nb::none())
      .def_static("from_lengths", &NDMask::from_lengths)
      .def_prop_ro("shape", [](const NDMask& mk) { return from_shape(mk.shape()); })
      .def("invalidate_section", &NDMask::invalidate_section)
      .def("mark_sequence_begin", &NDMask::mark_sequence_begin)
      .def("clear", &NDMask::clear)
      .def("lengths", &NDMask::lengths)
      .def("masked_count", &NDMask::masked_count)
      .def("_set",
           [](NDMask& mk, int64_t b, int64_t t, int kind) {
             if (b < 0 || b >= mk.batch() || t < 0 || t >= mk.max_len())
               throw ValueError("NDMask: position out of range");
             mk.set(b, t, MaskKind(kind));
           })
      .def("to_list", [](const NDMask& mk) { return std::vector<int>(mk.data().begin(), mk.data().end()); });

  nb::class_<Value>(m, "Value")
      .def(
          "__init__",
          [](Value* self, const NDArrayView& data, std::shared_ptr<NDMask> mask) { new (self) Value(data, mask); },
          nb::arg("data"), nb::arg("mask").none() = nullptr)
      .def_static("from_sequences", &Value::from_sequences, nb::arg("sequences"), nb::arg("sequential") = true)
      .def_static("one_hot", [](const std::vector<std::vector<int64_t>>& idx, int64_t n, int dt,
                                bool seq) { return Value::one_hot(idx, n, DataType(dt), seq); })
      .def_ro_static("one_hot_skip", &Value::one_hot_skip)
      .def_prop_ro("_data", &Value::data)
      .def_prop_ro("_mask", &Value::mask)
      .def_prop_ro("_shape", [](const Value& v) { return from_shape(v.shape()); })
      .def_prop_ro("_dtype", [](const Value& v) { return int(v.dtype()); })
      .def("get_data_type", [](const Value& v) { return int(v.dtype()); })  // CNTK's DataType code
      .def_prop_ro("_is_sparse", &Value::is_sparse)
      .def_prop_ro("_is_valid", &Value::is_valid)
      .def("unpack", &Value::unpack);

  nb::class_<Variable>(m, "Variable", nb::dynamic_attr())
      .def(nb::new_([](nb::args a, nb::kwargs k) {
        if (!g_variable_factory) throw Error("cntk package not initialised");
        return nb::cast<Variable>((*g_variable_factory)(*a, **k));
      }))
      .def_prop_ro("shape", [](const Variable& v) { return from_shape(v.shape()); })
      .def_prop_ro("_dtype", [](const Variable& v) { return int(v.dtype()); })
      .def("get_data_type", [](const Variable& v) { return int(v.dtype()); })  // CNTK's DataType code
      .def_prop_ro("_dynamic_axes", &Variable::dynamic_axes)
      .def_prop_ro("is_sparse", &Variable::is_sparse)
      .def_prop_ro("needs_gradient", &Variable::needs_gradient)
      .def_prop_ro("name", &Variable::name)
      .def_prop_ro("uid", &Variable::uid)
      .def_prop_ro("_kind", [](const Variable& v) { return int(v.kind()); })
      .def_prop_ro("_owner", &Variable::owner)
      .def_prop_ro("has_value", [](const Variable& v) { return v.impl()->value.defined(); })
      .def_prop_ro("value_version", [](const Variable& v) { return v.impl()->value_version; })
      .def("_value", &Variable::value)
      .def("_set_value", &Variable::set_value)
      .def("same", [](const Variable& a, const Variable& b) { return a == b; })
      .def("__hash__", [](const Variable& v) { return std::hash<void*>()(v.get()); })
      .def("__repr__", &Variable::str);

  nb::class_<Function>(m, "Function", nb::dynamic_attr(),
                       "A computation graph: a primitive operation, a block, or a composite of them. It maps\n"
                       "its inputs (arguments, parameters, constants) to one or more outputs; call it on data\n"
                       "(eval), differentiate it (grad, forward/backward), clone, save or load it.")
      .def(nb::new_([](nb::args a, nb::kwargs k) {
        if (!g_function_factory) throw Error("cntk package not initialised");
        return nb::cast<FunctionPtr>((*g_function_factory)(*a, **k));
      }))
      .def_prop_ro("_kind", [](const Function& f) { return int(f.kind()); })
      .def_prop_ro("_op_name", &Function::op_name)
      .def_prop_rw("_name", &Function::name, &Function::set_name)
      .def_prop_ro("_uid", &Function::uid)
      .def_prop_ro("_attributes", [](const Function& f) { return from_dictionary(f.attributes()); })
      .def("set_attribute",
           [](Function& f, const std::string& k, const nb::handle& v) {
             f.mutable_attributes()[k] = to_dict_value(v);
             // A new seed restarts the function's random numbers, as in CNTK.
             if (k == "rngSeed" || k == "rngOffset") f.set_op_state(nullptr);
           })
      .def("_get_custom_attributes", [](Function& f) { return from_dictionary(f.custom_attributes()); })
      .def("_set_custom_attribute",
           [](Function& f, const std::string& k, const nb::handle& v) { f.custom_attributes()[k] = to_dict_value(v); })
      .def("_reset_custom_attributes", [](Function& f) { f.custom_attributes().clear(); })
      .def("_root_function", &Function::root_function)
      .def("_inputs", &Function::inputs)
      .def("_outputs", &Function::outputs)
      .def("_arguments", &Function::arguments)
      .def("_parameters", &Function::parameters)
      .def("_constants", &Function::constants)
      .def("_placeholders", &Function::placeholders)
      .def("_block_root", &Function::block_root)
      .def("_block_arguments_mapping", &Function::block_arguments_mapping)
      .def("topological_order", &Function::topological_order)
      .def("_find_all_with_name", &Function::find_all_with_name, nb::arg("name"), nb::arg("nested") = false)
      .def("_replace_placeholders",
           [](Function& f, const std::vector<std::pair<Variable, Variable>>& m) {
             return f.replace_placeholders(to_var_map(m));
           })
      .def("_clone",
           [](Function& f, int method, const std::vector<std::pair<Variable, Variable>>& subs) {
             return f.clone(CloneMethod(method), to_var_map(subs));
           })
      .def_prop_ro("_user_object",
                   [](const Function& f) -> nb::object {
                     auto* b = dynamic_cast<PyUserBackend*>(f.user_backend().get());
                     return b ? b->object() : nb::none();
                   })
      .def("same", [](const Function& a, const Function& b) { return &a == &b; })
      .def("__hash__", [](const Function& f) { return std::hash<const void*>()(&f); });

  nb::class_<StateHandle>(m, "BackPropState")
      .def_prop_ro("function", [](const StateHandle& s) { return backprop_state_function(s.state); })
      .def("device", [](const StateHandle&) { return DeviceDescriptor::cpu(); });

  m.def("input_variable", [](const nb::handle& shape, int dt, bool sparse, bool needs_grad, std::vector<Axis> axes,
                             const std::string& name) {
    return Variable::input(to_shape(shape), DataType(dt), sparse, needs_grad, std::move(axes), name);
  });
  m.def(
      "parameter",
      [](const nb::handle& shape, int dt, std::optional<NDArrayView> value, nb::handle init, const std::string& name) {
        std::shared_ptr<Dictionary> d;
        if (!init.is_none()) d = std::make_shared<Dictionary>(to_dictionary(init));
        return Variable::parameter(to_shape(shape), DataType(dt), value ? *value : NDArrayView(), d, name);
      },
      nb::arg("shape"), nb::arg("dtype"), nb::arg("value").none(), nb::arg("init").none(), nb::arg("name"));
  m.def("constant", nb::overload_cast<const NDArrayView&, const std::string&>(&Variable::constant));
  m.def("constant_filled", [](const nb::handle& shape, int dt, double fill, const std::string& name) {
    return Variable::constant(to_shape(shape), DataType(dt), fill, name);
  });
  m.def("allow_renaming_functions", &Function::allow_renaming_functions);
  m.def("placeholder", [](const nb::handle& shape, std::vector<Axis> axes, const std::string& name) {
    return Variable::placeholder(to_shape(shape), std::move(axes), name);
  });
  m.def(
      "primitive", [](const std::string& op, std::vector<Variable> inputs, nb::handle attrs, const std::string& name) {
        return Function::primitive(op, std::move(inputs), attrs.is_none() ? Dictionary() : to_dictionary(attrs), name);
      });
  m.def("sequential_convolution",
        [](const Variable& kernel, const Variable& operand, nb::handle attrs, const std::string& name) {
          return ops::sequential_convolution(kernel, operand, to_dictionary(attrs), name);
        });
  m.def("composite", &Function::composite, nb::arg("root"), nb::arg("name") = "");
  m.def("combine", &Function::combine, nb::arg("outputs"), nb::arg("name") = "");
  m.def("block", &Function::block);
  m.def("output_variable",
        [](const nb::handle& shape, int dt, std::vector<Axis> axes, bool needs_gradient, const std::string& name) {
          auto impl = std::make_shared<VariableImpl>();
          impl->kind = VariableKind::Output;
          impl->shape = to_shape(shape);
          impl->dtype = DataType(dt);
          impl->dynamic_axes = std::move(axes);
          impl->needs_gradient = needs_gradient;
          impl->name = name;
          impl->uid = new_uid("Output");
          return Variable(impl);
        });
  m.def("_release_held_objects", &release_held_objects);  // registered with atexit by the package
  m.def("user_function", [](nb::object obj, std::vector<Variable> inputs, nb::handle attrs, const std::string& name) {
    std::string op = nb::cast<std::string>(obj.attr("op_name"));
    auto backend = std::make_shared<PyUserBackend>(std::move(obj), op);
    return Function::user_defined(backend, std::move(inputs), attrs.is_none() ? Dictionary() : to_dictionary(attrs),
                                  name);
  });

  // Model files with Python user functions: the callable rebuilds one from (inputs, name,
  // state dict). Kept for the life of the process, as the factories above are.
  m.def("_set_user_function_deserializer", [](nb::object callback) {
    auto* cb = new nb::object(std::move(callback));
    set_user_function_deserializer(
        [cb](const std::vector<Variable>& inputs, const std::string& name, const Dictionary& state) {
          nb::gil_scoped_acquire gil;
          return nb::cast<FunctionPtr>((*cb)(inputs, name, from_dictionary(state)));
        });
  });
  m.def("forward",
        [](const FunctionPtr& f, const VariableValues& args, const std::vector<Variable>& outputs, bool keep) {
          std::vector<Value> outs;
          BackPropStatePtr st;
          {
            nb::gil_scoped_release release;
            cntk::check_outputs_in_graph(f, outputs.empty() ? f->outputs() : outputs);
            st = cntk::forward(f, args, outputs, outs, keep);
          }
          return std::make_pair(outs, st ? std::make_optional(StateHandle{st}) : std::nullopt);
        });
  m.def("backward", [](const StateHandle& st, const VariableValues& roots, const std::vector<Variable>& wrt) {
    std::vector<Value> grads;
    nb::gil_scoped_release release;
    cntk::backward(st.state, roots, wrt, grads);
    return grads;
  });
  m.def("initialize_parameter", [](nb::handle init, const nb::handle& shape, int dt) {
    return initialize_parameter(to_dictionary(init), to_shape(shape), DataType(dt));
  });

  m.def("registered_ops", &registered_ops);
  m.def("plans_compiled", &plans_compiled);
  m.def("live_functions", &live_functions);              // tests: graphs (loops included) are freed
  m.def("storage_requests", &detail::storage_requests);  // benchmarks: blocks asked of the allocator
  m.def("malloc_tuned", &detail::malloc_tuned);          // tests: glibc's thresholds set at load
  m.def("set_rnn_fusion", &set_rnn_fusion, nb::arg("on"));
  m.def("rnn_fusion_enabled", &rnn_fusion_enabled);
  m.def("set_recurrence_concurrency", &set_recurrence_concurrency, nb::arg("on"));
  m.def("recurrence_concurrency", &recurrence_concurrency);
  m.def("set_lstm_steps", &set_lstm_steps, nb::arg("on"));
  m.def("lstm_steps_enabled", &lstm_steps_enabled);
  m.def("set_conv_fusion", &set_conv_fusion, nb::arg("on"));  // the planner's switches (cntk/switches.h)
  m.def("conv_fusion_enabled", &conv_fusion_enabled);
  m.def("set_dnnl_layouts", &set_dnnl_layouts, nb::arg("on"));
  m.def("dnnl_layouts_enabled", &dnnl_layouts_enabled);
  // The CPU backend: 'onednn' (default) or 'reference' (src/kernels/backend.h).
  m.def(
      "set_backend", [](const std::string& name) { set_backend(name); }, nb::arg("name"));
  m.def("get_backend", [] { return std::string(backend_name()); });
  // The arithmetic of float32 products: 'float32' (default) or 'bfloat16' (cntk/switches.h);
  // cntk_py.set_float32_math wraps the setter with a warning where the CPU lacks bfloat16.
  m.def(
      "_set_float32_math", [](const std::string& mode) { set_float32_math(mode); }, nb::arg("mode"));
  m.def("get_float32_math", [] { return std::string(float32_math()); });
  m.def("bf16_math_available", &bf16_math_available);
  m.def("bf16_math_active", &bf16_math_active);
  m.def("fused_steps_planned", &cntk::fused_steps_planned);
  // Reorders between plain and oneDNN layouts (activations and gradients; weights), counted
  // since the start: tests check what keeping oneDNN layouts between steps saves.
  m.def("dnnl_reorders", &cntk::dnnl_reorders);
  m.def("dnnl_weight_reorders", &cntk::dnnl_weight_reorders);
  // Max pooling workspaces a backward pass recomputed (a training forward pass keeps its own).
  m.def("max_pool_workspaces_recomputed", &cntk::max_pool_workspaces_recomputed);
  m.def("set_fixed_random_seed", &set_fixed_random_seed);
  m.def("is_random_seed_fixed", &is_random_seed_fixed);
  m.def("reset_random_seed", &reset_random_seed, nb::arg("value"));
  m.def("set_checked_mode", &set_checked_mode, nb::arg("enable"));
  m.def("get_checked_mode", &checked_mode);
  m.def("always_allow_setting_default_device", &always_allow_setting_default_device);
  m.def("is_setting_default_device_always_allowed", &setting_default_device_always_allowed);
  m.def("next_random_seed", &next_random_seed);
  m.def("nce_loss", [](const Variable& weights, const Variable& biases, const Variable& inputs, const Variable& labels,
                       nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu> noise, int64_t num_samples,
                       bool allow_duplicates, int64_t seed, const std::string& name) {
    return ops::nce_loss(weights, biases, inputs, labels, from_numpy(noise, false), num_samples, allow_duplicates, seed,
                         name);
  });
  m.def("force_deterministic_algorithms", &force_deterministic_algorithms, nb::arg("on") = true);
  m.def("should_force_deterministic_algorithms", &should_force_deterministic_algorithms);
  m.def("set_computation_network_trace_level", &set_computation_network_trace_level);
  m.def("get_computation_network_trace_level", &get_computation_network_trace_level);
  m.def(
      "automatic_crop_offsets",
      [](const Variable& input, const Variable& referent, std::optional<std::pair<Variable, Variable>> ancestors,
         const std::string& op) {
        const CropOffsets o = automatic_crop_offsets(input, referent, ancestors, op);
        return std::make_pair(o.x, o.y);
      },
      nb::arg("input"), nb::arg("referent"), nb::arg("ancestors").none(), nb::arg("op"),
      "crop_automatic's (x, y) offsets, from the spatial transforms back to the common ancestor (cntk/crop.h).");
  void bind_learn(nb::module_&);
  bind_learn(m);  // learners, Trainer, Evaluator (learn.cpp)
  void bind_distributed(nb::module_&);
  bind_distributed(m);  // MPI communicator, distributed learners (distributed.cpp)
  void bind_io(nb::module_&);
  bind_io(m);  // data readers (io.cpp)
  void bind_profiler(nb::module_&);
  bind_profiler(m);  // profiler and node timing (profiler.cpp)
  void bind_io_formats(nb::module_&);
  bind_io_formats(m);  // CBF and image deserializers (io_formats.cpp)
  void bind_io_htk(nb::module_&);
  bind_io_htk(m);  // HTK feature and MLF deserializers (io_htk.cpp)
  void bind_serialize(nb::module_&);
  bind_serialize(m);  // model files (serialize.cpp)
  void bind_lattice(nb::module_&);
  bind_lattice(m);  // lattice archives and format (lattice.cpp)
  void bind_training_session(nb::module_&);
  bind_training_session(m);  // TrainingSession (training_session.cpp)
  void bind_op_schema(nb::module_&);
  bind_op_schema(m);  // the op catalogue's schema (op_schema.cpp)
  void bind_onnx(nb::module_&);
  bind_onnx(m);  // ONNX model files (onnx.cpp)
}
