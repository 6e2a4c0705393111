// CNTK v1 networks <-> the engine's graph. Both directions go through the in-memory form
// of CNTK's v2 model Dictionary (function_serialize.cpp), as CNTK 2.7 went through its v2
// PrimitiveFunctions: loading builds the Dictionary a v2 file of the same network would hold
// (BackCompat.cpp's node -> PrimitiveOpType table), saving reads the one function_to_dictionary
// writes (CompositeFunction::CreateComputationNetwork's table, the other way).
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "serialize/attribute_types.h"
#include "cntk/legacy_model.h"
#include "cntk/serialize.h"
#include "serialize/v1_model.h"

namespace cntk::v1 {

namespace {

// The names SaveAsLegacyModel gives nodes so that loading gets the uid and name back.
const std::string kUidPrefix = "__v2libuid__";
const std::string kNamePrefix = "__v2libname__";
// The dynamic-axis names of CNTK's input nodes.
const std::string kDefaultDynamicAxis = "*";
const std::string kNoSequenceAxis = "__noSequenceAxis";
// The dynamic axis CNTK's Where node names by default.
const std::string kWhereAxis = "WhereNodeAxis";
// Where the v2 Dictionary names an engine op that CNTK lacks (a CustomProxyOp).
const std::string kEngineOpKey = "opencntk_op";

// v1 node type <-> CNTK PrimitiveOpType name. The first entry of a PrimitiveOpType is the
// node type saving writes.
struct OpPair {
  const char* v1;
  const char* v2;
};
constexpr OpPair kOps[] = {{"Negate", "Negate"},
                           {"Sigmoid", "Sigmoid"},
                           {"Sigmoid", "StableSigmoid"},
                           {"StableSigmoid", "StableSigmoid"},
                           {"Tanh", "Tanh"},
                           {"RectifiedLinear", "ReLU"},
                           {"Exp", "Exp"},
                           {"Log", "Log"},
                           {"Sqrt", "Sqrt"},
                           {"Floor", "Floor"},
                           {"Abs", "Abs"},
                           {"Reciprocal", "Reciprocal"},
                           {"Softmax", "Softmax"},
                           {"Hardmax", "Hardmax"},
                           {"LogSoftmax", "LogSoftmax"},
                           {"Pass", "Pass"},
                           {"Trace", "Pass"},  // loaded without its logging (the Trace is BrainScript's)
                           {"StopGradient", "StopGradient"},
                           {"StraightThrough", "StraightThrough"},
                           {"Plus", "Plus"},
                           {"Minus", "Minus"},
                           {"ElementTimes", "ElementTimes"},
                           {"DiagTimes", "ElementTimes"},
                           {"LogPlus", "LogPlus"},
                           {"Equal", "Equal"},
                           {"NotEqual", "NotEqual"},
                           {"Less", "Less"},
                           {"LessEqual", "LessEqual"},
                           {"Greater", "Greater"},
                           {"GreaterEqual", "GreaterEqual"},
                           {"SumElements", "SumAll"},
                           {"CosDistance", "CosDistance"},
                           {"Logistic", "Logistic"},
                           {"SquareError", "SquaredError"},
                           {"CrossEntropyWithSoftmax", "CrossEntropyWithSoftmax"},
                           {"ClassificationError", "ClassificationError"},
                           {"ErrorPrediction", "ClassificationError"},
                           {"Clip", "Clip"},
                           {"If", "Select"},
                           {"ReconcileDynamicAxis", "ReconcileDynamicAxis"},
                           {"Where", "Where"},
                           {"PackedIndex", "PackedIndex"},
                           {"GatherPacked", "GatherPacked"},
                           {"ScatterPacked", "ScatterPacked"},
                           {"Times", "Times"},
                           {"TransposeTimes", "TransposeTimes"},
                           {"PastValue", "PastValue"},
                           {"FutureValue", "FutureValue"},
                           {"Convolution", "Convolution"},
                           {"Pooling", "Pooling"},
                           {"BatchNormalization", "BatchNormalization"},
                           {"Slice", "Slice"},
                           {"RowStack", "Splice"},
                           {"Dropout", "Dropout"},
                           {"ReduceElements", "ReduceElements"},
                           {"ExponentialLinearUnit", "ELU"},
                           {"Sin", "Sin"},
                           {"Cosine", "Cos"},
                           {"Sinh", "Sinh"},
                           {"Cosh", "Cosh"},
                           {"Asin", "Asin"},
                           {"Acos", "Acos"},
                           {"Asinh", "Asinh"},
                           {"Atanh", "Atanh"},
                           {"Reshape", "Reshape"}};

const char* v2_op_of(const std::string& v1) {
  for (auto& p : kOps)
    if (v1 == p.v1) return p.v2;
  return nullptr;
}
const char* v1_op_of(const std::string& v2) {
  for (auto& p : kOps)
    if (v2 == p.v2) return p.v1;
  return nullptr;
}

// PrimitiveFunction input i is v1 node input order[i] (CNTK's
// GetPrimitiveFunctionInputsToCNTKNodeInputsIndexMap).
std::vector<size_t> input_order(const std::string& v2_op, size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  if ((v2_op == "ClassificationError" || v2_op == "Logistic" || v2_op == "CrossEntropyWithSoftmax") && n >= 2)
    std::swap(order[0], order[1]);
  if (v2_op == "Clip" && n == 3) order = {2, 0, 1};
  if (v2_op == "GatherPacked" && n == 2) order = {1, 0};      // v1: index, data
  if (v2_op == "ScatterPacked" && n == 3) order = {2, 1, 0};  // v1: layout, index, data
  return order;
}

NDShape numpy_shape(const Dims& d) { return NDShape(Dims(d.rbegin(), d.rend())); }
Dims cntk_dims(const NDShape& s) { return Dims(s.dims().rbegin(), s.dims().rend()); }

// A CNTK (0-based, fastest-first) static axis as the Dictionary keeps it (NumPy index).
Axis axis_from_cntk(int64_t k) { return Axis(int(-k - 1)); }
int64_t cntk_axis(const Axis& a) { return -int64_t(a.static_index()) - 1; }

NDArrayView tensor(const Dims& layout, const std::vector<double>& values, bool dbl) {
  NDArrayView v(dbl ? DataType::Double : DataType::Float, numpy_shape(layout));
  if (dbl)
    std::copy(values.begin(), values.end(), static_cast<double*>(v.raw_data()));
  else
    std::transform(values.begin(), values.end(), static_cast<float*>(v.raw_data()), [](double x) { return float(x); });
  return v;
}

// ------------------------------------------------------------------ v1 -> graph

class ToDictionary {
 public:
  ToDictionary(const Network& net, const std::string& source) : net_(net), source_(source) {}

