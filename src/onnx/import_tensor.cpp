// ONNX tensor-manipulation ops that have no single engine op: shapes and sizes, casts,
// generated tensors (ConstantOfShape, EyeLike, Range, the Hann/Hamming/Blackman windows,
// MelWeightMatrix), masks (Trilu, Where), Mod, CumSum, TopK, OneHot, gathers and scatters,
// Compress, CenterCropPad, DepthToSpace/SpaceToDepth, Col2Im, ReverseSequence, Unique,
// NonMaxSuppression. The engine computes integers and booleans as float32 (as CNTK did), so
// an integer cast rounds the value the ONNX way and keeps it as a float; the declared ONNX
// type travels as the output's element type. Values the rules need while reading (shapes,
// axes, k) must be known then: initializers, Constant nodes, or computed from them.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "onnx/import_axes.h"
#include "onnx/tensor.h"
#include "onnx/import_batch.h"
#include "onnx/import_float.h"

namespace cntk::onnx_io {

namespace {

using ::onnx::TensorProto;
using Vars = std::vector<Variable>;

// Rules pass a declared type other than float32 on to their output.
bool keeps_type(int32_t t) { return t != TensorProto::FLOAT; }

Variable out(const FunctionPtr& f) { return f->output(); }

// The width and signedness of ONNX's 4- and 2-bit integer types.
std::optional<std::pair<int, bool>> small_int_bits(int32_t t) {
  switch (t) {
    case TensorProto::INT4: return std::pair{4, true};
    case TensorProto::UINT4: return std::pair{4, false};
    case TensorProto::INT2: return std::pair{2, true};
    case TensorProto::UINT2: return std::pair{2, false};
    default: return std::nullopt;
  }
}

Variable scalar(ImportContext& c, const Variable& like, double v) {
  return Variable::constant(NDShape{}, like.dtype(), v, c.name() + "/const");
}

// A constant of the given values (NumPy order) as float32.
Variable constant_f(ImportContext& c, const NDShape& shape, const std::vector<double>& values) {
  NDArrayView v(DataType::Float, shape);
  for (size_t k = 0; k < values.size(); ++k) v.data<float>()[k] = float(values[k]);
  return Variable::constant(v, c.name());
}

// The static shape of input i with its dynamic axes (ONNX's leading dims) where known.
std::vector<int64_t> static_dims(ImportContext& c, size_t i) {
  Variable x = c.input(i);
  if (!x.dynamic_axes().empty())
    c.fail("input " + std::to_string(i) + " has dynamic axes: its shape is not known while reading");
  for (int64_t d : x.shape().dims())
    if (d < 0) c.fail("input " + std::to_string(i) + " has a free dimension: its shape is not known while reading");
  return x.shape().dims();
}

int64_t normalize_axis(ImportContext& c, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    c.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> known_i64(ImportContext& c, size_t i, const std::string& what) {
  auto v = c.constant_input_i64(i);
  if (!v) c.fail("its " + what + " input must be known while reading (an initializer or computed from constants)");
  return *v;
}

// trunc(v): towards zero, as ONNX's float -> integer casts and fmod round.
Variable trunc(ImportContext& c, const Variable& v) {
  Variable zero = scalar(c, v, 0);
  Variable down = out(c.primitive("Floor", {v}));
  Variable up = out(c.primitive("Negate", {out(c.primitive("Floor", {out(c.primitive("Negate", {v}))}))}));
  return out(c.primitive("Select", {out(c.primitive("Less", {v, zero})), up, down}));
}

// Cast of input 0 to the ONNX element type `to`.
Vars cast_to(ImportContext& c, int32_t to) {
  Variable x = c.input(0);
  const int32_t from = c.input_elem_type(0);
  c.set_output_elem_type(0, to);
  auto as = [&](DataType dt) {
    if (x.dtype() == dt) return x;
    return out(c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(dt)}}));
  };
  switch (to) {
    case TensorProto::FLOAT: return {as(DataType::Float)};
    case TensorProto::DOUBLE: return {as(DataType::Double)};
    case TensorProto::FLOAT16: return {as(DataType::Float16)};
    case TensorProto::BOOL: return {out(c.primitive("NotEqual", {x, scalar(c, x, 0)}))};
    default: break;
  }
  if (auto y = cast_to_narrow_float(c, x, to, c.attr_int("saturate", 1) != 0)) return {*y};
  if (auto bits = small_int_bits(to)) {
    // 4- and 2-bit integers: towards zero, then wrapped into the type's range as ONNX's
    // reference does (ml_dtypes' conversion): t - 2^bits floor((t - lo) / 2^bits).
    Variable f = as(DataType::Float);
    Variable t = is_float_type(from) ? trunc(c, f) : f;
    const double n = std::ldexp(1.0, bits->first), lo = bits->second ? -n / 2 : 0;
    Variable k = out(c.primitive(
        "Floor",
        {out(c.primitive("ElementTimes", {out(c.primitive("Minus", {t, scalar(c, t, lo)})), scalar(c, t, 1 / n)}))}));
    return {out(c.primitive("Minus", {t, out(c.primitive("ElementTimes", {k, scalar(c, t, n)}))}))};
  }
  if (!is_integer_type(to))
    c.fail("a cast to " + TensorProto::DataType_Name(TensorProto::DataType(to)) +
           " is not supported (float16/32/64, bool and integer types are)");
  // Integers are kept as float32; from a float type they round towards zero. Wrap-around
  // of values outside the target's range is not reproduced.
  Variable f = as(DataType::Float);
  return {is_float_type(from) ? trunc(c, f) : f};
}

