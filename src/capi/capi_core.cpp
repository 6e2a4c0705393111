// The C API's vocabulary: errors, devices, NDArrayView, Value, Axis and attribute Dictionaries.
#include <algorithm>

#include "capi_internal.h"
#include "cntk/device.h"
#include "cntk/random.h"
#include "core/rng.h"
#include "io/minibatch_source.h"

using namespace cntk;
using namespace cntk::capi;

namespace {

struct LastError {
  cntk_status status = CNTK_OK;
  std::string message;
};
thread_local LastError last_error;

}  // namespace

namespace cntk::capi {

cntk_status record_failure(cntk_status status, const char* message) noexcept {
  try {
    last_error.status = status;
    last_error.message = message ? message : "";
  } catch (...) {
    last_error.message.clear();  // out of memory while copying the message: keep the status
  }
  return status;
}

void clear_failure() noexcept {
  last_error.status = CNTK_OK;
  last_error.message.clear();
}

NDShape shape_arg(const int64_t* dims, size_t rank) {
  if (rank && !dims) throw NullArgument("shape dimensions are NULL");
  return NDShape(std::vector<int64_t>(dims, dims + rank));
}

DataType dtype_arg(cntk_dtype t) {
  if (t != CNTK_DTYPE_FLOAT && t != CNTK_DTYPE_DOUBLE)
    throw TypeError("data type code " + std::to_string(int(t)) + " is not float (1) or double (2)");
  return DataType(int(t));
}

std::vector<Axis> axes_arg(const cntk_axis* const* axes, size_t count) {
  if (count && !axes) throw NullArgument("axis list is NULL");
  std::vector<Axis> out;
  for (size_t i = 0; i < count; ++i) out.push_back(need(axes[i], "axis")->axis);
  return out;
}

std::vector<Variable> variables_arg(const cntk_variable* const* vars, size_t count, const char* what) {
  if (count && !vars) throw NullArgument(std::string(what) + " list is NULL");
  std::vector<Variable> out;
  for (size_t i = 0; i < count; ++i) out.push_back(need(vars[i], what)->var);
  return out;
}

VariableValues bindings_arg(const cntk_variable* const* vars, const cntk_value* const* values, size_t count) {
  if (count && (!vars || !values)) throw NullArgument("argument list is NULL");
  VariableValues out;
  for (size_t i = 0; i < count; ++i) {
    const Variable& var = need(vars[i], "argument variable")->var;
    out.emplace_back(var, adapt_to(need(values[i], "argument value")->value, var));
  }
  return out;
}

Value adapt_to(const Value& v, const Variable& var) {
  Value out = v;
  const size_t lead = var.dynamic_axes().size() >= 2 ? 2 : 1;
  // A reader's data always has a step axis ([B, T, *sample], with a mask); a variable without a
  // sequence axis takes [B, *sample] (drop_sequence_axis rejects sequences longer than a sample).
  if (lead == 1 && out.mask() && out.shape().rank() >= 2) out = io::drop_sequence_axis(out);
  if (out.is_sparse() && !var.is_sparse()) out = Value(out.data().to_dense(), out.mask());
  // A plain batch [B, *sample] for a variable with a sequence axis: each sample is a sequence of
  // one step, as CNTK's Value::CreateBatch makes it.
  if (lead == 2 && !out.mask() && out.shape().rank() == var.shape().rank() + 1) {
    const NDShape steps = NDShape{out.shape()[0], 1}.concat(out.shape().sub(1));
    if (out.is_sparse()) {
      // The compressed rows stay as they are: B rows of one step each.
      const NDArrayView& d = out.data();
      const SparseCSC& sp = d.sparse_data();
      out = Value(NDArrayView::sparse(d.dtype(), steps, sp.starts, sp.indices, sp.values->data()));
    } else {
      out = Value(out.data().contiguous().reshape(steps));
    }
  }
  // A reader's samples are flat vectors; a variable of another shape with as many elements
  // takes them reshaped, as CNTK does.
  const NDShape& shape = out.shape();
  if (!out.is_sparse() && shape.rank() >= lead && var.shape().is_known() && shape.sub(lead) != var.shape() &&
      shape.sub(lead).is_known() && shape.sub(lead).total_size() == var.shape().total_size())
    out = Value(out.data().contiguous().reshape(shape.sub(0, lead).concat(var.shape())), out.mask());
  return out;
}

void write_dims(const NDShape& s, int64_t* dims, size_t capacity, size_t* rank) {
  need(rank, "rank");
  if (dims)
    for (size_t i = 0; i < std::min(capacity, s.rank()); ++i) dims[i] = s[i];
  *rank = s.rank();
}

void write_string(const std::string& s, char* buffer, size_t capacity, size_t* length) {
  if (buffer && capacity) {
    size_t n = std::min(capacity - 1, s.size());
    std::memcpy(buffer, s.data(), n);
    buffer[n] = '\0';
  }
  if (length) *length = s.size();
}

void write_variables(const std::vector<Variable>& vars, cntk_variable** out, size_t capacity, size_t* count) {
  need(count, "count");
  if (out && capacity >= vars.size())
    for (size_t i = 0; i < vars.size(); ++i) out[i] = new cntk_variable{vars[i]};
  *count = vars.size();
}

}  // namespace cntk::capi