  Dictionary build() {
    std::set<std::string> referenced;
    for (auto& [k, n] : net_.nodes)
      for (auto& in : n.inputs) referenced.insert(in);
    std::set<std::string> roots;
    for (auto& [k, n] : net_.nodes)
      if (!referenced.count(k)) roots.insert(n.name);
    for (auto* g : {&net_.criteria, &net_.evaluations, &net_.outputs})
      for (auto& s : *g) roots.insert(net_.nodes.find(s)->second.name);
    prepare_leaves();
    std::vector<std::string> outs;
    for (auto& r : roots) {  // CNTK sorts the roots by name
      const Node& n = node(r);
      if (n.is_leaf()) continue;
      outs.push_back(visit(n));
    }
    if (outs.empty()) fail(0, "the network has no output node");
    std::string root;
    if (outs.size() == 1) {
      root = outs[0].substr(0, outs[0].rfind("_Output_"));
    } else {
      root = fresh("Combine");
      DictValue::List ins;
      for (auto& o : outs) ins.push_back(o);
      functions_.push_back(function_dict(root, "", "Combine", std::move(ins), {}));
    }
    Dictionary d;
    d["version"] = int64_t(2);
    d["type"] = "CompositeFunction";
    d["uid"] = "CompositeFunction_" + root;
    d["root"] = root;
    d["inputs"] = inputs_;
    d["primitive_functions"] = functions_;
    return d;
  }

 private:
  [[noreturn]] void fail(size_t offset, const std::string& msg) const {
    throw IOError(source_ + ": offset " + std::to_string(offset) + ": " + msg);
  }
  [[noreturn]] void fail(const Node& n, const std::string& msg) const {
    throw IOError(source_ + ": offset " + std::to_string(n.offset) + " (node '" + n.name + "', " + n.op + "): " + msg);
  }
  const Node& node(const std::string& name) const { return net_.nodes.find(name)->second; }

  std::string fresh(const std::string& base) {
    std::string u;
    do u = base + std::to_string(++counter_);
    while (used_.count(u));
    used_.insert(u);
    return u;
  }
  std::string uid_for(const Node& n, const std::string& base) {
    auto [uid, name] = uid_and_name(n.name);
    if (uid.empty() || used_.count(uid)) return fresh(base);
    used_.insert(uid);
    return uid;
  }

  // Value fix-ups CNTK made while loading: legacy 2-D convolution kernels take the tensor
  // shape of the kernel, and batch normalization of files before version 13 stored inverse
  // standard deviations where the variance belongs.
  void prepare_leaves() {
    for (auto& [k, n] : net_.nodes) {
      if (n.op == "Convolution" && !n.inputs.empty()) {
        const Node& w = node(n.inputs[0]);
        if (w.op != "LearnableParameter") continue;
        if (attr_bool(n.attrs, "convolution2D", false) || w.layout.size() == 2) {
          Dims layout = n.attrs.at("kernelShape").as_shape().dims();
          layout.push_back(w.layout.empty() ? 1 : w.layout[0]);
          int64_t size = 1;
          for (auto d : layout) size *= d;
          if (size != int64_t(w.values.size()))
            fail(n, "the kernel '" + w.name + "' holds " + std::to_string(w.values.size()) +
                        " values, not the kernel shape's " + std::to_string(size));
          layouts_[w.name] = layout;
        }
      }
      if (n.op == "BatchNormalization" && n.attrs.count("varianceIsInvStdDev") && n.inputs.size() >= 5) {
        const Node& v = node(n.inputs[4]);
        double eps = attr_double(n.attrs, "epsilon", 0);
        std::vector<double> var = v.values;
        for (auto& x : var) x = 1.0 / (x * x) + eps;
        values_[v.name] = var;
      }
    }
  }

  std::string leaf(const Node& n) {
    auto it = done_.find(n.name);
    if (it != done_.end()) return it->second;
    auto [uid0, name0] = uid_and_name(n.name);
    std::string name = name0;
    Dictionary v;
    v["version"] = int64_t(1);
    v["type"] = "Variable";
    v["name"] = name;
    v["data_type"] = int64_t(n.is_double() ? 2 : 1);
    v["is_sparse"] = n.op == "SparseInputValue";
    std::string uid;
    if (n.op == "LearnableParameter") {
      bool constant = n.lr_mult == 0;
      uid = uid_for(n, constant ? "Constant" : "Parameter");
      Dims layout = layouts_.count(n.name) ? layouts_.at(n.name) : n.layout;
      // BrainScript kept bias vectors as [n x 1] matrices, and CNTK's v1 shapes ignore trailing
      // singleton axes ([n x 1] and [n] combine as the same shape); the engine's shapes are
      // exact, so such a column loads as the vector [n].
      if (!layouts_.count(n.name) && layout.size() == 2 && layout[1] == 1) layout.pop_back();
      const auto& values = values_.count(n.name) ? values_.at(n.name) : n.values;
      v["kind"] = int64_t(constant ? 3 : 2);
      v["shape"] = numpy_shape(layout);
      v["value"] = tensor(layout, values, n.is_double());
      v["dynamic_axis"] = DictValue::List{};
      v["needs_gradient"] = !constant;
    } else {
      uid = uid_for(n, "Input");
      v["kind"] = int64_t(0);
      v["shape"] = numpy_shape(n.layout);
      v["needs_gradient"] = n.lr_mult != 0;
      const std::string& a = n.dynamic_axis;
      DictValue::List axes;
      if (a.empty() || a.rfind(kDefaultDynamicAxis, 0) == 0)
        axes.push_back(Axis::default_dynamic_axis());
      else if (a.rfind(kNoSequenceAxis, 0) != 0)
        axes.push_back(Axis::dynamic(a));
      axes.push_back(Axis::default_batch_axis());
      v["dynamic_axis"] = axes;
    }
    v["uid"] = uid;
    inputs_.push_back(v);
    done_[n.name] = uid;
    return uid;
  }