// CumSum (Plus) and CumProd (ElementTimes).
Vars cumulative(ImportContext& c, const std::string& op, double identity) {
  Variable x = c.input(0);
  const int64_t rank = int64_t(x.shape().rank());
  const auto axis_v = known_i64(c, 1, "axis");
  if (axis_v.size() != 1) c.fail("axis must be a scalar");
  const int64_t axis = normalize_axis(c, axis_v[0], rank);
  const int64_t n = x.shape()[size_t(axis)];
  if (n <= 0) c.fail("the accumulated axis must have a known, positive length");
  const bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  if (is_integer_type(c.input_elem_type(0)) || c.input_elem_type(0) == TensorProto::BOOL)
    c.set_output_elem_type(0, c.input_elem_type(0));
  auto slice = [&](int64_t k) {
    return out(
        c.primitive("Slice", {x}, Dictionary{{"axis", Axis(int(axis))}, {"beginIndex", k}, {"endIndex", k + 1}}));
  };
  // A running sum (product) over the slices along the axis (the test and exporter lengths are small).
  std::vector<Variable> parts(static_cast<size_t>(n));
  Variable run;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t k = reverse ? n - 1 - s : s;
    Variable xk = slice(k);
    if (exclusive) {
      // The first output is the identity (0 or 1) in the slice's shape.
      parts[size_t(k)] = run.defined()
                             ? run
                             : out(c.primitive("Plus", {out(c.primitive("ElementTimes", {xk, scalar(c, xk, 0)})),
                                                        scalar(c, xk, identity)}));
      run = run.defined() ? out(c.primitive(op, {run, xk})) : xk;
    } else {
      run = run.defined() ? out(c.primitive(op, {run, xk})) : xk;
      parts[size_t(k)] = run;
    }
  }
  if (n == 1) return {parts[0]};
  return {out(c.primitive("Splice", parts, Dictionary{{"axis", Axis(int(axis))}}))};
}

Vars trilu(ImportContext& c) {
  Variable x = c.input(0);
  const auto dims = x.shape().dims();
  if (dims.size() < 2) c.fail("the input must have rank 2 or more");
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  if (rows < 0 || cols < 0) c.fail("the last two dimensions must be known");
  int64_t k = 0;
  if (c.has_input(1)) {
    const auto kv = known_i64(c, 1, "k");
    if (kv.size() != 1) c.fail("k must be a scalar");
    k = kv[0];
  }
  const bool upper = c.attr_int("upper", 1) != 0;
  if (c.input_elem_type(0) != TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  std::vector<double> mask(size_t(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask[size_t(i * cols + j)] = (upper ? j - i >= k : j - i <= k) ? 1.0 : 0.0;
  Variable m = constant_f(c, NDShape({rows, cols}), mask);
  // Select, not a product: the zeroed elements may hold inf or NaN.
  return {out(c.primitive("Select", {m, x, out(c.primitive("ElementTimes", {x, scalar(c, x, 0)}))}))};
}

Vars mod(ImportContext& c) {
  Variable x = c.input(0), y = c.input(1);
  const bool fmod = c.attr_int("fmod", 0) != 0;
  const int32_t t = c.input_elem_type(0);
  if (t != TensorProto::FLOAT) c.set_output_elem_type(0, t);
  Variable q = out(c.primitive("ElementDivide", {x, y}));
  // fmod: the remainder takes the dividend's sign (truncated quotient); else the divisor's (floored).
  if (fmod || !is_float_type(t)) {
    Variable whole = fmod ? trunc(c, q) : out(c.primitive("Floor", {q}));
    return {out(c.primitive("Minus", {x, out(c.primitive("ElementTimes", {whole, y}))}))};
  }
  // Floats as NumPy's mod: the truncated remainder (x itself for an infinite divisor, where
  // the product would be NaN), moved by y where it is not 0 and its sign differs from y's.
  Variable zero = scalar(c, x, 0), inf = scalar(c, x, std::numeric_limits<double>::infinity());
  Variable r = out(c.primitive("Minus", {x, out(c.primitive("ElementTimes", {trunc(c, q), y}))}));
  r = out(c.primitive("Select", {out(c.primitive("Equal", {out(c.primitive("Abs", {y})), inf})), x, r}));
  Variable differ =
      out(c.primitive("NotEqual", {out(c.primitive("Less", {r, zero})), out(c.primitive("Less", {y, zero}))}));
  Variable move = out(c.primitive("ElementTimes", {differ, out(c.primitive("NotEqual", {r, zero}))}));
  return {out(c.primitive("Plus", {r, out(c.primitive("Select", {move, y, zero}))}))};
}

Vars topk(ImportContext& c) {
  Variable x = c.input(0);
  // K is an input from opset 10, the attribute k before.
  const auto kv = c.opset() < 10 ? std::vector<int64_t>{c.attr_int("k")} : known_i64(c, 1, "K");
  if (kv.size() != 1) c.fail("K must hold one value");
  const int64_t rank = int64_t(x.shape().rank());
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank);
  const bool largest = c.attr_int("largest", 1) != 0;
  Variable in = largest ? x : out(c.primitive("Negate", {x}));
  FunctionPtr f = c.primitive("TopK", {in}, Dictionary{{"numItems", kv[0]}, {"axis", Axis(int(axis))}});
  Variable values = f->outputs()[0], indices = f->outputs()[1];
  if (!largest) values = out(c.primitive("Negate", {values}));
  if (c.input_elem_type(0) != TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  c.set_output_elem_type(1, TensorProto::INT64);
  return {values, indices};
}

Vars onehot(ImportContext& c) {
  Variable idx = c.input(0), values = c.input(2);
  const auto depth_v = c.constant_input(1);
  if (!depth_v) c.fail("its depth input must be known while reading");
  const int64_t depth = int64_t(depth_v->cast(DataType::Double).item());
  const int64_t rank = int64_t(idx.shape().rank());
  const int64_t axis = normalize_axis(c, c.attr_int("axis", -1), rank + 1);
  // Negative indices count from the end.
  Variable zero = scalar(c, idx, 0);
  idx = out(c.primitive("Select", {out(c.primitive("Less", {idx, zero})),
                                   out(c.primitive("Plus", {idx, scalar(c, idx, double(depth))})), idx}));
  Variable hot = out(c.primitive("OneHot", {idx}, Dictionary{{"numClass", depth}, {"onehotAxis", Axis(int(axis))}}));
  auto pick = [&](int64_t k) {
    return out(c.primitive("Slice", {values}, Dictionary{{"axis", Axis(0)}, {"beginIndex", k}, {"endIndex", k + 1}}));
  };
  Variable off = pick(0), on = pick(1);
  if (c.input_elem_type(2) != TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(2));
  // values = [off, on]: off + hot * (on - off).
  return {
      out(c.primitive("Plus", {off, out(c.primitive("ElementTimes", {hot, out(c.primitive("Minus", {on, off}))}))}))};
}

Vars range(ImportContext& c) {
  auto start = c.constant_input(0), limit = c.constant_input(1), delta = c.constant_input(2);
  if (!start || !limit || !delta) c.fail("start, limit and delta must be known while reading");
  const double s = start->cast(DataType::Double).item(), l = limit->cast(DataType::Double).item(),
               d = delta->cast(DataType::Double).item();
  if (d == 0) c.fail("delta must not be 0");
  const int64_t n = std::max<int64_t>(0, int64_t(std::ceil((l - s) / d)));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = s + double(k) * d;
  if (c.input_elem_type(0) != TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  return {constant_f(c, NDShape({n}), v)};
}

// Flat positions of an element-wise index tensor along `axis` of data (ONNX's
// GatherElements/ScatterElements addressing): position m of indices addresses data at m's
// coordinates with the axis coordinate replaced by indices[m].
std::vector<int64_t> element_positions(ImportContext& c, const std::vector<int64_t>& data_dims,
                                       const std::vector<int64_t>& idx_dims, const std::vector<int64_t>& idx,
                                       int64_t axis) {
  const size_t r = data_dims.size();
  if (idx_dims.size() != r) c.fail("indices must have the rank of data");
  std::vector<int64_t> out(idx.size());
  std::vector<int64_t> coord(r, 0);
  for (size_t m = 0; m < idx.size(); ++m) {
    int64_t rest = int64_t(m);
    for (size_t d = r; d-- > 0;) {
      coord[d] = rest % idx_dims[d];
      rest /= idx_dims[d];
    }
    int64_t i = idx[m];
    const int64_t len = data_dims[size_t(axis)];
    if (i < -len || i >= len)
      c.fail("index " + std::to_string(i) + " is out of range for an axis of " + std::to_string(len));
    coord[size_t(axis)] = i < 0 ? i + len : i;
    int64_t flat = 0;
    for (size_t d = 0; d < r; ++d) flat = flat * data_dims[d] + coord[d];
    out[m] = flat;
  }
  return out;
}

Variable flatten(ImportContext& c, const Variable& x) {
  return out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape({-1})}}));
}