namespace {

// Copies `n` elements of type `from` at `src` into `dst` as type `to`.
void convert(const void* src, DataType from, void* dst, DataType to, size_t n) {
  if (from == to) {
    std::memcpy(dst, src, n * element_size(from));
    return;
  }
  if (from == DataType::Float && to == DataType::Double)
    std::copy_n(static_cast<const float*>(src), n, static_cast<double*>(dst));
  else if (from == DataType::Double && to == DataType::Float)
    std::transform(static_cast<const double*>(src), static_cast<const double*>(src) + n, static_cast<float*>(dst),
                   [](double d) { return float(d); });
  else
    throw TypeError(std::string("cannot convert ") + to_string(from) + " data to " + to_string(to));
}

cntk_status make_axis(Axis a, cntk_axis** out) {
  return guard([&] { *need(out, "out") = new cntk_axis{std::move(a)}; });
}

}  // namespace

extern "C" {

int cntk_api_version(void) { return CNTK_C_API_VERSION; }
const char* cntk_last_error(void) { return last_error.message.c_str(); }
cntk_status cntk_last_status(void) { return last_error.status; }

cntk_status cntk_device_check(cntk_device_kind kind, int id) {
  return guard([&] {
    if (kind == CNTK_DEVICE_GPU)
      DeviceDescriptor::gpu(id);  // throws: no GPU backend
    else if (kind != CNTK_DEVICE_CPU)
      throw ValueError("unknown device kind " + std::to_string(int(kind)));
  });
}

cntk_status cntk_device_default(cntk_device_kind* kind, int* id) {
  return guard([&] {
    need(kind, "kind");
    need(id, "id");
    DeviceDescriptor d = DeviceDescriptor::use_default_device();
    *kind = cntk_device_kind(int(d.type()));
    *id = d.id();
  });
}

cntk_status cntk_set_fixed_random_seed(uint64_t seed) {
  return guard([&] { set_fixed_random_seed(seed); });
}

cntk_status cntk_next_random_seed(uint64_t* out) {
  return guard([&] { *need(out, "out") = next_random_seed(); });
}

// ------------------------------------------------------------------ NDArrayView

cntk_status cntk_ndarray_create_dense(cntk_dtype dtype, const int64_t* dims, size_t rank, const void* data,
                                      cntk_ndarray** out) {
  return guard([&] {
    need(out, "out");
    DataType dt = dtype_arg(dtype);
    NDShape shape = shape_arg(dims, rank);
    if (!shape.is_known()) throw ValueError("NDArrayView: shape " + shape.str() + " has unknown dimensions");
    NDArrayView v = NDArrayView::zeros(dt, shape);
    if (data) std::memcpy(v.raw_data(), data, size_t(v.numel()) * element_size(dt));
    *out = new cntk_ndarray{std::move(v)};
  });
}

cntk_status cntk_ndarray_create_filled(cntk_dtype dtype, const int64_t* dims, size_t rank, double value,
                                       cntk_ndarray** out) {
  return guard([&] {
    need(out, "out");
    NDShape shape = shape_arg(dims, rank);
    if (!shape.is_known()) throw ValueError("NDArrayView: shape " + shape.str() + " has unknown dimensions");
    *out = new cntk_ndarray{NDArrayView::full(dtype_arg(dtype), shape, value)};
  });
}

cntk_status cntk_ndarray_create_sparse(cntk_dtype dtype, const int64_t* dims, size_t rank, const int64_t* row_starts,
                                       const int64_t* col_indices, const void* values, size_t nnz, cntk_ndarray** out) {
  return guard([&] {
    need(out, "out");
    DataType dt = dtype_arg(dtype);
    NDShape shape = shape_arg(dims, rank);
    if (rank == 0 || !shape.is_known()) throw ValueError("sparse NDArrayView: shape " + shape.str() + " is not usable");
    need(row_starts, "row_starts");
    if (nnz) {
      need(col_indices, "col_indices");
      need(values, "values");
    }
    const int64_t cols = shape[rank - 1], rows = cols ? shape.total_size() / cols : 0;
    std::vector<int64_t> starts(row_starts, row_starts + rows + 1);
    std::vector<int64_t> indices(col_indices, col_indices + nnz);
    if (starts.front() != 0 || starts.back() != int64_t(nnz) || !std::is_sorted(starts.begin(), starts.end()))
      throw ValueError("sparse NDArrayView: row_starts must rise from 0 to nnz (" + std::to_string(nnz) + ")");
    for (int64_t c : indices)
      if (c < 0 || c >= cols)
        throw ValueError("sparse NDArrayView: column index " + std::to_string(c) + " outside [0, " +
                         std::to_string(cols) + ")");
    *out = new cntk_ndarray{NDArrayView::sparse(dt, shape, std::move(starts), std::move(indices), values)};
  });
}

cntk_status cntk_ndarray_random_uniform(cntk_dtype dtype, const int64_t* dims, size_t rank, double low, double high,
                                        uint64_t seed, cntk_ndarray** out) {
  return guard([&] {
    need(out, "out");
    DataType dt = dtype_arg(dtype);
    NDShape shape = shape_arg(dims, rank);
    if (!shape.is_known()) throw ValueError("RandomUniform: shape " + shape.str() + " has unknown dimensions");
    if (!(low < high)) throw ValueError("RandomUniform: low must be below high");
    NDArrayView d(DataType::Double, shape);
    rng::Engine g(seed);
    double* p = d.data<double>();
    for (int64_t i = 0; i < d.numel(); ++i) p[i] = rng::uniform(g, low, high);
    *out = new cntk_ndarray{d.cast(dt)};
  });
}

void cntk_ndarray_release(cntk_ndarray* a) { delete a; }

cntk_status cntk_ndarray_dtype(const cntk_ndarray* a, cntk_dtype* out) {
  return guard([&] { *need(out, "out") = cntk_dtype(int(need(a, "array")->view.dtype())); });
}

cntk_status cntk_ndarray_shape(const cntk_ndarray* a, int64_t* dims, size_t capacity, size_t* rank) {
  return guard([&] { write_dims(need(a, "array")->view.shape(), dims, capacity, rank); });
}

cntk_status cntk_ndarray_is_sparse(const cntk_ndarray* a, int* out) {
  return guard([&] { *need(out, "out") = need(a, "array")->view.is_sparse(); });
}

cntk_status cntk_ndarray_copy_to(const cntk_ndarray* a, cntk_dtype dtype, void* buffer, size_t capacity) {
  return guard([&] {
    need(a, "array");
    need(buffer, "buffer");
    NDArrayView d = a->view.to_dense().contiguous();
    if (capacity < size_t(d.numel()))
      throw ValueError("NDArrayView: the buffer holds " + std::to_string(capacity) + " elements, the array " +
                       std::to_string(d.numel()));
    convert(d.raw_data(), d.dtype(), buffer, dtype_arg(dtype), size_t(d.numel()));
  });
}

cntk_status cntk_ndarray_copy_from(cntk_ndarray* a, cntk_dtype dtype, const void* data, size_t count) {
  return guard([&] {
    need(a, "array");
    need(data, "data");
    if (a->view.is_sparse()) throw ValueError("NDArrayView: cannot write elements into a sparse array");
    if (a->view.is_read_only()) throw ValueError("NDArrayView: the array is read-only");
    if (count != size_t(a->view.numel()))
      throw ValueError("NDArrayView: " + std::to_string(count) + " elements given for an array of " +
                       std::to_string(a->view.numel()));
    NDArrayView src(a->view.dtype(), a->view.shape());
    convert(data, dtype_arg(dtype), src.raw_data(), a->view.dtype(), count);
    a->view.copy_from(src);
    note_user_write();
  });
}

cntk_status cntk_ndarray_deep_clone(const cntk_ndarray* a, cntk_ndarray** out) {
  return guard([&] { *need(out, "out") = new cntk_ndarray{need(a, "array")->view.copy()}; });
}

// ------------------------------------------------------------------ Value

cntk_status cntk_value_create_batch(const cntk_ndarray* data, cntk_value** out) {
  return guard([&] {
    need(out, "out");
    if (need(data, "data")->view.rank() < 1) throw ValueError("Value: a batch needs a leading batch axis");
    *out = new cntk_value{Value(data->view)};
  });
}

cntk_status cntk_value_create_sequences(const cntk_ndarray* const* sequences, const int* starts, size_t count,
                                        int sequential, cntk_value** out) {
  return guard([&] {
    need(out, "out");
    if (!count) throw ValueError("Value: no sequences given");
    need(sequences, "sequences");
    std::vector<NDArrayView> seqs;
    for (size_t i = 0; i < count; ++i) seqs.push_back(need(sequences[i], "sequence")->view);
    if (!sequential) {
      // A batch: each entry is one sample; stack them.
      Value packed = Value::from_sequences(seqs, true);
      if (packed.shape()[1] != 1) throw ValueError("Value: a batch needs one sample per entry");
      *out = new cntk_value{io::drop_sequence_axis(packed)};
      return;
    }
    Value v = Value::from_sequences(seqs, true);
    if (starts)
      for (size_t i = 0; i < count; ++i)
        if (!starts[i] && seqs[i].shape()[0] > 0) v.mask()->set(int64_t(i), 0, MaskKind::Valid);
    *out = new cntk_value{std::move(v)};
  });
}

cntk_status cntk_value_create_one_hot(cntk_dtype dtype, int64_t num_classes, const int64_t* indices,
                                      const int64_t* lengths, size_t count, const int* starts, int sequential,
                                      cntk_value** out) {
  return guard([&] {
    need(out, "out");
    need(lengths, "lengths");
    std::vector<std::vector<int64_t>> seqs(count);
    size_t k = 0;
    for (size_t i = 0; i < count; ++i) {
      if (lengths[i] < 0) throw ValueError("Value.one_hot: negative sequence length");
      if (lengths[i] && !indices) throw NullArgument("indices is NULL");
      for (int64_t t = 0; t < lengths[i]; ++t) {
        int64_t c = indices[k++];
        if (c != Value::one_hot_skip && (c < 0 || c >= num_classes))
          throw ValueError("Value.one_hot: class index " + std::to_string(c) + " outside [0, " +
                           std::to_string(num_classes) + ")");
        seqs[i].push_back(c);
      }
    }
    Value v = Value::one_hot(seqs, num_classes, dtype_arg(dtype), sequential != 0);
    if (sequential && starts && v.mask())
      for (size_t i = 0; i < count; ++i)
        if (!starts[i] && lengths[i] > 0) v.mask()->set(int64_t(i), 0, MaskKind::Valid);
    *out = new cntk_value{std::move(v)};
  });
}

void cntk_value_release(cntk_value* v) { delete v; }

cntk_status cntk_value_data(const cntk_value* v, cntk_ndarray** out) {
  return guard([&] { *need(out, "out") = new cntk_ndarray{need(v, "value")->value.data()}; });
}

cntk_status cntk_value_shape(const cntk_value* v, int64_t* dims, size_t capacity, size_t* rank) {
  return guard([&] { write_dims(need(v, "value")->value.shape(), dims, capacity, rank); });
}

cntk_status cntk_value_dtype(const cntk_value* v, cntk_dtype* out) {
  return guard([&] { *need(out, "out") = cntk_dtype(int(need(v, "value")->value.dtype())); });
}

cntk_status cntk_value_is_sparse(const cntk_value* v, int* out) {
  return guard([&] { *need(out, "out") = need(v, "value")->value.is_sparse(); });
}

cntk_status cntk_value_has_mask(const cntk_value* v, int* out) {
  return guard([&] { *need(out, "out") = need(v, "value")->value.mask() != nullptr; });
}

namespace {

// The value's sequences (batch entries) as the variable lays them out, padding removed.
std::vector<NDArrayView> unpack_for(const Value& v, const Variable& var) {
  Value a = adapt_to(v, var);
  const size_t seq_axes = var.dynamic_axes().size() >= 2 ? 1 : 0;
  const size_t expected = var.shape().rank() + 1 + seq_axes;
  if (a.shape().rank() != expected || a.shape().sub(1 + seq_axes) != var.shape())
    throw ValueError("Value of shape " + a.shape().str() + " does not hold data of " + var.str() + " (expected " +
                     std::to_string(expected) + " axes ending in " + var.shape().str() + ")");
  return a.unpack(int(seq_axes));
}

}  // namespace

cntk_status cntk_value_unpack(const cntk_value* v, const cntk_variable* layout, cntk_dtype dtype, int64_t* lengths,
                              size_t lengths_capacity, size_t* num_sequences, void* buffer, size_t buffer_capacity,
                              size_t* total) {
  return guard([&] {
    need(v, "value");
    need(layout, "variable");
    need(num_sequences, "num_sequences");
    need(total, "total");
    DataType dt = dtype_arg(dtype);
    std::vector<NDArrayView> seqs = unpack_for(v->value, layout->var);
    const int64_t sample = std::max<int64_t>(layout->var.shape().total_size(), 1);
    size_t n = 0;
    for (auto& s : seqs) n += size_t(s.numel());
    if (buffer && buffer_capacity >= n) {
      char* p = static_cast<char*>(buffer);
      for (auto& s : seqs) {
        convert(s.raw_data(), s.dtype(), p, dt, size_t(s.numel()));
        p += size_t(s.numel()) * element_size(dt);
      }
    }
    if (lengths && lengths_capacity >= seqs.size())
      for (size_t i = 0; i < seqs.size(); ++i) lengths[i] = seqs[i].numel() / sample;
    *num_sequences = seqs.size();
    *total = n;
  });
}

cntk_status cntk_value_unpack_one_hot(const cntk_value* v, const cntk_variable* layout, int64_t* lengths,
                                      size_t lengths_capacity, size_t* num_sequences, int64_t* indices,
                                      size_t indices_capacity, size_t* total) {
  return guard([&] {
    need(v, "value");
    need(layout, "variable");
    need(num_sequences, "num_sequences");
    need(total, "total");
    const NDShape& shape = layout->var.shape();
    if (shape.rank() != 1) throw ValueError("one-hot data needs a vector variable, got " + layout->var.str());
    std::vector<NDArrayView> seqs = unpack_for(v->value, layout->var);
    const int64_t dim = shape[0];
    size_t n = 0;
    for (auto& s : seqs) n += size_t(s.numel() / dim);
    if (indices && indices_capacity >= n) {
      size_t k = 0;
      for (auto& s : seqs) {
        NDArrayView d = s.cast(DataType::Double);
        const double* p = d.data<double>();
        for (int64_t r = 0; r < s.numel() / dim; ++r) {
          int64_t hot = -1;
          for (int64_t c = 0; c < dim; ++c) {
            double x = p[r * dim + c];
            if (x == 0) continue;
            if (x != 1 || hot >= 0) throw ValueError("Value: the data is not one-hot");
            hot = c;
          }
          indices[k++] = hot;
        }
      }
    }
    if (lengths && lengths_capacity >= seqs.size())
      for (size_t i = 0; i < seqs.size(); ++i) lengths[i] = seqs[i].numel() / dim;
    *num_sequences = seqs.size();
    *total = n;
  });
}

// ------------------------------------------------------------------ Axis

cntk_status cntk_axis_static(int index, cntk_axis** out) { return make_axis(Axis(index), out); }
cntk_status cntk_axis_default_batch(cntk_axis** out) { return make_axis(Axis::default_batch_axis(), out); }
cntk_status cntk_axis_default_dynamic(cntk_axis** out) { return make_axis(Axis::default_dynamic_axis(), out); }
cntk_status cntk_axis_all_static(cntk_axis** out) { return make_axis(Axis::all_static_axes(), out); }
cntk_status cntk_axis_all(cntk_axis** out) { return make_axis(Axis::all_axes(), out); }
cntk_status cntk_axis_operand_sequence(cntk_axis** out) { return make_axis(Axis::operand_sequence_axis(), out); }
cntk_status cntk_axis_new_unique_dynamic(const char* name, int ordered, cntk_axis** out) {
  return guard([&] { *need(out, "out") = new cntk_axis{Axis::new_unique_dynamic_axis(str_arg(name), ordered != 0)}; });
}
void cntk_axis_release(cntk_axis* a) { delete a; }

cntk_status cntk_axis_info(const cntk_axis* a, int* kind, int* static_index, int* is_ordered) {
  return guard([&] {
    need(a, "axis");
    if (kind) *kind = int(a->axis.kind());
    if (static_index) *static_index = a->axis.static_index();
    if (is_ordered) *is_ordered = a->axis.is_ordered();
  });
}

cntk_status cntk_axis_name(const cntk_axis* a, char* buffer, size_t capacity, size_t* length) {
  return guard([&] { write_string(need(a, "axis")->axis.name(), buffer, capacity, length); });
}

cntk_status cntk_axis_equal(const cntk_axis* a, const cntk_axis* b, int* out) {
  return guard([&] { *need(out, "out") = need(a, "axis")->axis == need(b, "axis")->axis; });
}

// ------------------------------------------------------------------ Dictionary

cntk_status cntk_dict_create(cntk_dict** out) {
  return guard([&] { *need(out, "out") = new cntk_dict{}; });
}
void cntk_dict_release(cntk_dict* d) { delete d; }

}  // extern "C"