  std::string scalar_constant(double value, bool dbl) {
    std::string uid = fresh("Constant");
    Dictionary v;
    v["version"] = int64_t(1);
    v["type"] = "Variable";
    v["uid"] = uid;
    v["name"] = "";
    v["kind"] = int64_t(3);
    v["data_type"] = int64_t(dbl ? 2 : 1);
    v["is_sparse"] = false;
    v["needs_gradient"] = false;
    v["dynamic_axis"] = DictValue::List{};
    v["shape"] = NDShape{};
    v["value"] = tensor({}, {value}, dbl);
    inputs_.push_back(v);
    return uid;
  }

  static Dictionary function_dict(const std::string& uid, const std::string& name, const std::string& op,
                                  DictValue::List inputs, Dictionary attrs) {
    Dictionary f;
    f["version"] = int64_t(17);
    f["type"] = "PrimitiveFunction";
    f["uid"] = uid;
    f["name"] = name;
    f["op"] = cntk_op_type(op);
    f["inputs"] = std::move(inputs);
    f["attributes"] = std::move(attrs);
    return f;
  }

  // The uid of the variable a node stands for; functions are written inputs first, and a
  // node met again while its own inputs are being written (a recurrent loop) is named before
  // it is written, which the v2 loader resolves once every function is read.
  std::string visit(const Node& n) {
    if (n.is_leaf()) return leaf(n);
    // The engine's gather and scatter take Where's indices as they are: PackedIndex, which
    // turned them into CNTK's packed positions, stands for its index input.
    if (n.op == "PackedIndex") {
      if (n.inputs.size() != 2) fail(n, "has " + std::to_string(n.inputs.size()) + " inputs, not 2");
      if (++depth_ > 100000) fail(n, "the network is nested too deeply");
      std::string index = visit(node(n.inputs[1]));
      --depth_;
      return index;
    }
    auto it = done_.find(n.name);
    if (it != done_.end()) return it->second + "_Output_0";
    if (const Node* x = is_within_operand(n)) {
      // The flags of the first (PastValue) or last (FutureValue) timeStep steps: the engine's
      // IsWithin, which has no CNTK op number (a CustomProxyOp naming it).
      std::string uid = uid_for(n, "IsWithin");
      done_[n.name] = uid;
      if (++depth_ > 100000) fail(n, "the network is nested too deeply");
      std::string in = visit(*x);
      --depth_;
      int64_t step = n.attrs.at("timeStep").as_int();
      Dictionary a;
      a["offset"] = n.op == "PastValue" ? step : -step;
      Dictionary f = function_dict(uid, uid_and_name(n.name).second, "CustomProxyOp", {in}, std::move(a));
      f[kEngineOpKey] = "IsWithin";
      functions_.push_back(std::move(f));
      return uid + "_Output_0";
    }
    if (n.op == "KhatriRaoProduct") return khatri_rao(n);
    const char* op = v2_op_of(n.op);
    if (!op)
      throw NotImplementedError(source_ + ": offset " + std::to_string(n.offset) + ": node '" + n.name +
                                "' has the v1 node type '" + n.op + "', which OpenCNTK cannot load yet");
    std::string uid = uid_for(n, op);
    done_[n.name] = uid;
    if (++depth_ > 100000) fail(n, "the network is nested too deeply");
    std::vector<std::string> in;
    for (auto& i : n.inputs) in.push_back(visit(node(i)));
    --depth_;
    std::string v2 = op;
    auto [u, name] = uid_and_name(n.name);
    if (v2 == "SquaredError") {
      // The engine has no SquaredError primitive (CNTK's Python API builds it from these).
      if (in.size() != 2) fail(n, "has " + std::to_string(in.size()) + " inputs, not 2");
      std::string diff = fresh("Minus"), square = fresh("ElementTimes");
      functions_.push_back(function_dict(diff, "", "Minus", {in[0], in[1]}, {}));
      functions_.push_back(function_dict(square, "", "ElementTimes", {diff + "_Output_0", diff + "_Output_0"}, {}));
      Dictionary r;
      r["axis"] = Axis::all_static_axes();
      r["reductionOpName"] = "Sum";
      r["reductionKeepDimensions"] = false;
      functions_.push_back(function_dict(uid, name, "ReduceElements", {square + "_Output_0"}, std::move(r)));
      return uid + "_Output_0";
    }
    Dictionary a;
    convert(n, v2, in, a);
    DictValue::List ins;
    for (size_t k : input_order(v2, in.size())) ins.push_back(in[k]);
    functions_.push_back(function_dict(uid, name, v2, std::move(ins), std::move(a)));
    return uid + "_Output_0";
  }

  // KhatriRaoProduct (left, right): per sample the outer product of the flattened operands,
  // left's index fastest; as the engine's ops: left as a row times right as a column, flattened.
  std::string khatri_rao(const Node& n) {
    if (n.inputs.size() != 2) fail(n, "has " + std::to_string(n.inputs.size()) + " inputs, not 2");
    std::string uid = uid_for(n, "Reshape");
    done_[n.name] = uid;
    if (++depth_ > 100000) fail(n, "the network is nested too deeply");
    std::string left = visit(node(n.inputs[0])), right = visit(node(n.inputs[1]));
    --depth_;
    auto reshaped = [this](const std::string& in, const NDShape& shape, const std::string& f, const std::string& name) {
      Dictionary a;
      a["newShape"] = shape;
      functions_.push_back(function_dict(f, name, "Reshape", {in}, std::move(a)));
      return f + "_Output_0";
    };
    constexpr int64_t kAny = NDShape::kInferredDimension;
    const std::string row = reshaped(left, NDShape{1, kAny}, fresh("Reshape"), "");
    const std::string column = reshaped(right, NDShape{kAny, 1}, fresh("Reshape"), "");
    const std::string outer = fresh("ElementTimes");
    functions_.push_back(function_dict(outer, "", "ElementTimes", {row, column}, {}));
    return reshaped(outer + "_Output_0", NDShape{kAny}, uid, uid_and_name(n.name).second);
  }

  // The operand x of PastValue / FutureValue (timeStep k >= 1, initial state 1) over
  // ReconcileDynamicAxis(constant 0, x): what CNTK builds for is_first / is_last (and
  // save_as_legacy_model for IsWithin); else null.
  const Node* is_within_operand(const Node& n) const {
    if ((n.op != "PastValue" && n.op != "FutureValue") || n.inputs.size() != 1) return nullptr;
    if (attr_double(n.attrs, "initialState", 0) != 1 || attr_int(n.attrs, "timeStep", 0) < 1) return nullptr;
    const Node& like = node(n.inputs[0]);
    if (like.op != "ReconcileDynamicAxis" || like.inputs.size() != 2) return nullptr;
    const Node& zero = node(like.inputs[0]);
    if (zero.op != "LearnableParameter" || zero.lr_mult != 0 || zero.values.size() != 1 || zero.values[0] != 0)
      return nullptr;
    return &node(like.inputs[1]);
  }