// A [rows, cols] 0/1 matrix with ones at (rows_of[k], k) or (k, cols_of[k]).
Variable selection(ImportContext& c, int64_t rows, int64_t cols, const std::vector<std::pair<int64_t, int64_t>>& ones,
                   DataType dt) {
  NDArrayView v = NDArrayView::zeros(DataType::Float, NDShape({rows, cols}));
  for (auto [i, j] : ones) v.data<float>()[i * cols + j] = 1;
  return Variable::constant(dt == DataType::Float ? v : v.cast(dt), c.name() + "/select");
}

// Gathers the flattened data at `pos` (one flat position per output element).
Variable gather_positions(ImportContext& c, const Variable& data, int64_t n, const std::vector<int64_t>& pos,
                          const std::vector<int64_t>& out_dims) {
  std::vector<std::pair<int64_t, int64_t>> ones;
  for (size_t m = 0; m < pos.size(); ++m) ones.push_back({pos[m], int64_t(m)});
  Variable y = out(c.primitive("Times", {flatten(c, data), selection(c, n, int64_t(pos.size()), ones, data.dtype())}));
  if (c.input_elem_type(0) != TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  return out(c.primitive("Reshape", {y}, Dictionary{{"newShape", NDShape(out_dims)}}));
}

// data with the updates applied at their flat positions `pos`. Round r moves the r-th update
// of every position there (a selection-matrix product) and combines it by the reduction, so
// repeated indices apply in order as in ONNX's reference (without a reduction the last wins).
Variable scatter_positions(ImportContext& c, const Variable& data, const Variable& updates,
                           const std::vector<int64_t>& dims, const std::vector<int64_t>& pos) {
  const std::string reduction = c.has_attr("reduction") ? c.attr_string("reduction") : "none";
  static const char* known[] = {"none", "add", "mul", "max", "min"};
  if (std::find(std::begin(known), std::end(known), reduction) == std::end(known))
    c.fail("reduction '" + reduction + "' is not supported");
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<std::vector<int64_t>> landing(static_cast<size_t>(n));
  for (size_t m = 0; m < pos.size(); ++m) landing[size_t(pos[m])].push_back(int64_t(m));
  size_t rounds = 0;
  for (const auto& l : landing) rounds = std::max(rounds, l.size());
  Variable upd = flatten(c, updates), y = flatten(c, data);
  for (size_t r = 0; r < rounds; ++r) {
    std::vector<std::pair<int64_t, int64_t>> ones;
    std::vector<double> mask(static_cast<size_t>(n), 0.0);
    for (int64_t p = 0; p < n; ++p)
      if (landing[size_t(p)].size() > r) {
        ones.push_back({landing[size_t(p)][r], p});
        mask[size_t(p)] = 1;
      }
    Variable moved = out(c.primitive("Times", {upd, selection(c, int64_t(pos.size()), n, ones, data.dtype())}));
    Variable combined = moved;
    if (reduction == "add") combined = out(c.primitive("Plus", {y, moved}));
    if (reduction == "mul") combined = out(c.primitive("ElementTimes", {y, moved}));
    if (reduction == "max" || reduction == "min")
      combined =
          out(c.primitive("Select", {out(c.primitive(reduction == "max" ? "Greater" : "Less", {moved, y})), moved, y}));
    y = out(c.primitive("Select", {constant_f(c, NDShape({n}), mask), combined, y}));
  }
  if (c.input_elem_type(0) != TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  return out(c.primitive("Reshape", {y}, Dictionary{{"newShape", NDShape(dims)}}));
}

int64_t numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// GatherElements and ScatterElements (Scatter) with known indices.
Vars gather_elements(ImportContext& c) {
  const auto dims = static_dims(c, 0);
  const auto idx_dims = c.input(1).shape().dims();
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), int64_t(dims.size()));
  const auto pos = element_positions(c, dims, idx_dims, known_i64(c, 1, "indices"), axis);
  return {gather_positions(c, c.input(0), numel(dims), pos, idx_dims)};
}

Vars scatter_elements(ImportContext& c) {
  const auto dims = static_dims(c, 0);
  const auto idx_dims = c.input(1).shape().dims();
  const int64_t axis = normalize_axis(c, c.attr_int("axis", 0), int64_t(dims.size()));
  const auto pos = element_positions(c, dims, idx_dims, known_i64(c, 1, "indices"), axis);
  return {scatter_positions(c, c.input(0), c.input(2), dims, pos)};
}

