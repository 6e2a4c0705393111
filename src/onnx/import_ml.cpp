// Rules of ONNX's ai.onnx.ml domain over numeric tensors: Binarizer and ArrayFeatureExtractor.
// The domain's string, map and sequence forms (LabelEncoder over strings, ZipMap, DictVectorizer)
// have no engine values and are refused as unknown op types.
#include "onnx/import.h"

namespace cntk::onnx_io {

namespace {

using Vars = std::vector<Variable>;
Variable out(const FunctionPtr& f) { return f->output(); }

Variable cast(ImportContext& c, const Variable& x, DataType to) {
  return x.dtype() == to ? x : out(c.primitive("Cast", {x}, Dictionary{{"newDataType", int64_t(to)}}));
}

// Binarizer: 1 where x > threshold, else 0, in x's type.
Vars binarizer(ImportContext& c) {
  Variable x = c.input(0);
  Variable th = Variable::constant(NDShape{}, x.dtype(), double(c.attr_float("threshold", 0.0f)), c.name() + "/threshold");
  if (c.input_elem_type(0) != ::onnx::TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  return {cast(c, out(c.primitive("Greater", {x, th})), x.dtype())};
}

// ArrayFeatureExtractor: the entries of the last axis at the (flattened) indices, [..., n]
// (a 1-D input gives [1, n], as ONNX Runtime and the reference do). The indices may be a graph
// input: the pick is a product with their one-hot matrix [N, n], so gradients reach the data.
Vars array_feature_extractor(ImportContext& c) {
  Variable x = c.input(0), idx = c.input(1);
  if (c.input_dyn(0) > 0 || c.input_dyn(1) > 0) c.fail("inputs with dynamic axes are not supported");
  auto dims = x.shape().dims();
  if (dims.empty()) c.fail("the input must have rank 1 or more");
  if (dims.size() == 1) dims.insert(dims.begin(), 1);
  const int64_t n_in = dims.back(), n = int64_t(idx.shape().total_size());
  if (n_in < 0 || n < 0) c.fail("inputs must have known shapes");
  NDArrayView positions(DataType::Float, NDShape({n_in, 1}));
  for (int64_t i = 0; i < n_in; ++i) positions.data<float>()[i] = float(i);
  Variable flat = out(c.primitive("Reshape", {cast(c, idx, DataType::Float)}, Dictionary{{"newShape", NDShape({1, n})}}));
  Variable onehot = cast(c, out(c.primitive("Equal", {Variable::constant(positions, c.name() + "/positions"), flat})),
                         x.dtype());  // [N, n]
  auto xd = dims;
  xd.push_back(1);  // [..., N, 1] times [N, n], summed over N
  Variable p = out(c.primitive(
      "ElementTimes", {out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape(xd)}})), onehot}));
  Variable y = out(c.primitive(
      "ReduceElements", {p},
      Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(-2)}}));
  if (c.input_elem_type(0) != ::onnx::TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  return {y};
}

}  // namespace

void register_import_ml() {
  const std::string domain = "ai.onnx.ml";
  register_onnx_import("Binarizer", binarizer, 1, domain);
  register_onnx_import("ArrayFeatureExtractor", array_feature_extractor, 1, domain);
}

}  // namespace cntk::onnx_io