  const Node* leaf_input(const Node& n, size_t i) const {
    if (i >= n.inputs.size()) return nullptr;
    const Node& in = node(n.inputs[i]);
    return in.is_leaf() ? &in : nullptr;
  }

  // The node's attributes as CNTK's PrimitiveFunction keeps them (and inputs CNTK adds).
  void convert(const Node& n, std::string& op, std::vector<std::string>& in, Dictionary& a) {
    const Dictionary& at = n.attrs;
    auto shape_attr = [&](const char* key) {
      return numpy_shape(at.count(key) ? at.at(key).as_shape().dims() : Dims{});
    };
    auto need = [&](size_t k) {
      if (in.size() != k) fail(n, "has " + std::to_string(in.size()) + " inputs, not " + std::to_string(k));
    };
    if (op == "Times") {
      need(2);
      // CNTK's rule for the '*' of old configurations: a scalar operand makes it elementwise.
      const Node *l = leaf_input(n, 0), *r = leaf_input(n, 1);
      if ((l && l->layout.empty()) || (r && r->layout.empty())) {
        op = "ElementTimes";
        return;
      }
      a["outputRank"] = at.at("outputRank").as_int();
      a["inferInputRankToMap"] = at.at("inferInputRankToMap").as_int();
    } else if (op == "TransposeTimes") {
      a["outputRank"] = at.at("outputRank").as_int();
    } else if (op == "PastValue" || op == "FutureValue") {
      if (in.size() == 1) in.push_back(scalar_constant(at.at("initialState").as_double(), n.is_double()));
      need(2);
      a["offset"] = at.at("timeStep").as_int();
    } else if (op == "Convolution") {
      need(2);
      a["strides"] = shape_attr("strides");
      a["sharing"] = at.at("sharing");
      a["autoPadding"] = at.at("autoPad");
      a["lowerPad"] = shape_attr("lowerPad");
      a["upperPad"] = shape_attr("upperPad");
      a["dilation"] = shape_attr("dilation");
      a["transpose"] = at.at("transpose").as_bool();
      Dims out = at.count("outputShape") ? at.at("outputShape").as_shape().dims() : Dims{0};
      a["outputShape"] = numpy_shape(out.empty() ? Dims{0} : out);
      a["maxTempMemSizeInSamples"] = at.at("maxTempMemSizeInSamples").as_int();
    } else if (op == "Pooling") {
      need(1);
      int64_t kind = at.at("poolKind").as_int();
      if (kind != 1 && kind != 2) fail(n, "has the pooling kind " + std::to_string(kind));
      a["poolingType"] = int64_t(kind == 1 ? 0 : 1);  // v1 Max 1 / Average 2; v2 Max 0 / Average 1
      a["poolingWindowShape"] = shape_attr("kernelShape");
      a["strides"] = shape_attr("strides");
      a["autoPadding"] = at.at("autoPad");
      a["lowerPad"] = shape_attr("lowerPad");
      a["upperPad"] = shape_attr("upperPad");
      a["ceilOutDim"] = at.at("ceilOutDim").as_bool();
      a["includePad"] = at.at("includePad").as_bool();
    } else if (op == "BatchNormalization") {
      if (in.size() == 5) {
        // Files before version 19 share no sample count between nodes; CNTK 2.7 adds a count
        // input. It holds the count the node saved, so that further training continues the
        // running statistics instead of restarting them.
        in.push_back(scalar_constant(double(attr_int(at, "runCount", 0)), n.is_double()));
      }
      need(6);
      a["spatial"] = at.at("spatial").as_bool();
      a["normalizationTimeConstant"] = at.at("normalizationTimeConstant").as_double();
      a["blendTimeConstant"] = at.at("blendTimeConstant").as_double();
      a["epsilon"] = at.at("epsilon").as_double();
      a["useCuDNNEngine"] = !at.at("useCntkEngine").as_bool();
      a["disableRegularization"] = false;
    } else if (op == "Slice") {
      need(1);
      auto begin = at.at("beginIndex").as_int_list(), end = at.at("endIndex").as_int_list();
      auto axis = at.at("axis").as_int_list(), stride = at.at("strides").as_int_list();
      for (auto s : stride)
        if (s != 1) throw NotImplementedError(source_ + ": node '" + n.name + "': strided v1 slices are not supported");
      if (axis.size() == 1) {
        a["axis"] = axis_from_cntk(axis[0] - 1);
        a["beginIndex"] = begin[0];
        a["endIndex"] = end[0];
      } else {
        DictValue::List ax, b, e;
        for (size_t i = 0; i < axis.size(); ++i) {
          ax.push_back(axis_from_cntk(axis[i] - 1));
          b.push_back(begin[i]);
          e.push_back(end[i]);
        }
        a["axisVec"] = ax;
        a["beginIndexVec"] = b;
        a["endIndexVec"] = e;
      }
    } else if (op == "Where") {
      need(1);
      // A Where without a sequence axis (one index per sequence): the engine's declared
      // length of 0 * length + 1.
      if (attr_string(at, "dynamicAxis", kWhereAxis) == kNoSequenceAxis) {
        a["newSequenceAxisLengthScalingFactor"] = int64_t(0);
        a["newSequenceAxisLengthAdditiveFactor"] = int64_t(1);
      }
    } else if (op == "GatherPacked") {
      need(2);
    } else if (op == "ScatterPacked") {
      need(3);
    } else if (op == "Splice") {
      a["axis"] = axis_from_cntk(at.at("spliceDim").as_int() - 1);
    } else if (op == "Dropout") {
      // The rate is not in v1 files (BrainScript's SGD block set it).
      a["dropoutRate"] = 0.0;
      if (at.count("rngSeed")) a["rngSeed"] = at.at("rngSeed");
      if (at.count("rngOffset")) a["rngOffset"] = at.at("rngOffset");
    } else if (op == "Reshape") {
      // CNTK's 1-based, first-fastest [beginDim, endDim) as the engine's slowest-first bounds,
      // counted from the end (so that no rank is needed); 0 in the replacement is inferred.
      need(1);
      const int64_t cntk_begin = at.at("beginDim").as_int() - 1, cntk_end = at.at("endDim").as_int() - 1;
      a["newShape"] = numpy_shape(Dims(at.at("replacement").as_shape().dims()));
      a["beginAxis"] = cntk_end == 0 ? Axis::new_leading_axis() : Axis(int(-cntk_end));
      if (cntk_begin > 0) a["endAxis"] = Axis(int(-cntk_begin));
    } else if (op == "ReduceElements") {
      DictValue::List axes;
      for (auto x : at.at("axes").as_int_list())
        axes.push_back(x == 0 ? Axis::all_static_axes() : axis_from_cntk(x - 1));
      a["axisVec"] = axes;
      a["reductionOpName"] = at.at("operation").as_string();
      a["reductionKeepDimensions"] = at.at("keepDimensions").as_bool();
    }
  }