// GatherND/ScatterND with known indices [..., k]: each index tuple (after batch_dims leading
// batch coordinates) addresses a slice data[b..., i1..ik, :]; the flat positions of its elements.
std::vector<int64_t> nd_positions(ImportContext& c, const std::vector<int64_t>& dims,
                                  const std::vector<int64_t>& idx_dims, const std::vector<int64_t>& idx,
                                  int64_t batch_dims, std::vector<int64_t>& out_dims) {
  if (idx_dims.empty()) c.fail("indices must have rank 1 or more");
  const int64_t k = idx_dims.back(), b = batch_dims, r = int64_t(dims.size());
  if (b + k > r) c.fail("index tuples longer than data's rank");
  out_dims.assign(idx_dims.begin(), idx_dims.end() - 1);
  for (int64_t d = b + k; d < r; ++d) out_dims.push_back(dims[size_t(d)]);
  int64_t inner = 1, batch = 1;
  for (int64_t d = b + k; d < r; ++d) inner *= dims[size_t(d)];
  for (int64_t d = 0; d < b; ++d) batch *= dims[size_t(d)];
  const int64_t tuples = int64_t(idx.size()) / std::max<int64_t>(k, 1),
                per_batch = tuples / std::max<int64_t>(batch, 1);
  std::vector<int64_t> pos;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t flat = t / per_batch;  // the batch coordinate, flattened
    for (int64_t j = 0; j < k; ++j) {
      const int64_t len = dims[size_t(b + j)];
      int64_t i = idx[size_t(t * k + j)];
      if (i < -len || i >= len)
        c.fail("index " + std::to_string(i) + " is out of range for an axis of " + std::to_string(len));
      flat = flat * len + (i < 0 ? i + len : i);
    }
    for (int64_t e = 0; e < inner; ++e) pos.push_back(flat * inner + e);
  }
  return pos;
}

Vars gather_nd(ImportContext& c) {
  const auto dims = static_dims(c, 0);
  std::vector<int64_t> out_dims;
  const auto pos = nd_positions(c, dims, c.input(1).shape().dims(), known_i64(c, 1, "indices"),
                                c.attr_int("batch_dims", 0), out_dims);
  return {gather_positions(c, c.input(0), numel(dims), pos, out_dims)};
}

Vars scatter_nd(ImportContext& c) {
  const auto dims = static_dims(c, 0);
  std::vector<int64_t> out_dims;
  const auto pos = nd_positions(c, dims, c.input(1).shape().dims(), known_i64(c, 1, "indices"), 0, out_dims);
  return {scatter_positions(c, c.input(0), c.input(2), dims, pos)};
}

// Input i's values as float64, for rules whose output shape depends on them (the input must be known).
NDArrayView known_values(ImportContext& c, size_t i) {
  auto v = c.constant_input(i);
  if (!v)
    c.fail(
        "only a known input (a constant, or computed from constants) is supported: the output's shape depends on its "
        "values");
  return v->cast(DataType::Double).contiguous();
}

// NonZero of a known tensor: the coordinates of its non-zero elements, [rank, count].
Vars nonzero(ImportContext& c) {
  const NDArrayView d = known_values(c, 0);
  const auto dims = d.shape().dims();
  std::vector<std::vector<double>> coords(dims.size());
  for (int64_t m = 0; m < d.numel(); ++m) {
    if (d.data<double>()[m] == 0) continue;
    int64_t rest = m;
    for (size_t k = dims.size(); k-- > 0;) {
      coords[k].push_back(double(rest % dims[k]));
      rest /= dims[k];
    }
  }
  const int64_t count = coords.empty() ? 0 : int64_t(coords[0].size());
  std::vector<double> flat;
  for (auto& row : coords) flat.insert(flat.end(), row.begin(), row.end());
  c.set_output_elem_type(0, TensorProto::INT64);
  return {constant_f(c, NDShape({int64_t(dims.size()), count}), flat)};
}

// CenterCropPad: each named axis cut to its centre or padded with zeros around it to the
// given length; an odd difference leaves the extra element at the end.
Vars center_crop_pad(ImportContext& c) {
  Variable x = c.input(0);
  const std::vector<int64_t> dims = static_dims(c, 0);
  const int64_t rank = int64_t(dims.size());
  const std::vector<int64_t> shape = known_i64(c, 1, "shape");
  std::vector<int64_t> axes = c.attr_ints("axes", std::vector<int64_t>{});
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  if (axes.size() != shape.size()) c.fail("shape needs one length per axis");
  std::vector<int64_t> head(size_t(rank), 0), foot(size_t(rank), 0);
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = normalize_axis(c, axes[k], rank), n = dims[size_t(a)], want = shape[k];
    if (want < 0) c.fail("a negative length");
    if (want < n) {
      const int64_t b = (n - want) / 2;
      x = out(c.primitive("Slice", {x}, Dictionary{{"axis", Axis(int(a))}, {"beginIndex", b}, {"endIndex", b + want}}));
    } else if (want > n) {
      head[size_t(a)] = (want - n) / 2;
      foot[size_t(a)] = want - n - head[size_t(a)];
    }
  }
  if (std::any_of(head.begin(), head.end(), [](int64_t v) { return v > 0; }) ||
      std::any_of(foot.begin(), foot.end(), [](int64_t v) { return v > 0; })) {
    DictValue::List h, f;
    for (int64_t v : head) h.emplace_back(v);
    for (int64_t v : foot) f.emplace_back(v);
    x = out(c.primitive(
        "Pad", {x},
        Dictionary{
            {"paddingHead", h}, {"paddingFoot", f}, {"paddingMode", int64_t(0)}, {"paddingConstantValue", 0.0}}));
  }
  if (keeps_type(c.input_elem_type(0))) c.set_output_elem_type(0, c.input_elem_type(0));
  return {x};
}

// A generated tensor (computed in double) as a constant of the node's output_datatype.
Variable generated(ImportContext& c, const NDArrayView& v) {
  const int32_t t = int32_t(c.attr_int("output_datatype", TensorProto::FLOAT));
  const DataType dt = t == TensorProto::DOUBLE    ? DataType::Double
                      : t == TensorProto::FLOAT16 ? DataType::Float16
                                                  : DataType::Float;
  if (keeps_type(t)) c.set_output_elem_type(0, t);
  return Variable::constant(dt == DataType::Double ? v : v.cast(dt), c.name());
}