namespace {
template <class Make>
cntk_status dict_set(cntk_dict* d, const char* key, Make&& make) {
  return guard([&] {
    need(d, "dictionary");
    need(key, "key");
    d->dict[key] = make();
  });
}
}  // namespace

extern "C" {

cntk_status cntk_dict_set_bool(cntk_dict* d, const char* key, int value) {
  return dict_set(d, key, [&] { return DictValue(value != 0); });
}
cntk_status cntk_dict_set_int(cntk_dict* d, const char* key, int64_t value) {
  return dict_set(d, key, [&] { return DictValue(value); });
}
cntk_status cntk_dict_set_double(cntk_dict* d, const char* key, double value) {
  return dict_set(d, key, [&] { return DictValue(value); });
}
cntk_status cntk_dict_set_string(cntk_dict* d, const char* key, const char* value) {
  return dict_set(d, key, [&] { return DictValue(std::string(need(value, "value"))); });
}
cntk_status cntk_dict_set_shape(cntk_dict* d, const char* key, const int64_t* dims, size_t rank) {
  return dict_set(d, key, [&] { return DictValue(shape_arg(dims, rank)); });
}
cntk_status cntk_dict_set_axis(cntk_dict* d, const char* key, const cntk_axis* axis) {
  return dict_set(d, key, [&] { return DictValue(need(axis, "axis")->axis); });
}
cntk_status cntk_dict_set_axes(cntk_dict* d, const char* key, const cntk_axis* const* axes, size_t count) {
  return dict_set(d, key, [&] {
    DictValue::List l;
    for (const Axis& a : axes_arg(axes, count)) l.push_back(DictValue(a));
    return DictValue(std::move(l));
  });
}
cntk_status cntk_dict_set_bools(cntk_dict* d, const char* key, const int* values, size_t count) {
  return dict_set(d, key, [&] {
    if (count) need(values, "values");
    DictValue::List l;
    for (size_t i = 0; i < count; ++i) l.push_back(DictValue(values[i] != 0));
    return DictValue(std::move(l));
  });
}
cntk_status cntk_dict_set_ints(cntk_dict* d, const char* key, const int64_t* values, size_t count) {
  return dict_set(d, key, [&] {
    if (count) need(values, "values");
    DictValue::List l;
    for (size_t i = 0; i < count; ++i) l.push_back(DictValue(values[i]));
    return DictValue(std::move(l));
  });
}
cntk_status cntk_dict_set_ndarray(cntk_dict* d, const char* key, const cntk_ndarray* value) {
  return dict_set(d, key, [&] { return DictValue(need(value, "value")->view); });
}

}  // extern "C"