  const Network& net_;
  std::string source_;
  DictValue::List inputs_, functions_;
  std::unordered_map<std::string, std::string> done_;  // node name -> uid
  std::unordered_map<std::string, Dims> layouts_;
  std::unordered_map<std::string, std::vector<double>> values_;
  std::unordered_set<std::string> used_;
  size_t counter_ = 0;
  size_t depth_ = 0;
};

// ------------------------------------------------------------------ graph -> v1

class FromDictionary {
 public:
  explicit FromDictionary(const FunctionPtr& f) : f_(f) {}

  Network build() {
    index(f_->root_function());
    Dictionary d = function_to_dictionary(f_);
    for (auto& v : d.at("inputs").as_list()) variable(v.as_dict());
    for (auto& v : d.at("primitive_functions").as_list()) function(v.as_dict());
    for (auto& [k, n] : net_.nodes)
      for (auto& in : n.inputs) in = resolve(in);
    // A Combine's outputs are its inputs; each node is listed once.
    std::set<std::string, NoCaseLess> listed;
    for (auto& o : f_->outputs()) {
      std::string name = resolve(o.uid());
      if (listed.insert(name).second) net_.outputs.push_back(name);
    }
    return std::move(net_);
  }

 private:
  static std::string node_name(const std::string& uid, const std::string& name) {
    return kUidPrefix + uid + kNamePrefix + name;
  }

  // The output shapes of every function, blocks' insides included.
  void index(const FunctionPtr& fn) {
    if (!fn || !seen_.insert(fn.get()).second) return;
    auto outs = fn->outputs();
    for (size_t i = 0; i < outs.size(); ++i) {
      shapes_[fn->uid() + "_Output_" + std::to_string(i)] = outs[i].shape();
      axes_[fn->uid() + "_Output_" + std::to_string(i)] = outs[i].dynamic_axes();
    }
    if (fn->is_block()) index(fn->block_root()->root_function());
    for (auto& in : fn->direct_inputs()) {
      if (in.is_output())
        index(in.owner());
      else
        shapes_[in.uid()] = in.shape();
    }
  }

  std::string resolve(const std::string& uid) const {
    std::string u = uid;
    for (size_t i = 0; i < 10000; ++i) {
      auto a = alias_.find(u);
      if (a == alias_.end()) break;
      u = a->second;
    }
    auto n = names_.find(u);
    if (n == names_.end())
      throw ValueError("save_as_legacy_model: the graph refers to the unknown variable '" + uid + "'");
    return n->second;
  }

  void variable(const Dictionary& v) {
    std::string uid = v.at("uid").as_string();
    std::string name = v.count("name") ? v.at("name").as_string() : "";
    int64_t kind = v.at("kind").as_int();
    if (kind == 4) return;  // a block's placeholder: an alias set by its block
    Node n;
    n.name = node_name(uid, name);
    n.precision = v.at("data_type").as_int() == 2 ? "double" : "float";
    const NDShape& shape = v.at("shape").as_shape();
    if (!shape.is_known())
      throw ValueError("save_as_legacy_model: the variable '" + name + "' has the unknown shape " + shape.str() +
                       "; v1 files need every shape known");
    n.layout = cntk_dims(shape);
    if (kind == 0) {
      n.op = v.at("is_sparse").as_bool() ? "SparseInputValue" : "InputValue";
      n.lr_mult = v.at("needs_gradient").as_bool() ? 1.f : 0.f;
      std::vector<Axis> axes;
      for (auto& x : v.at("dynamic_axis").as_list()) axes.push_back(x.as_axis());
      if (axes.empty())
        throw ValueError("save_as_legacy_model: the input '" + name + "' has no dynamic axis, which v1 inputs need");
      if (axes.size() == 1 && axes[0].is_batch())
        n.dynamic_axis = kNoSequenceAxis;
      else if (axes.size() == 2 && axes[0] == Axis::default_dynamic_axis())
        n.dynamic_axis = kDefaultDynamicAxis;
      else
        n.dynamic_axis = axes[0].name();
      net_.features.push_back(n.name);
    } else {
      n.op = "LearnableParameter";
      n.lr_mult = kind == 2 ? 1.f : 0.f;
      NDArrayView val = v.at("value").as_array().contiguous();
      if (val.is_sparse()) throw NotImplementedError("save_as_legacy_model: sparse constants are not supported");
      val = val.cast(n.is_double() ? DataType::Double : DataType::Float);
      n.values.resize(size_t(val.numel()));
      if (n.is_double())
        std::copy_n(static_cast<const double*>(val.raw_data()), n.values.size(), n.values.begin());
      else
        std::copy_n(static_cast<const float*>(val.raw_data()), n.values.size(), n.values.begin());
    }
    names_[uid] = n.name;
    scalars_[uid] = n.op == "LearnableParameter" && n.values.size() == 1 ? n.values[0] : NAN;
    net_.nodes.emplace(n.name, std::move(n));
  }