// Hann, Hamming and Blackman windows of a known size: cosine sums over n / N (periodic) or
// n / (N - 1) (symmetric), computed in double and given the output_datatype.
ImportFn window(double a0, double a1, double a2) {
  return [a0, a1, a2](ImportContext& c) {
    const auto size = known_i64(c, 0, "size");
    if (size.size() != 1 || size[0] < 0) c.fail("size must be one non-negative value");
    const int64_t n = size[0];
    const double denom = double(c.attr_int("periodic", 1) != 0 ? n : n - 1);
    NDArrayView v(DataType::Double, NDShape({n}));
    const double pi = std::acos(-1.0);
    for (int64_t k = 0; k < n; ++k)
      v.data<double>()[k] = a0 - a1 * std::cos(2 * pi * double(k) / denom) + a2 * std::cos(4 * pi * double(k) / denom);
    return Vars{generated(c, v)};
  };
}

// MelWeightMatrix: triangular filters over the one-sided spectrum's bins, as ONNX's
// reference computes them (its mel step divides by num_mel_bins + 2; the edges' mels in float32).
Vars mel_weight_matrix(ImportContext& c) {
  auto one = [&](size_t i, const char* what) {
    auto v = c.constant_input(i);
    if (!v || v->numel() != 1) c.fail(std::string("its ") + what + " input must be a known scalar");
    return v->cast(DataType::Double).contiguous().data<double>()[0];
  };
  const int64_t mels = int64_t(one(0, "num_mel_bins")), dft = int64_t(one(1, "dft_length"));
  const double rate = one(2, "sample_rate");
  auto mel = [](double hz) { return double(2595.f * std::log1p(float(hz) / 700.f)) / std::log(10.0); };
  const double lo = mel(one(3, "lower_edge_hertz")), hi = mel(one(4, "upper_edge_hertz"));
  if (mels <= 0 || dft <= 0 || rate <= 0) c.fail("num_mel_bins, dft_length and sample_rate must be positive");
  const int64_t bins = dft / 2 + 1;
  const double step = (hi - lo) / double(mels + 2);
  std::vector<int64_t> f(size_t(mels + 2));
  for (int64_t k = 0; k < mels + 2; ++k) {
    const double hz = 700 * std::expm1((double(k) * step + lo) / 2595 * std::log(10.0));
    f[size_t(k)] = int64_t(std::floor(double(dft + 1) * hz / rate));
  }
  NDArrayView v(DataType::Double, NDShape({bins, mels}));
  double* m = v.data<double>();
  std::fill(m, m + bins * mels, 0.0);
  auto at = [&](int64_t j, int64_t i) -> double& {
    if (j < 0 || j >= bins) c.fail("a filter edge falls outside the spectrum");
    return m[j * mels + i];
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t l = f[size_t(i)], ctr = f[size_t(i) + 1], r = f[size_t(i) + 2];
    if (ctr == l)
      at(ctr, i) = 1;
    else
      for (int64_t j = l; j <= ctr; ++j) at(j, i) = double(j - l) / double(ctr - l);
    for (int64_t j = ctr; j < r; ++j) at(j, i) = double(r - j) / double(r - ctr);
  }
  return {generated(c, v)};
}

// Compress with a known condition: the selected positions along `axis` (of the flattened
// input without one) gathered as rows.
Vars compress(ImportContext& c) {
  Variable x = c.input(0);
  std::vector<int64_t> dims = static_dims(c, 0);
  auto cond = c.constant_input(1);
  if (!cond) c.fail("its condition must be known while reading");
  NDArrayView cv = cond->cast(DataType::Float).contiguous().copy();
  int64_t rank = int64_t(dims.size()), axis = 0;
  if (c.has_attr("axis")) {
    axis = normalize_axis(c, c.attr_int("axis"), rank);
  } else {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    x = out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape({n})}}));
    dims = {n};
    rank = 1;
  }
  std::vector<double> picked;
  const int64_t m = std::min<int64_t>(cv.shape().total_size(), dims[size_t(axis)]);
  for (int64_t k = 0; k < m; ++k)
    if (cv.data<float>()[k] != 0) picked.push_back(double(k));
  if (picked.empty()) c.fail("a condition that selects nothing (an empty result) is not supported");
  Variable idx = constant_f(c, NDShape({int64_t(picked.size())}), picked);
  std::vector<int64_t> front{axis};
  for (int64_t k = 0; k < rank; ++k)
    if (k != axis) front.push_back(k);
  Variable moved = axis == 0 ? x : out(c.primitive("TransposeAxes", {x}, Dictionary{{"axisVec", axis_list(front)}}));
  Variable g = out(c.primitive("Gather", {idx, moved}));
  if (axis != 0) {
    std::vector<int64_t> back;
    for (int64_t k = 1; k <= axis; ++k) back.push_back(k);
    back.push_back(0);
    for (int64_t k = axis + 1; k < rank; ++k) back.push_back(k);
    g = out(c.primitive("TransposeAxes", {g}, Dictionary{{"axisVec", axis_list(back)}}));
  }
  if (keeps_type(c.input_elem_type(0))) c.set_output_elem_type(0, c.input_elem_type(0));
  return {g};
}

// DepthToSpace and SpaceToDepth over [N, C, H, W], N as the batch axis (over_batch): each
// sample (C, H, W) is reshaped to five axes, transposed and reshaped back, with the block axes
// before the channels (DCR) or after them (CRD).
ImportFn depth_space(bool to_space) {
  return [to_space](ImportContext& c) {
    const int64_t b = c.attr_int("blocksize");
    const std::string mode = c.attr_string("mode", "DCR");
    if (b < 1 || (mode != "DCR" && mode != "CRD")) c.fail("blocksize must be positive and mode DCR or CRD");
    const bool dcr = mode == "DCR";
    Variable y = over_batch(c, 0, [&](const Variable& x) {
      const NDShape s = x.shape();
      if (s.rank() != 3 || !s.is_known()) c.fail("the input must be [N, C, H, W] of known C, H and W");
      const int64_t ch = s[0], h = s[1], w = s[2];
      std::vector<int64_t> five, perm, last;
      if (to_space) {
        if (ch % (b * b)) c.fail("the channels must be a multiple of blocksize^2");
        const int64_t co = ch / (b * b);
        five = dcr ? std::vector<int64_t>{b, b, co, h, w} : std::vector<int64_t>{co, b, b, h, w};
        perm = dcr ? std::vector<int64_t>{2, 3, 0, 4, 1} : std::vector<int64_t>{0, 3, 1, 4, 2};
        last = {co, h * b, w * b};
      } else {
        if (h % b || w % b) c.fail("the spatial size must be a multiple of blocksize");
        five = {ch, h / b, b, w / b, b};
        perm = dcr ? std::vector<int64_t>{2, 4, 0, 1, 3} : std::vector<int64_t>{0, 2, 4, 1, 3};
        last = {ch * b * b, h / b, w / b};
      }
      Variable t = out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape(five)}}));
      t = out(c.primitive("TransposeAxes", {t}, Dictionary{{"axisVec", axis_list(perm)}}));
      return out(c.primitive("Reshape", {t}, Dictionary{{"newShape", NDShape(last)}}));
    });
    return keep_type(c, 0, {y});
  };
}