  void function(const Dictionary& d) {
    std::string uid = d.at("uid").as_string();
    std::string name = d.count("name") ? d.at("name").as_string() : "";
    std::vector<std::string> in;
    for (auto& u : d.at("inputs").as_list()) in.push_back(u.as_string());
    if (!d.count("op")) return user_function(d, uid, name, in);
    int64_t type = d.at("op").as_int();
    if (type == 57) {  // a block: its composite's nodes stand in for it
      const auto& keys = d.at("block_function_composite_arguments_map_keys").as_list();
      const auto& values = d.at("block_function_composite_arguments_map_values").as_list();
      for (size_t i = 0; i < keys.size() && i < values.size(); ++i) alias_[keys[i].as_string()] = values[i].as_string();
      std::string root = d.at("block_function_composite").as_dict().at("root").as_string();
      // A block of several outputs (LSTM's h and c) has a Combine of them as its root.
      auto c = combines_.find(root);
      size_t outputs = c == combines_.end() ? 1 : c->second.size();
      for (size_t i = 0; i < outputs; ++i)
        alias_[uid + "_Output_" + std::to_string(i)] = c == combines_.end() ? root + "_Output_0" : c->second[i];
      // The node that computes a named block's single output carries the block's uid and name
      // (v1 files keep no blocks), so the name comes back (IsFirst, a sequence slice, a layer).
      if (c == combines_.end() && !name.empty()) rename(root + "_Output_0", uid, name);
      return;
    }
    if (type == 44) {  // Combine: its outputs are its inputs
      combines_[uid] = in;
      return;
    }
    const Dictionary& attrs = d.at("attributes").as_dict();
    if (type == cntk_op_type("CustomProxyOp") && d.count(kEngineOpKey) &&
        d.at(kEngineOpKey).as_string() == "IsWithin" && in.size() == 1) {
      is_within(uid, name, in[0], attr_int(attrs, "offset", 1));
      return;
    }
    std::string v2;
    for (const char* cand : {"Where",
                             "PackedIndex",
                             "GatherPacked",
                             "ScatterPacked",
                             "Negate",
                             "Sigmoid",
                             "StableSigmoid",
                             "Tanh",
                             "ReLU",
                             "Exp",
                             "Log",
                             "Sqrt",
                             "Floor",
                             "Abs",
                             "Reciprocal",
                             "Softmax",
                             "Hardmax",
                             "LogSoftmax",
                             "Pass",
                             "StopGradient",
                             "StraightThrough",
                             "Plus",
                             "Minus",
                             "ElementTimes",
                             "LogPlus",
                             "Equal",
                             "NotEqual",
                             "Less",
                             "LessEqual",
                             "Greater",
                             "GreaterEqual",
                             "SumAll",
                             "CosDistance",
                             "Logistic",
                             "SquaredError",
                             "CrossEntropyWithSoftmax",
                             "ClassificationError",
                             "Clip",
                             "Select",
                             "ReconcileDynamicAxis",
                             "Times",
                             "TransposeTimes",
                             "PastValue",
                             "FutureValue",
                             "Convolution",
                             "Pooling",
                             "BatchNormalization",
                             "Slice",
                             "Splice",
                             "Dropout",
                             "ReduceElements",
                             "ELU",
                             "Sin",
                             "Cos",
                             "Sinh",
                             "Cosh",
                             "Asin",
                             "Acos",
                             "Asinh",
                             "Atanh",
                             "Reshape"})
      if (cntk_op_type(cand) == type) v2 = cand;
    std::string engine_op = type == 93 && d.count("opencntk_op") ? d.at("opencntk_op").as_string() : v2;
    if (v2.empty() || (v2 == "Splice" && in.size() < 1))
      throw NotImplementedError("save_as_legacy_model: the op " +
                                (engine_op.empty() ? "number " + std::to_string(type) : engine_op) + " of '" +
                                (name.empty() ? uid : name) + "' has no CNTK v1 node type");
    if (v2 == "PackedIndex") packed_.insert(uid + "_Output_0");
    if ((v2 == "GatherPacked" && in.size() == 2) || (v2 == "ScatterPacked" && in.size() == 3))
      in[1] = packed_index(uid, v2 == "GatherPacked" ? in[0] : in[2], in[1]);
    Node n;
    n.name = node_name(uid, name);
    n.op = v1_op_of(v2);
    n.precision = "float";
    auto sh = shapes_.find(uid + "_Output_0");
    if (sh != shapes_.end()) n.layout = cntk_dims(sh->second);
    // v1 node inputs from the PrimitiveFunction's.
    auto order = input_order(v2, in.size());
    n.inputs.resize(in.size());
    for (size_t i = 0; i < in.size(); ++i) n.inputs[order[i]] = in[i];
    convert(v2, attrs, in, uid + "_Output_0", n);
    names_[uid + "_Output_0"] = n.name;
    net_.nodes.emplace(n.name, std::move(n));
  }

  // A user function: BrainScript's Trace (its state names it and holds the node's settings under
  // CNTK's member names) is CNTK's v1 Trace node; others have no v1 form.
  void user_function(const Dictionary& d, const std::string& uid, const std::string& name,
                     const std::vector<std::string>& in) {
    const Dictionary* state = d.count("user_defined_state") ? &d.at("user_defined_state").as_dict() : nullptr;
    if (!state || attr_string(*state, "op_name", "") != "Trace" || in.size() != 1)
      throw NotImplementedError("save_as_legacy_model: the user function '" + (name.empty() ? uid : name) +
                                "' has no CNTK v1 node type");
    Node n;
    n.name = node_name(uid, name);
    n.op = "Trace";
    n.precision = "float";
    auto sh = shapes_.find(uid + "_Output_0");
    if (sh != shapes_.end()) n.layout = cntk_dims(sh->second);
    n.inputs = in;
    for (const auto& [key, value] : *state)
      if (key != "op_name") n.attrs[key] = value;
    names_[uid + "_Output_0"] = n.name;
    net_.nodes.emplace(n.name, std::move(n));
  }

  // CNTK's gather and scatter read positions in its packed layout, which PackedIndex makes of
  // Where's indices (BrainScript's Gather and Scatter went through it; the engine's ops read
  // Where's indices as they are): a PackedIndex node over `layout` goes before an index that
  // is not one already.
  std::string packed_index(const std::string& uid, const std::string& layout, const std::string& index) {
    if (packed_.count(index)) return index;
    Node p;
    p.name = node_name(uid + "_packedIndex", "");
    p.op = "PackedIndex";
    p.precision = "float";
    p.inputs = {layout, index};
    std::string out = uid + "_packedIndex_Output_0";
    names_[out] = p.name;
    std::string key = p.name;
    if (!net_.nodes.emplace(key, std::move(p)).second)
      throw ValueError("save_as_legacy_model: two nodes are named '" + key + "'");
    return out;
  }

  // Gives the node that computes the variable `var_uid` the uid and name of `uid`, `name`.
  void rename(const std::string& var_uid, const std::string& uid, const std::string& name) {
    std::string u = var_uid;
    for (size_t i = 0; i < 10000; ++i) {
      auto a = alias_.find(u);
      if (a == alias_.end()) break;
      u = a->second;
    }
    auto it = names_.find(u);
    if (it == names_.end()) return;
    auto n = net_.nodes.find(it->second);
    if (n == net_.nodes.end() || n->second.is_leaf()) return;
    std::string to = node_name(uid, name);
    if (net_.nodes.count(to)) return;
    Node moved = std::move(n->second);
    net_.nodes.erase(n);
    moved.name = to;
    net_.nodes.emplace(to, std::move(moved));
    for (auto& [k, v] : names_)
      if (v == it->second && k != u) v = to;
    it->second = to;
  }

  // IsWithin(x, offset), which CNTK has no node for, as CNTK's is_first / is_last are built: a
  // delay by |offset| steps (PastValue for offset > 0, FutureValue below) of zeros laid out as
  // x, starting from 1. The delay carries the function's uid and name.
  void is_within(const std::string& uid, const std::string& name, const std::string& x, int64_t offset) {
    if (offset == 0) throw ValueError("save_as_legacy_model: IsWithin '" + uid + "' has the offset 0");
    Node zero;
    zero.name = node_name(uid + "_zero", "");
    zero.op = "LearnableParameter";
    zero.precision = "float";
    zero.lr_mult = 0;
    zero.values = {0.0};
    Node like;
    like.name = node_name(uid + "_like", "");
    like.op = "ReconcileDynamicAxis";
    like.precision = "float";
    like.inputs = {uid + "_zero", x};
    Node delay;
    delay.name = node_name(uid, name);
    delay.op = offset > 0 ? "PastValue" : "FutureValue";
    delay.precision = "float";
    delay.inputs = {uid + "_like_Output_0"};
    delay.attrs["timeStep"] = offset > 0 ? offset : -offset;
    delay.attrs["initialState"] = 1.0;
    names_[uid + "_zero"] = zero.name;
    names_[uid + "_like_Output_0"] = like.name;
    names_[uid + "_Output_0"] = delay.name;
    for (Node* n : {&zero, &like, &delay}) {
      std::string key = n->name;
      if (!net_.nodes.emplace(key, std::move(*n)).second)
        throw ValueError("save_as_legacy_model: two nodes are named '" + key + "'");
    }
  }

  Dims shape_of(const std::string& var_uid) const {
    auto it = shapes_.find(var_uid);
    if (it != shapes_.end()) return cntk_dims(it->second);
    return {};
  }

  void convert(const std::string& v2, const Dictionary& at, const std::vector<std::string>& in,
               const std::string& out_uid, Node& n) {
    Dictionary& a = n.attrs;
    auto cntk_shape = [&](const char* key) {
      auto it = at.find(key);
      if (it == at.end()) return NDShape{};
      if (it->second.is<NDShape>()) return NDShape(cntk_dims(it->second.as_shape()));
      auto l = it->second.as_int_list();  // engine-order int lists
      return NDShape(Dims(l.rbegin(), l.rend()));
    };
    if (v2 == "Times" || v2 == "TransposeTimes") {
      a["outputRank"] = attr_int(at, "outputRank", 1);
      a["inferInputRankToMap"] = attr_int(at, "inferInputRankToMap", -1);
    } else if (v2 == "PastValue" || v2 == "FutureValue") {
      a["timeStep"] = attr_int(at, "offset", 1);
      // A scalar initial state becomes the node's own value, as BrainScript wrote it.
      auto s = scalars_.find(in.size() > 1 ? in[1] : "");
      if (s != scalars_.end() && !std::isnan(s->second)) {
        a["initialState"] = s->second;
        n.inputs.resize(1);
      }
    } else if (v2 == "Convolution") {
      Dims kernel = names_.count(in[0]) ? net_.nodes.at(names_.at(in[0])).layout : Dims{};
      if (kernel.empty()) throw NotImplementedError("save_as_legacy_model: a convolution kernel must be a parameter");
      a["kernelShape"] = NDShape(Dims(kernel.begin(), kernel.end() - 1));
      a["mapCount"] = NDShape{kernel.back()};
      a["strides"] = cntk_shape("strides");
      a["sharing"] = at.count("sharing") ? at.at("sharing") : DictValue(DictValue::List{DictValue(true)});
      a["autoPad"] = at.count("autoPadding") ? at.at("autoPadding") : DictValue(DictValue::List{DictValue(false)});
      a["lowerPad"] = cntk_shape("lowerPad");
      a["upperPad"] = cntk_shape("upperPad");
      a["dilation"] = cntk_shape("dilation");
      a["outputShape"] = at.count("outputShape") ? cntk_shape("outputShape") : NDShape{0};
      a["transpose"] = attr_bool(at, "transpose", false);
      a["poolKind"] = int64_t(0);
      a["imageLayout"] = int64_t(1);  // CHW
      a["maxTempMemSizeInSamples"] = attr_int(at, "maxTempMemSizeInSamples", 0);
      if (attr_int(at, "groups", 1) != 1)
        throw NotImplementedError("save_as_legacy_model: grouped convolutions have no v1 form");
    } else if (v2 == "Pooling") {
      a["poolKind"] = int64_t(attr_int(at, "poolingType", 0) == 0 ? 1 : 2);
      a["kernelShape"] = cntk_shape("poolingWindowShape");
      a["mapCount"] = NDShape{1};
      a["strides"] = cntk_shape("strides");
      a["sharing"] = DictValue(DictValue::List{DictValue(true)});
      a["autoPad"] = at.count("autoPadding") ? at.at("autoPadding") : DictValue(DictValue::List{DictValue(false)});
      a["lowerPad"] = cntk_shape("lowerPad");
      a["upperPad"] = cntk_shape("upperPad");
      a["outputShape"] = NDShape{0};
      a["imageLayout"] = int64_t(1);
      a["ceilOutDim"] = attr_bool(at, "ceilOutDim", false);
      a["includePad"] = attr_bool(at, "includePad", false);
    } else if (v2 == "BatchNormalization") {
      a["spatial"] = attr_bool(at, "spatial", false);
      a["normalizationTimeConstant"] = attr_double(at, "normalizationTimeConstant", 0);
      a["blendTimeConstant"] = attr_double(at, "blendTimeConstant", 0);
      a["epsilon"] = attr_double(at, "epsilon", 0.00001);
      a["useCntkEngine"] = !attr_bool(at, "useCuDNNEngine", false);
      a["imageLayout"] = int64_t(1);
      auto s = scalars_.find(in.size() > 5 ? in[5] : "");
      a["runCount"] = int64_t(s != scalars_.end() && !std::isnan(s->second) ? s->second : 0);
    } else if (v2 == "Slice") {
      std::vector<int64_t> axis, begin, end, stride;
      if (at.count("axisVec")) {
        for (auto& x : at.at("axisVec").as_axis_list()) axis.push_back(cntk_axis(x) + 1);
        begin = at.at("beginIndexVec").as_int_list();
        end = at.at("endIndexVec").as_int_list();
      } else {
        axis = {cntk_axis(at.at("axis").as_axis()) + 1};
        begin = {at.at("beginIndex").as_int()};
        end = {at.at("endIndex").as_int()};
      }
      stride.assign(axis.size(), 1);
      a["axis"] = int_list(axis);
      a["beginIndex"] = int_list(begin);
      a["endIndex"] = int_list(end);
      a["strides"] = int_list(stride);
    } else if (v2 == "Splice") {
      const Axis& ax = at.at("axis").as_axis();
      if (!ax.is_static() || ax == Axis::new_leading_axis())
        throw NotImplementedError("save_as_legacy_model: splice along a new or dynamic axis has no v1 form");
      a["spliceDim"] = cntk_axis(ax) + 1;
    } else if (v2 == "Where") {
      // The dynamic axis it makes, by CNTK's internal names ("*" the default sequence axis,
      // "__noSequenceAxis" none); a Where inside a CNTK composite has no engine function.
      std::string axis = kWhereAxis;
      auto ax = axes_.find(out_uid);
      if (ax != axes_.end() && !ax->second.empty()) {
        const auto& v = ax->second;
        if (v.size() == 1 && v[0].is_batch())
          axis = kNoSequenceAxis;
        else if (v[0] == Axis::default_dynamic_axis())
          axis = kDefaultDynamicAxis;
        else
          axis = v[0].name();
      }
      a["dynamicAxis"] = axis;
    } else if (v2 == "Dropout") {
      a["rngSeed"] = attr_int(at, "rngSeed", 0);
      a["rngOffset"] = attr_int(at, "rngOffset", 0);
    } else if (v2 == "Reshape") {
      // CNTK's ReshapeNode: the 1-based, first-fastest axes [beginDim, endDim) of the input
      // become `replacement`, whose 0 is inferred. The engine counts axes slowest-first.
      const int64_t rank = int64_t(shape_of(in.at(0)).size());
      auto position = [&](const char* key, int64_t fallback) {
        if (!at.count(key)) return fallback;
        const Axis& ax = at.at(key).as_axis();
        if (!ax.is_static())
          throw NotImplementedError("save_as_legacy_model: a reshape of a dynamic axis has no v1 form");
        if (ax.static_index() == Axis::kNewLeading) return rank;
        return ax.static_index() < 0 ? ax.static_index() + rank : int64_t(ax.static_index());
      };
      const int64_t begin = position("beginAxis", 0), end = position("endAxis", rank);
      Dims replacement = cntk_shape("newShape").dims();
      for (auto& d : replacement)
        if (d < 0) d = 0;  // inferred or free
      a["beginDim"] = rank - end + 1;
      a["endDim"] = rank - begin + 1;
      a["replacement"] = NDShape(replacement);
    } else if (v2 == "ReduceElements") {
      std::vector<int64_t> axes;
      std::vector<Axis> list = at.count("axisVec") ? at.at("axisVec").as_axis_list() : at.at("axis").as_axis_list();
      for (auto& x : list) {
        if (x == Axis::all_static_axes())
          axes.push_back(0);
        else if (x.is_static())
          axes.push_back(cntk_axis(x) + 1);
        else
          throw NotImplementedError("save_as_legacy_model: a reduction over a dynamic axis has no v1 form");
      }
      a["axes"] = int_list(axes);
      a["operation"] = attr_string(at, "reductionOpName", "Sum");
      a["keepDimensions"] = attr_bool(at, "reductionKeepDimensions", true);
    }
  }