// Unique of a known tensor (its output shapes depend on its values): the distinct slices
// along `axis` (elements of the flattened tensor without one), sorted or in order of first
// appearance, with their first indices, each slice's unique index and the counts.
// Col2Im: the columns of sliding blocks summed back into an image, as one product by a
// constant 0/1 matrix from (block offset, block position) to image pixel, per channel:
// input [N, C * prod(block), L] -> [N, C, K L] times [K L, prod(image)] -> [N, C, image...].
Vars col2im(ImportContext& c) {
  Variable x = c.input(0);
  const auto image = known_i64(c, 1, "image_shape"), block = known_i64(c, 2, "block_shape");
  const size_t nd = image.size();
  if (block.size() != nd || nd == 0) c.fail("image_shape and block_shape must have one entry per spatial axis");
  const auto dil = c.attr_ints("dilations", std::vector<int64_t>(nd, 1));
  const auto str = c.attr_ints("strides", std::vector<int64_t>(nd, 1));
  const auto pads = c.attr_ints("pads", std::vector<int64_t>(2 * nd, 0));
  if (dil.size() != nd || str.size() != nd || pads.size() != 2 * nd)
    c.fail("dilations, strides or pads has the wrong length");
  const auto xd = static_dims(c, 0);
  if (xd.size() != 3) c.fail("the input must be [N, C * prod(block_shape), L]");
  int64_t k = 1, hw = 1, l = 1;
  std::vector<int64_t> blocks(nd);
  for (size_t d = 0; d < nd; ++d) {
    k *= block[d], hw *= image[d];
    blocks[d] = (image[d] + pads[d] + pads[d + nd] - (dil[d] * (block[d] - 1) + 1)) / str[d] + 1;
    if (blocks[d] <= 0) c.fail("the blocks do not fit the padded image");
    l *= blocks[d];
  }
  if (xd[1] % k || xd[2] != l) c.fail("the input's shape does not match image_shape and block_shape");
  const int64_t ch = xd[1] / k;
  std::vector<double> m(size_t(k * l * hw), 0.0);
  std::vector<int64_t> bo(nd), bp(nd);
  for (int64_t ki = 0; ki < k; ++ki)
    for (int64_t li = 0; li < l; ++li) {
      // Row-major block offset and block position; the pixel they land on, if inside.
      for (int64_t d = int64_t(nd) - 1, a = ki, b = li; d >= 0; --d) {
        bo[size_t(d)] = a % block[size_t(d)], a /= block[size_t(d)];
        bp[size_t(d)] = b % blocks[size_t(d)], b /= blocks[size_t(d)];
      }
      int64_t pix = 0;
      bool inside = true;
      for (size_t d = 0; d < nd && inside; ++d) {
        const int64_t p = bp[d] * str[d] - pads[d] + bo[d] * dil[d];
        inside = p >= 0 && p < image[d];
        pix = pix * image[d] + p;
      }
      if (inside) m[size_t((ki * l + li) * hw + pix)] = 1;
    }
  Variable flat = out(c.primitive("Reshape", {x}, {{"newShape", NDShape({xd[0], ch, k * l})}}));
  NDArrayView mv(DataType::Double, NDShape({k * l, hw}));
  std::copy(m.begin(), m.end(), mv.data<double>());
  Variable mc = Variable::constant(x.dtype() == DataType::Double ? mv : mv.cast(x.dtype()), c.name() + "/scatter");
  Variable y = out(c.primitive("Times", {flat, mc}, {{"outputRank", int64_t(1)}}));
  std::vector<int64_t> yd{xd[0], ch};
  yd.insert(yd.end(), image.begin(), image.end());
  return {out(c.primitive("Reshape", {y}, {{"newShape", NDShape(yd)}}))};
}

// ReverseSequence with known lengths: per batch entry, its first sequence_lens[b] steps along
// the time axis in reverse order, the rest as they are (slices spliced back).
Vars reverse_sequence(ImportContext& c) {
  Variable x = c.input(0);
  const auto lens = known_i64(c, 1, "sequence_lens");
  const int64_t ba = static_axis_of(c, 0, c.attr_int("batch_axis", 1)),
                ta = static_axis_of(c, 0, c.attr_int("time_axis", 0));
  if (ba == ta) c.fail("batch_axis and time_axis must differ");
  const int64_t nb = x.shape()[size_t(ba)], nt = x.shape()[size_t(ta)];
  if (nb <= 0 || nt <= 0) c.fail("the batch and time axes must have known lengths");
  if (int64_t(lens.size()) != nb) c.fail("sequence_lens must have one entry per batch entry");
  auto range = [&](const Variable& v, int64_t axis, int64_t b, int64_t e) {
    return out(c.primitive("Slice", {v}, {{"axis", Axis(int(axis))}, {"beginIndex", b}, {"endIndex", e}}));
  };
  Vars rows;
  for (int64_t b = 0; b < nb; ++b) {
    Variable xb = range(x, ba, b, b + 1);
    const int64_t len = lens[size_t(b)];
    if (len < 0 || len > nt) c.fail("a sequence length is out of range");
    if (len <= 1) {
      rows.push_back(xb);
      continue;
    }
    Vars parts;
    for (int64_t t = len - 1; t >= 0; --t) parts.push_back(range(xb, ta, t, t + 1));
    if (len < nt) parts.push_back(range(xb, ta, len, nt));
    rows.push_back(out(c.primitive("Splice", parts, {{"axis", Axis(int(ta))}})));
  }
  Variable y = rows.size() == 1 ? out(c.primitive("Pass", {rows[0]}))
                                : out(c.primitive("Splice", rows, {{"axis", Axis(int(ba))}}));
  return keep_type(c, 0, {y});
}