  static DictValue int_list(const std::vector<int64_t>& v) {
    DictValue::List l;
    for (auto x : v) l.push_back(DictValue(x));
    return DictValue(std::move(l));
  }

  FunctionPtr f_;
  Network net_;
  std::unordered_set<Function*> seen_;
  std::unordered_map<std::string, NDShape> shapes_;
  std::unordered_set<std::string> packed_;                              // the outputs of PackedIndex functions
  std::unordered_map<std::string, std::vector<Axis>> axes_;             // output uid -> its dynamic axes
  std::unordered_map<std::string, std::string> names_;                  // variable uid -> node name
  std::unordered_map<std::string, std::string> alias_;                  // variable uid -> the uid it stands for
  std::unordered_map<std::string, double> scalars_;                     // parameter uid -> its value when a scalar
  std::unordered_map<std::string, std::vector<std::string>> combines_;  // Combine uid -> its inputs
};

}  // namespace

std::pair<std::string, std::string> uid_and_name(const std::string& node_name) {
  auto u = node_name.find(kUidPrefix);
  if (u == std::string::npos) return {"", node_name};
  auto begin = u + kUidPrefix.size();
  auto n = node_name.find(kNamePrefix, begin);
  if (n == std::string::npos) return {"", node_name};
  return {node_name.substr(begin, n - begin), node_name.substr(n + kNamePrefix.size())};
}

FunctionPtr network_to_function(const Network& net, const std::string& source) {
  ToDictionary b(net, source);
  return function_from_dictionary(b.build(), source);
}

Network network_from_function(const FunctionPtr& f) {
  if (!f) throw ValueError("save_as_legacy_model: the function is undefined");
  return FromDictionary(f).build();
}

}  // namespace cntk::v1

namespace cntk {

bool is_legacy_model(const std::string& bytes) {
  static const char marker[] = {'B', 0, 'C', 0, 'N', 0, 0, 0};
  return bytes.size() >= sizeof marker && bytes.compare(0, sizeof marker, marker, sizeof marker) == 0;
}

FunctionPtr load_legacy_model_from_bytes(const std::string& bytes, const std::string& source) {
  return v1::network_to_function(v1::read_network(bytes, source), source);
}

FunctionPtr load_legacy_model(const std::string& path) {
  return load_legacy_model_from_bytes(read_file_bytes(path), path);
}

std::string save_as_legacy_model_to_bytes(const FunctionPtr& f) {
  return v1::write_network(v1::network_from_function(f));
}

void save_as_legacy_model(const FunctionPtr& f, const std::string& path) {
  write_file_atomically(path, save_as_legacy_model_to_bytes(f));
}

std::string dump_legacy_model(const std::string& bytes, const std::string& source, const LegacyDumpOptions& options) {
  return v1::dump_network(v1::read_network(bytes, source), options);
}

}  // namespace cntk