// Optional values: the reader holds tensors only, so an optional holds an element exactly
// when the node names an input (an absent input is the empty optional).
Vars optional_has_element(ImportContext& c) {
  c.set_output_elem_type(0, TensorProto::BOOL);
  NDArrayView v(DataType::Float, NDShape{});
  v.data<float>()[0] = c.has_input(0) ? 1.f : 0.f;
  return {Variable::constant(v, c.name())};
}
Vars optional_get_element(ImportContext& c) {
  if (!c.has_input(0)) c.fail("the optional is empty");
  return keep_type(c, 0, {out(c.primitive("Pass", {c.input(0)}))});
}

// NonMaxSuppression of known boxes and scores (the output's length depends on their values):
// per batch and class, the boxes by falling score (ties: lower index first) above
// score_threshold, each kept unless its IoU with a kept one exceeds iou_threshold, at most
// max_output_boxes_per_class of them; [batch, class, box] rows as ONNX's reference.
Vars non_max_suppression(ImportContext& c) {
  auto known_doubles = [&](size_t i) -> std::optional<std::vector<double>> {
    if (!c.has_input(i)) return std::nullopt;
    auto v = c.constant_input(i);
    if (!v)
      c.fail(
          "only known inputs (constants, or computed from them) are supported: the output's shape depends on "
          "their values");
    const NDArrayView d = v->cast(DataType::Double).contiguous();
    return std::vector<double>(d.data<double>(), d.data<double>() + d.numel());
  };
  const auto boxes = *known_doubles(0), scores = *known_doubles(1);
  const auto max_out = known_doubles(2), iou_t = known_doubles(3), score_t = known_doubles(4);
  const auto bd = c.input(0).shape().dims(), sd = c.input(1).shape().dims();
  if (bd.size() != 3 || bd[2] != 4 || sd.size() != 3 || sd[0] != bd[0] || sd[2] != bd[1])
    c.fail("boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]");
  const int64_t nb = bd[0], nc = sd[1], n = bd[1];
  const int64_t limit = max_out && !max_out->empty() ? std::max<int64_t>(int64_t((*max_out)[0]), 0) : 0;
  const double iou_threshold = iou_t && !iou_t->empty() ? (*iou_t)[0] : 0.0;
  const bool center = c.attr_int("center_point_box", 0) != 0;
  // A box as (x_min, x_max, y_min, y_max).
  auto extent = [&](int64_t b, int64_t k) {
    const double* p = &boxes[size_t((b * n + k) * 4)];
    if (center) return std::array<double, 4>{p[0] - p[2] / 2, p[0] + p[2] / 2, p[1] - p[3] / 2, p[1] + p[3] / 2};
    return std::array<double, 4>{std::min(p[1], p[3]), std::max(p[1], p[3]), std::min(p[0], p[2]),
                                 std::max(p[0], p[2])};
  };
  auto suppresses = [&](int64_t b, int64_t i, int64_t j) {
    const auto u = extent(b, i), v = extent(b, j);
    const double w = std::min(u[1], v[1]) - std::max(u[0], v[0]), h = std::min(u[3], v[3]) - std::max(u[2], v[2]);
    if (w <= 0 || h <= 0) return false;
    const double inter = w * h, a1 = (u[1] - u[0]) * (u[3] - u[2]), a2 = (v[1] - v[0]) * (v[3] - v[2]);
    const double uni = a1 + a2 - inter;
    if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;
    return inter / uni > iou_threshold;
  };
  std::vector<double> rows;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t cl = 0; cl < nc; ++cl) {
      const double* sc = &scores[size_t((b * nc + cl) * n)];
      std::vector<int64_t> cand;
      for (int64_t k = 0; k < n; ++k)
        if (!score_t || score_t->empty() || sc[k] > (*score_t)[0]) cand.push_back(k);
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t x, int64_t y) { return sc[x] > sc[y]; });
      std::vector<int64_t> kept;
      for (int64_t k : cand) {
        if (int64_t(kept.size()) >= limit) break;
        if (std::none_of(kept.begin(), kept.end(), [&](int64_t j) { return suppresses(b, k, j); })) {
          kept.push_back(k);
          rows.insert(rows.end(), {double(b), double(cl), double(k)});
        }
      }
    }
  c.set_output_elem_type(0, TensorProto::INT64);
  const int64_t m = int64_t(rows.size() / 3);
  if (m == 0) c.fail("no box is selected: an empty result is not supported");
  return {constant_f(c, NDShape({m, 3}), rows)};
}

Vars unique(ImportContext& c) {
  const NDArrayView d = known_values(c, 0);
  std::vector<int64_t> dims = d.shape().dims();
  const bool has_axis = c.has_attr("axis");
  if (!has_axis) dims = {d.numel()};
  const int64_t axis = has_axis ? normalize_axis(c, c.attr_int("axis"), int64_t(dims.size())) : 0;
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < axis; ++k) outer *= dims[size_t(k)];
  for (size_t k = size_t(axis) + 1; k < dims.size(); ++k) inner *= dims[k];
  const int64_t n = dims[size_t(axis)];
  auto slice = [&](int64_t k) {
    std::vector<double> e;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) e.push_back(d.data<double>()[(o * n + k) * inner + i]);
    return e;
  };
  std::vector<std::vector<double>> uniq;
  std::vector<double> first, inverse(static_cast<size_t>(n)), counts;
  for (int64_t k = 0; k < n; ++k) {
    auto e = slice(k);
    auto it = std::find(uniq.begin(), uniq.end(), e);
    if (it == uniq.end()) {
      uniq.push_back(e);
      first.push_back(double(k));
      counts.push_back(0);
      it = uniq.end() - 1;
    }
    counts[size_t(it - uniq.begin())] += 1;
  }
  std::vector<size_t> order(uniq.size());
  for (size_t u = 0; u < order.size(); ++u) order[u] = u;
  if (c.attr_int("sorted", 1) != 0)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return uniq[a] < uniq[b]; });
  std::vector<double> rank(order.size());
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = double(r);
  for (int64_t k = 0; k < n; ++k)
    inverse[size_t(k)] = rank[size_t(std::find(uniq.begin(), uniq.end(), slice(k)) - uniq.begin())];
  const int64_t u = int64_t(uniq.size());
  std::vector<int64_t> ydims = dims;
  ydims[size_t(axis)] = u;
  NDArrayView y(DataType::Double, NDShape(ydims));
  std::vector<double> fs, cs;
  for (int64_t r = 0; r < u; ++r) {
    const auto& e = uniq[order[size_t(r)]];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) y.data<double>()[(o * u + r) * inner + i] = e[size_t(o * inner + i)];
    fs.push_back(first[order[size_t(r)]]);
    cs.push_back(counts[order[size_t(r)]]);
  }
  const DataType dt = c.input(0).dtype();
  if (keeps_type(c.input_elem_type(0))) c.set_output_elem_type(0, c.input_elem_type(0));
  for (size_t k = 1; k < 4; ++k) c.set_output_elem_type(k, TensorProto::INT64);
  return {Variable::constant(dt == DataType::Double ? y : y.cast(dt), c.name()), constant_f(c, NDShape({u}), fs),
          constant_f(c, NDShape({n}), inverse), constant_f(c, NDShape({u}), cs)};
}

}  // namespace

void register_import_tensor() {
  register_onnx_import("Unique", unique, 11);
  register_onnx_import("DepthToSpace", depth_space(true));
  register_onnx_import("SpaceToDepth", depth_space(false));
  register_onnx_import("Compress", compress, 9);
  register_onnx_import("HannWindow", window(0.5, 0.5, 0), 17);
  register_onnx_import("MelWeightMatrix", mel_weight_matrix, 17);
  register_onnx_import("HammingWindow", window(25.0 / 46.0, 1 - 25.0 / 46.0, 0), 17);
  register_onnx_import("BlackmanWindow", window(0.42, 0.5, 0.08), 17);
  register_onnx_import("CenterCropPad", center_crop_pad, 18);
  register_onnx_import("Shape", [](ImportContext& c) {
    // Free dims are read at their probe sizes (ImportContext::Probed): the value is world a's,
    // world b's goes with it, and the shape rules downstream tell the two apart.
    const ImportContext::Probed dims = c.input_probe_dims(0);
    for (int64_t d : dims.a)
      if (d < 0) c.fail("input 0 has a free dimension that does not follow from the graph's inputs");
    const int64_t r = int64_t(dims.a.size());
    auto clamp = [r](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + r : a, 0, r); };
    const int64_t b = clamp(c.attr_int("start", 0)), e = clamp(c.attr_int("end", r));
    std::vector<double> va, vb;
    for (int64_t k = b; k < e; ++k) {
      va.push_back(double(dims.a[size_t(k)]));
      vb.push_back(double(dims.b[size_t(k)]));
    }
    c.set_output_elem_type(0, TensorProto::INT64);
    const NDShape s({int64_t(va.size())});
    if (va != vb) c.set_output_probe(0, constant_f(c, s, vb).value());
    return Vars{constant_f(c, s, va)};
  });
  register_onnx_import("Size", [](ImportContext& c) {
    int64_t n = 1;
    for (int64_t d : static_dims(c, 0)) n *= d;
    c.set_output_elem_type(0, TensorProto::INT64);
    return Vars{constant_f(c, NDShape{}, {double(n)})};
  });
  register_onnx_import("Cast", [](ImportContext& c) { return cast_to(c, int32_t(c.attr_int("to"))); });
  register_onnx_import("NonMaxSuppression", non_max_suppression, 10);
  register_onnx_import("Col2Im", col2im, 18);
  register_onnx_import("ReverseSequence", reverse_sequence, 10);
  register_onnx_import("OptionalHasElement", optional_has_element, 15);
  register_onnx_import("OptionalGetElement", optional_get_element, 15);
  register_onnx_import("CastLike", [](ImportContext& c) { return cast_to(c, c.input_elem_type(1)); });
  register_onnx_import("ConstantOfShape", [](ImportContext& c) {
    const auto probed = c.probed_input_i64(0);
    if (!probed) c.fail("its shape input must be known while reading (an initializer or computed from constants)");
    const auto& shape = probed->a;
    double value = 0;
    int32_t t = TensorProto::FLOAT;
    if (c.has_attr("value")) {
      const auto& tp = c.attr_tensor("value");
      value = c.tensor_value(tp).cast(DataType::Double).contiguous().data<double>()[0];
      t = tp.data_type();
    }
    if (t != TensorProto::FLOAT) c.set_output_elem_type(0, t);
    const DataType dt = t == TensorProto::DOUBLE ? DataType::Double : DataType::Float;
    if (probed->any_depends()) return Vars{c.probed_fill(*probed, dt, value)};
    return Vars{Variable::constant(NDArrayView::full(dt, NDShape(shape), value), c.name())};
  });
  register_onnx_import("EyeLike", [](ImportContext& c) {
    const auto dims = static_dims(c, 0);
    if (dims.size() != 2) c.fail("the input must have rank 2");
    const int64_t k = c.attr_int("k", 0);
    const int32_t t = int32_t(c.attr_int("dtype", c.input_elem_type(0)));
    if (t != TensorProto::FLOAT) c.set_output_elem_type(0, t);
    std::vector<double> v(size_t(dims[0] * dims[1]));
    for (int64_t i = 0; i < dims[0]; ++i)
      if (i + k >= 0 && i + k < dims[1]) v[size_t(i * dims[1] + i + k)] = 1;
    return Vars{constant_f(c, NDShape(dims), v)};
  });
  register_onnx_import("Where", [](ImportContext& c) {
    if (c.input_elem_type(1) != TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(1));
    return Vars{out(c.primitive("Select", {c.input(0), c.input(1), c.input(2)}))};
  });
  register_onnx_import("Range", range);
  register_onnx_import("Trilu", trilu);
  register_onnx_import("Mod", mod);
  register_onnx_import("CumSum", [](ImportContext& c) { return cumulative(c, "Plus", 0); });
  register_onnx_import("CumProd", [](ImportContext& c) { return cumulative(c, "ElementTimes", 1); });
  register_onnx_import("TopK", topk);
  register_onnx_import("OneHot", onehot, 9);
  register_onnx_import("GatherElements", gather_elements, 11);
  register_onnx_import("ScatterElements", scatter_elements, 11);
  register_onnx_import("Scatter", scatter_elements, 9);
  register_onnx_import("NonZero", nonzero, 9);
  register_onnx_import("GatherND", gather_nd, 11);
  register_onnx_import("ScatterND", scatter_nd, 11);
}

}  // namespace cntk::onnx_io
