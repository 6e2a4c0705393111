// BrainScript's built-in functions: the primitives the library (core_library.cpp) builds on,
// over the engine's ops, and the functions of plain values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>

#include "brainscript/evaluation.h"
#include "brainscript/special_nodes.h"
#include "cntk/ops.h"

namespace cntk::brainscript::detail {

// CNTK's nodes took operands on different sequence axes whose layouts agree when run
// (BS.Sequences.Last of a query on its own DynamicAxis against a label of one step per query,
// or spliced with BS.Sequences.First of it); the engine's ops want one set of dynamic axes, so
// such operands adopt the first one's, ReconcileDynamicAxis checking that the sizes agree.
std::vector<Variable> on_common_axes(std::vector<Variable> operands) {
  auto sequence_axes = [](const Variable& v) {
    const auto& axes = v.dynamic_axes();
    const bool known = std::none_of(axes.begin(), axes.end(), [](const Axis& a) { return a.name() == "UnknownAxes"; });
    return axes.size() == 2 && known;
  };
  const auto first = std::find_if(operands.begin(), operands.end(), sequence_axes);
  if (first == operands.end()) return operands;
  const Variable layout = *first;
  for (auto& x : operands)
    if (sequence_axes(x) && x.dynamic_axes() != layout.dynamic_axes())
      x = ops::apply("ReconcileDynamicAxis", {x, layout})->output();
  return operands;
}

namespace {

struct Args {
  std::vector<ValuePtr>& pos;
  std::map<std::string, ValuePtr>& named;
  const TextLocation& where;
  const char* fn;
  ValuePtr at(size_t i) const {
    if (i >= pos.size()) fail(std::string(fn) + ": argument " + std::to_string(i + 1) + " missing", where);
    return pos[i];
  }
  ValuePtr opt(const std::string& n) const {
    auto it = named.find(n);
    return it == named.end() ? nullptr : it->second;
  }
  Variable node_at(size_t i) const { return to_node(at(i), where, fn); }
  double number(const std::string& n, double fallback) const {
    auto v = opt(n);
    return v ? as_number(v, std::string(fn) + " " + n) : fallback;
  }
  std::string text(const std::string& n, const std::string& fallback) const {
    auto v = opt(n);
    return v ? as_string(v, std::string(fn) + " " + n) : fallback;
  }
};

// Dimensions given as numbers or as an array of numbers (`(13:42)`).
std::vector<size_t> dims_of(const std::vector<ValuePtr>& vals, const TextLocation& where) {
  std::vector<size_t> dims;
  for (const auto& v : vals) {
    if (v->kind == Value::Kind::Array) {
      for (const auto& t : v->array->items) dims.push_back(size_t(as_number(t->force(), "dimension")));
    } else {
      const double d = as_number(v, "dimension");
      if (d < 0 || d != std::floor(d)) fail("dimensions must be whole numbers >= 0", where);
      dims.push_back(size_t(d));
    }
  }
  return dims;
}

using Table = std::map<std::string, Builtin>;

bool all_zero(const ValuePtr& v) {
  if (v->kind == Value::Kind::Array) {
    for (const auto& t : v->array->items)
      if (!all_zero(t->force())) return false;
    return true;
  }
  return v->kind == Value::Kind::Number ? v->number == 0 : (v->kind == Value::Kind::Bool && !v->boolean);
}

// Per-axis booleans (one, or an array in BrainScript order) in the engine's axis order.
std::vector<bool> bs_flags(const ValuePtr& v, bool fallback) {
  if (!v) return {fallback};
  std::vector<bool> out;
  auto flag = [](const ValuePtr& x) {
    if (x->kind == Value::Kind::Bool) return x->boolean;
    return as_number(x, "padding flag") != 0;
  };
  if (v->kind == Value::Kind::Array) {
    for (const auto& t : v->array->items) out.push_back(flag(t->force()));
  } else {
    out.push_back(flag(v));
  }
  return std::vector<bool>(out.rbegin(), out.rend());
}

// CNTK's v1 criteria accepted operands whose shapes differ only by dimensions of 1 (a [1 x 1]
// prediction against a [1] label); the engine's ops want equal shapes, so `x` is reshaped to
// `like`'s shape when the element counts agree.
Variable shaped_like(const Variable& x, const Variable& like) {
  const Variable out = on_common_axes({like, x})[1];
  if (out.shape() == like.shape() || out.shape().total_size() != like.shape().total_size()) return out;
  return ops::apply("Reshape", {out}, {{"newShape", DictValue(like.shape())}})->output();
}

void add_unary(Table& t, const char* bs_name, const char* op) {
  std::string op_name = op;
  t[bs_name] = [op_name, bs_name](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, bs_name};
    return node(ops::apply(op_name, {a.node_at(0)})->output());
  };
}

std::string attr_type(const Dictionary& spec) { return spec.at("type").as_string(); }

ValuePtr make_parameter(const std::vector<size_t>& dims, Args& a) {
  // CNTK's inits: 'uniform' in [-0.05, 0.05] times initValueScale, 'gaussian', 'glorotUniform',
  // 'heNormal', and 'fixedValue' (implied by initValue= or value=); learningRateMultiplier=0
  // makes it a constant. A dimension 0 is inferred from the first use, and the values are drawn
  // then.
  // A matrix file or literal (CNTK's text matrix format) gives the values and any dimension
  // left 0. CNTK's constructor reads initFromLiteral only with init='fromLiteral', yet its own
  // ConstantFromString passes it alone: like initFromFilePath, it implies its init here.
  const std::string path = a.text("initFromFilePath", ""), literal = a.text("initFromLiteral", "");
  const bool given_init = a.opt("init") && !a.text("init", "").empty();
  const std::string init = given_init                             ? a.text("init", "")
                           : !path.empty()                        ? "fromFile"
                           : !literal.empty()                     ? "fromLiteral"
                           : a.opt("initValue") || a.opt("value") ? "fixedValue"
                                                                  : "uniform";
  const double scale = a.number("initValueScale", 1);
  const bool frozen = a.number("learningRateMultiplier", 1) == 0;
  auto made = [&frozen](const NDArrayView& value) {
    return node(frozen ? Variable::constant(value, "")
                       : Variable::parameter(value.shape(), value.dtype(), value, nullptr, ""));
  };
  if (init == "fromFile" || init == "fromLiteral") {
    const bool file = init == "fromFile";
    if ((file ? path : literal).empty())
      fail(std::string(a.fn) + ": init='" + init + "' needs " + (file ? "initFromFilePath" : "initFromLiteral"),
           a.where);
    std::vector<size_t> completed = dims;
    const TextMatrix m = file ? read_text_matrix(path) : parse_text_matrix(literal, "the initFromLiteral string");
    return made(parameter_from_matrix(completed, m, file ? "'" + path + "'" : "the initFromLiteral string", g_dtype));
  }
  if (init == "bilinear") {  // CNTK drew it when the dimensions were known; BilinearUpsamplingLayer gives them
    if (std::find(dims.begin(), dims.end(), size_t(0)) != dims.end())
      fail(std::string(a.fn) + ": init='bilinear' needs all dimensions given", a.where);
    return made(bilinear_kernel(dims, g_dtype));
  }
  Dictionary spec;
  if (init == "fixedValue" || init == "zero") {
    spec = {{"type", DictValue("constant")},
            {"value", DictValue(init == "zero" ? 0.0 : a.number("initValue", a.number("value", 0)))}};
  } else if (init == "uniform") {
    spec = {{"type", DictValue("uniform")}, {"scale", DictValue(0.05 * scale)}};
  } else if (init == "gaussian") {
    const double fan_in = dims.size() > 1 && dims.back() ? double(dims.back()) : 1.0;
    spec = {{"type", DictValue("normal")}, {"scale", DictValue(0.2 * scale / std::sqrt(fan_in))}};
  } else if (init == "glorotUniform" || init == "heNormal" || init == "heUniform" || init == "glorotNormal") {
    static const std::map<std::string, std::string> names = {{"glorotUniform", "glorot_uniform"},
                                                             {"glorotNormal", "glorot_normal"},
                                                             {"heNormal", "he_normal"},
                                                             {"heUniform", "he_uniform"}};
    spec = {{"type", DictValue(names.at(init))},
            {"scale", DictValue(scale)},
            {"outputRank", DictValue(int64_t(a.number("initOutputRank", 1)))}};
    if (a.opt("initFilterRank")) spec["filterRank"] = DictValue(int64_t(a.number("initFilterRank", 0)));
  } else {
    fail(std::string(a.fn) + ": unknown init '" + init + "'", a.where);
  }
  if (auto seed = a.opt("randomSeed")) spec["randomSeed"] = DictValue(int64_t(as_number(seed, "randomSeed")));
  std::vector<int64_t> engine_dims;
  bool inferred = false;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    inferred |= *it == 0;
    engine_dims.push_back(*it == 0 ? NDShape::kInferredDimension : int64_t(*it));
  }
  const NDShape shape(engine_dims);
  if (inferred) {
    if (frozen) {  // a constant whose shape comes from its first use (BatchNormalization's statistics)
      if (attr_type(spec) != "constant")
        fail(std::string(a.fn) + ": an inferred constant must have a fixed value", a.where);
      return node(Variable::constant(shape, g_dtype, spec.at("value").as_double(), ""));
    }
    return node(Variable::parameter(shape, g_dtype, NDArrayView(), std::make_shared<Dictionary>(spec), ""));
  }
  return made(initialize_parameter(spec, shape, g_dtype));
}

// BrainScript's None (CNTK's `[| |]`): an empty array.
bool is_none(const ValuePtr& v) { return v->kind == Value::Kind::Array && v->array->items.empty(); }

// A BrainScript axis k (1-based, first-fastest) as the engine's static axis -k.
Axis bs_axis(const ValuePtr& v, const std::string& fn, const TextLocation& where) {
  const double k = as_number(v, fn + " axis");
  if (k < 1 || k != std::floor(k)) fail(fn + ": axis must be a whole number >= 1", where);
  return Axis(-int(k));
}

// An optional boolean (or 0/1) argument, false when not given.
bool flag(const ValuePtr& v) {
  if (!v) return false;
  return v->kind == Value::Kind::Bool ? v->boolean : as_number(v, "flag") != 0;
}

// lowerPad / upperPad (per axis, BrainScript order): CNTK's explicit padding of the axes whose
// autoPadding is false.
void explicit_padding(Dictionary& attrs, const Args& a) {
  for (const char* pad : {"lowerPad", "upperPad"})
    if (auto v = a.opt(pad); v && !is_none(v)) attrs[pad] = DictValue(bs_shape(dims_of({v}, a.where)));
}

// The nodes of an array argument (or the one node given).
std::vector<Variable> node_list(const ValuePtr& v, const TextLocation& where, const std::string& what) {
  std::vector<Variable> out;
  if (v->kind != Value::Kind::Array) return {to_node(v, where, what)};
  for (const auto& t : v->array->items) out.push_back(to_node(t->force(), where, what));
  return out;
}

// `x` with trailing BrainScript dimensions of 1 (leading engine axes) up to `rank`.
Variable with_rank(const Variable& x, size_t rank) {
  if (!x.shape().is_known() || x.shape().rank() >= rank) return x;
  std::vector<int64_t> dims(rank - x.shape().rank(), 1);
  for (auto d : x.shape().dims()) dims.push_back(d);
  return ops::apply("Reshape", {x}, {{"newShape", DictValue(NDShape(dims))}})->output();
}

Variable reshape(const Variable& x, const std::vector<size_t>& bs_dims, size_t begin, size_t end) {
  // BrainScript's axes [begin, end) (0-based, first-fastest) are the engine's [rank - end, rank - begin).
  const size_t rank = x.shape().rank();
  Dictionary attrs = {{"newShape", DictValue(bs_shape(bs_dims))}};
  if (end < rank) attrs["beginAxis"] = DictValue(Axis(int(rank - end)));
  if (begin > 0) attrs["endAxis"] = DictValue(Axis(int(rank - begin)));
  return ops::apply("Reshape", {x}, attrs)->output();
}

// Tensor primitives beyond the arithmetic of the infix operators.
void add_node_primitives(Table& t) {
  // KhatriRaoProduct (left, right): per sample, the outer product of the two flattened inputs,
  // left's index fastest (CNTK's element order: out[j * rowsLeft + i] = left[i] * right[j]):
  // left times each element of right, spliced, so that vectors need no Reshape (which v1 model
  // files here cannot hold).
  t["KhatriRaoProduct"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "KhatriRaoProduct"};
    auto flat = [&w](const Variable& x) {
      if (!x.shape().is_known()) fail("KhatriRaoProduct: the inputs' shapes must be known", w);
      if (x.shape().rank() == 1) return x;
      return ops::apply("Reshape", {x}, {{"newShape", DictValue(NDShape{x.shape().total_size()})}})->output();
    };
    const Variable left = flat(a.node_at(0)), right = flat(a.node_at(1));
    std::vector<Variable> parts;
    for (int64_t j = 0; j < right.shape()[0]; ++j) {
      const Variable r = ops::apply("Slice", {right},
                                    {{"axis", DictValue(Axis(-1))},
                                     {"beginIndex", DictValue(j)},
                                     {"endIndex", DictValue(j + 1)},
                                     {"sliceStrides", DictValue(int64_t(1))}})
                             ->output();
      parts.push_back(ops::apply("ElementTimes", {left, r})->output());
    }
    if (parts.size() == 1) return node(parts[0]);
    return node(ops::apply("Splice", parts, {{"axis", DictValue(Axis(-1))}})->output());
  };
  // Trace (node, say, logFrequency, logFirst, logGradientToo, onlyUpToRow, onlyUpToT, format):
  // the node unchanged, its values logged (special_nodes.h); defaults are the library's.
  t["Trace"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Trace"};
    TraceOptions o;
    o.say = a.text("say", "");
    auto count = [&a, &w](const char* key, size_t fallback) {
      const double v = a.number(key, double(fallback));
      if (v < 0 || v != std::floor(v)) fail(std::string("Trace: ") + key + " must be a whole number >= 0", w);
      return size_t(v);
    };
    o.log_frequency = count("logFrequency", o.log_frequency);
    o.log_first = count("logFirst", o.log_first);
    if (auto g = a.opt("logGradientToo"))
      o.log_gradient = g->kind == Value::Kind::Bool ? g->boolean : as_number(g, "logGradientToo") != 0;
    if (auto f = a.opt("format"); f && f->kind == Value::Kind::Record) {
      // The format record's members as the config writes them.
      auto member = [&f](const std::string& key) -> std::optional<std::string> {
        const ThunkPtr* t = f->record->find_here(key);
        if (!t) return std::nullopt;
        const ValuePtr v = (*t)->force();
        if (v->kind == Value::Kind::Bool) return std::string(v->boolean ? "true" : "false");
        if (v->kind == Value::Kind::Number) {
          char text[32];
          std::snprintf(text, sizeof text, "%.17g", v->number);
          return std::string(text);
        }
        return as_string(v, "Trace format " + key);
      };
      try {
        o.format = WriteFormat::read(member, "Trace");
      } catch (const ValueError& e) {
        fail(e.what(), w);
      }
    }
    o.format.only_up_to_row = count("onlyUpToRow", 100000000);
    o.format.only_up_to_t = count("onlyUpToT", 100000000);
    return node(trace(a.node_at(0), std::move(o), ""));
  };
  t["Floor"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Floor"};  // of a number (CNTK's NumericFunction) or of a node
    if (a.at(0)->kind == Value::Kind::Number) return number(std::floor(a.at(0)->number));
    return node(ops::apply("Floor", {a.node_at(0)})->output());
  };
  t["TransposeTimes"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "TransposeTimes"};  // (A, B): A' * B
    const Variable A = a.node_at(0), B = a.node_at(1);
    // With a vector B this is the engine's times(A, B) contracting all of B, which also lets an
    // A of inferred dimensions (EmbeddingLayer {transpose = true}) learn them.
    if (B.shape().is_known() && B.shape().rank() <= 1) return node(ops::times(A, B, 0)->output());
    const Variable At =
        ops::apply("TransposeAxes", {with_rank(A, 2)}, {{"axis1", DictValue(Axis(-1))}, {"axis2", DictValue(Axis(-2))}})
            ->output();
    return node(ops::times(B, At)->output());
  };
  t["LogSoftmax"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "LogSoftmax"};  // over the first axis, as Softmax
    return node(ops::apply("LogSoftmax", {a.node_at(0)}, {{"axis", DictValue(Axis(-1))}})->output());
  };
  t["Clip"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Clip"};  // (x, minValue, maxValue)
    return node(ops::apply("Clip", {a.node_at(0), a.node_at(1), a.node_at(2)})->output());
  };
  t["If"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "If"};  // (cond, thenVal, elseVal), elementwise
    return node(ops::apply("Select", {a.node_at(0), a.node_at(1), a.node_at(2)})->output());
  };
  t["Splice"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Splice"};  // (inputs, axis = 1)
    const std::vector<Variable> in = on_common_axes(node_list(a.at(0), w, "Splice"));
    if (in.empty()) fail("Splice: no inputs", w);
    if (in.size() == 1) return node(in[0]);
    const Axis axis = a.opt("axis") ? bs_axis(a.opt("axis"), "Splice", w) : Axis(-1);
    return node(ops::apply("Splice", in, {{"axis", DictValue(axis)}})->output());
  };
  t["TransposeDimensions"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "TransposeDimensions"};  // (x, axis1, axis2); a missing axis is a dimension of 1
    const Axis a1 = bs_axis(a.at(1), "TransposeDimensions", w), a2 = bs_axis(a.at(2), "TransposeDimensions", w);
    const Variable x = with_rank(a.node_at(0), size_t(-std::min(a1.static_index(), a2.static_index())));
    return node(ops::apply("TransposeAxes", {x}, {{"axis1", DictValue(a1)}, {"axis2", DictValue(a2)}})->output());
  };
  t["NewReshape"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w,
           "NewReshape"};  // (x, dims, beginAxis = 0, endAxis = 0): 1-based axes, 0 = from the start / to the end
    const Variable x = a.node_at(0);
    if (!x.shape().is_known()) fail("NewReshape: the input's shape is not known yet", w);
    const double b = a.number("beginAxis", 0), e = a.number("endAxis", 0);
    const size_t rank = x.shape().rank();
    const size_t begin = b > 0 ? size_t(b) - 1 : 0, end = e > 0 ? size_t(e) - 1 : rank;
    if (begin > end || end > rank) fail("NewReshape: axes [beginAxis, endAxis) out of range", w);
    return node(reshape(x, dims_of({a.at(1)}, w), begin, end));
  };
  t["Reshape"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Reshape"};  // CNTK's legacy (input, numRows, imageWidth = 0, imageHeight = 0, imageChannels = 0)
    const Variable x = a.node_at(0);
    const double rows = as_number(a.at(1), "Reshape numRows");
    std::vector<size_t> dims = {size_t(rows)};
    if (a.number("imageWidth", 0) > 0)
      dims = {size_t(a.number("imageWidth", 0)), size_t(a.number("imageHeight", 1)),
              size_t(a.number("imageChannels", 1))};
    if (!x.shape().is_known() || double(x.shape().total_size()) != rows)
      throw NotImplementedError("Reshape: a legacy reshape to " + std::to_string(size_t(rows)) +
                                " rows that changes the number of samples is not implemented (" + x.shape().str() +
                                ")");
    return node(reshape(x, dims, 0, x.shape().rank()));
  };
}

// CNTK.core.bs's special-purpose nodes, each one engine op (arguments in CNTK's order).
void add_special_nodes(Table& t) {
  t["Cast"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Cast"};  // (node, precision): the values as 'float', 'double' or 'float16'
    static const std::map<std::string, DataType> types = {
        {"float", DataType::Float}, {"double", DataType::Double}, {"float16", DataType::Float16}};
    const std::string to = a.text("precision", "");
    const auto type = types.find(to);
    if (type == types.end()) fail("Cast: precision must be 'float', 'double' or 'float16', not '" + to + "'", w);
    return node(ops::apply("Cast", {a.node_at(0)}, {{"newDataType", DictValue(int64_t(type->second))}})->output());
  };
  // EditDistanceError (leftInput, rightInput, subPen = 1, delPen = 1, insPen = 1, squashInputs =
  // false, tokensToIgnore = [||]): the edit distance of the two sequences' argmax tokens.
  t["EditDistanceError"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "EditDistanceError"};
    DictValue::List ignored;
    if (auto v = a.opt("tokensToIgnore"))
      for (size_t token : dims_of({v}, w)) ignored.push_back(DictValue(int64_t(token)));
    Dictionary attrs = {{"subPen", DictValue(a.number("subPen", 1))},
                        {"delPen", DictValue(a.number("delPen", 1))},
                        {"insPen", DictValue(a.number("insPen", 1))},
                        {"squashInputs", DictValue(flag(a.opt("squashInputs")))},
                        {"tokensToIgnore", DictValue(ignored)}};
    g_sequential = true;  // over sequences
    return node(ops::apply("EditDistanceError", on_common_axes({a.node_at(0), a.node_at(1)}), attrs)->output());
  };
  // CosDistanceWithNegativeSamples (a, b, numShifts, numNegSamples): CNTK passed the two counts
  // as constant nodes; here they are numbers.
  t["CosDistanceWithNegativeSamples"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n,
                                           const TextLocation& w) {
    Args a{p, n, w, "CosDistanceWithNegativeSamples"};
    auto count = [&a, &w](size_t i, const char* what) {
      const double v = as_number(a.at(i), std::string("CosDistanceWithNegativeSamples ") + what);
      if (v < 1 || v != std::floor(v))
        fail(std::string("CosDistanceWithNegativeSamples: ") + what + " must be a whole number >= 1", w);
      return int64_t(v);
    };
    Dictionary attrs = {{"shiftWindow", DictValue(count(2, "numShifts"))},
                        {"numberOfNegativeSamples", DictValue(count(3, "numNegSamples"))}};
    return node(ops::apply("CosDistanceWithNegativeSamples", {a.node_at(0), a.node_at(1)}, attrs)->output());
  };
  // LambdaRank / NDCG1Eval (gain, prediction, queryId): the engine's ranking ops take batch-only
  // operands, while a BrainScript network keeps its inputs' sequence axis until it is built.
  for (const char* name : {"LambdaRank", "NDCG1Eval"})
    t[name] = [name](std::vector<ValuePtr>&, std::map<std::string, ValuePtr>&, const TextLocation&) -> ValuePtr {
      throw NotImplementedError(std::string("BrainScript ") + name +
                                " is not implemented yet (the ranking ops need batch-only inputs while the network "
                                "is built)");
    };
  // ROIPooling (input, ROIs, shape, spatialScale = 0.0625): max pooling of each ROI ([4 x R]:
  // x1, y1, x2, y2 in the image's coordinates, scaled onto the [W x H x C] input) to shape
  // [w x h].
  t["ROIPooling"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "ROIPooling"};
    Dictionary attrs = {{"poolingType", DictValue(int64_t(0))},
                        {"roiOutputShape", DictValue(bs_shape(dims_of({a.at(2)}, w)))},
                        {"spatialScale", DictValue(a.number("spatialScale", 0.0625))}};
    return node(ops::apply("ROIPooling", {a.node_at(0), a.node_at(1)}, attrs)->output());
  };
}

// Sequence primitives (their inputs keep the sequence axis).
void add_sequence_primitives(Table& t) {
  t["_IsWithin"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "_IsWithin"};  // (x, N): 1 at the first N steps of each sequence (the last -N if N < 0)
    const double k = as_number(a.at(1), "IsFirstN/IsLastN N");
    if (k == 0 || k != std::floor(k)) fail("IsFirstN/IsLastN: N must be a whole number > 0", w);
    g_sequential = true;
    return node(ops::apply("IsWithin", {a.node_at(0)}, {{"offset", DictValue(int64_t(k))}})->output());
  };
  t["ReconcileDynamicAxis"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "ReconcileDynamicAxis"};  // (dataInput, layoutInput): data on the layout's dynamic axes
    g_sequential = true;
    return node(ops::apply("ReconcileDynamicAxis", {a.node_at(0), a.node_at(1)})->output());
  };
  // OptimizedRNNStack (weights, input, hiddenDims, numLayers = 1, bidirectional = false,
  // recurrentOp = 'lstm', axis = -1): CNTK's cuDNN stack, its weights in cuDNN's layout (inferred).
  t["OptimizedRNNStack"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "OptimizedRNNStack"};
    if (a.number("axis", -1) != -1)
      throw NotImplementedError("OptimizedRNNStack: an axis other than -1 (the sequence)");
    const ValuePtr bidirectional = a.opt("bidirectional");
    Dictionary attrs = {{"hiddenSize", DictValue(int64_t(as_number(a.at(2), "OptimizedRNNStack hiddenDims")))},
                        {"numLayers", DictValue(int64_t(a.number("numLayers", 1)))},
                        {"bidirectional", DictValue(bidirectional && !all_zero(bidirectional))},
                        {"recurrentOp", DictValue(a.text("recurrentOp", "lstm"))}};
    g_sequential = true;
    return node(ops::apply("OptimizedRNNStack", {a.node_at(1), a.node_at(0)}, attrs)->output());
  };
  t["Where"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Where"};
    g_sequential = true;
    return node(ops::apply("Where", {a.node_at(0)})->output());
  };
  // CNTK's PackedIndex translated Where's indices into its packed layout; the engine's gather
  // and scatter take Where's indices as they are.
  t["PackedIndex"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "PackedIndex"};  // (layoutNode, indexSequence)
    return node(a.node_at(1));
  };
  t["GatherPacked"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "GatherPacked"};  // (indexSequence, sourceData)
    g_sequential = true;
    return node(ops::apply("GatherPacked", {a.node_at(1), a.node_at(0)})->output());
  };
  t["ScatterPacked"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "ScatterPacked"};  // (cond, indexSequence, sourceData)
    g_sequential = true;
    const Variable cond = a.node_at(0), data = a.node_at(2);
    Variable index = a.node_at(1);
    if (data.dynamic_axes().size() < 2)  // data without a sequence axis: one item per sequence
      index = ops::apply("Where", {cond},
                         {{"newSequenceAxisLengthScalingFactor", DictValue(int64_t(0))},
                          {"newSequenceAxisLengthAdditiveFactor", DictValue(int64_t(1))}})
                  ->output();
    return node(ops::apply("ScatterPacked", {data, index, cond})->output());
  };
}

// CNTK's config values printed as its Format did: `how` is what goes between '%' and the type.
std::string format_value(const ValuePtr& v, const std::string& how) {
  if (how.find_first_not_of("0123456789.-+ #") != std::string::npos)
    throw ValueError("Format: '" + how + "' is not a format width/precision (such as '.2' or '-8')");
  auto printed = [](const std::string& fmt, auto value) {
    char buf[256];
    std::snprintf(buf, sizeof buf, fmt.c_str(), value);
    return std::string(buf);
  };
  auto nest = [](const std::string& s, char open, bool newline, char close) {
    std::string r = "  " + s;  // every line indented by 2, then the brackets replace the first and last blank
    for (size_t pos = r.find('\n'); pos != std::string::npos; pos = r.find('\n', pos + 3)) r.insert(pos + 1, "  ");
    r = newline ? " \n" + r + "\n " : r + "  ";
    r.front() = open;
    r.back() = close;
    return r;
  };
  switch (v->kind) {
    case Value::Kind::String: return printed("%" + how + "s", v->text.c_str());
    case Value::Kind::Number:
      if (v->number == std::floor(v->number) && std::abs(v->number) < 2147483648.0)
        return printed("%" + how + "d", int(v->number));
      return printed("%" + how + "f", v->number);
    case Value::Kind::Bool: return v->boolean ? "true" : "false";
    case Value::Kind::Record: {
      std::string s;
      for (const auto& [id, member] : v->record->members)
        s += (s.empty() ? "" : "\n") + id + " = " + format_value(member->force(), how);
      return nest(s, '[', true, ']');
    }
    case Value::Kind::Array: {
      std::string s;
      for (size_t i = 0; i < v->array->items.size(); ++i)
        s += (i ? "\n" : "") + format_value(v->array->items[i]->force(), how);
      return nest(s, '(', false, ')');
    }
    case Value::Kind::Node: return v->node.str();
    default: return kind_name(v->kind);
  }
}

std::string substr(const std::string& s, double begin, double count) {  // negative begin: from the end
  const size_t b = std::min(begin < 0 ? size_t(std::max(0.0, double(s.size()) + begin)) : size_t(begin), s.size());
  return s.substr(b, count < 0 ? std::string::npos : size_t(count));
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

double int_function(const std::string& what, double x, double y, const TextLocation& where) {
  const int a = int(x), b = int(y);
  if (b == 0) fail(what + ": division by zero", where);
  return what == "Mod" ? double(a % b) : double(a / b);
}

// Functions of plain values: strings, numbers, and tests of a value's kind.
void add_value_functions(Table& t) {
  t["Format"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Format"};  // (value, format)
    return string_value(format_value(a.at(0), as_string(a.at(1), "Format format")));
  };
  t["Replace"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Replace"};  // (s, from, to): every occurrence
    return string_value(replace_all(as_string(a.at(0), "Replace s"), as_string(a.at(1), "Replace from"),
                                    as_string(a.at(2), "Replace to")));
  };
  t["Substr"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Substr"};  // (s, begin, num)
    return string_value(
        substr(as_string(a.at(0), "Substr s"), as_number(a.at(1), "Substr begin"), as_number(a.at(2), "Substr num")));
  };
  t["Chr"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Chr"};  // the character of a code (UTF-8)
    const double c = as_number(a.at(0), "Chr code");
    if (c < 0 || c > 0x10FFFF || c != std::floor(c)) fail("Chr: not a character code", w);
    const auto u = static_cast<uint32_t>(c);
    std::string s;
    if (u < 0x80) {
      s += char(u);
    } else if (u < 0x800) {
      s += {char(0xC0 | (u >> 6)), char(0x80 | (u & 0x3F))};
    } else if (u < 0x10000) {
      s += {char(0xE0 | (u >> 12)), char(0x80 | ((u >> 6) & 0x3F)), char(0x80 | (u & 0x3F))};
    } else {
      s += {char(0xF0 | (u >> 18)), char(0x80 | ((u >> 12) & 0x3F)), char(0x80 | ((u >> 6) & 0x3F)),
            char(0x80 | (u & 0x3F))};
    }
    return string_value(s);
  };
  for (const char* name : {"Mod", "IntDiv"}) {
    const std::string what = name;
    t[name] = [what](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
      Args a{p, n, w, what.c_str()};  // of the arguments' integer parts, as C++'s % and /
      return number(int_function(what, as_number(a.at(0), what), as_number(a.at(1), what), w));
    };
  }
  t["IsSameObject"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "IsSameObject"};
    return boolean(a.at(0) == a.at(1));
  };
  for (auto [name, kind] :
       {std::pair{"IsArray", Value::Kind::Array}, {"IsDouble", Value::Kind::Number}, {"IsBool", Value::Kind::Bool}}) {
    const char* fn = name;
    const auto k = kind;
    t[name] = [fn, k](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
      Args a{p, n, w, fn};
      return boolean(a.at(0)->kind == k);
    };
  }
  t["_NotImplemented"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n,
                            const TextLocation& w) -> ValuePtr {
    Args a{p, n, w, "_NotImplemented"};  // the library's parts not written yet
    throw NotImplementedError(as_string(a.at(0), "_NotImplemented") + " is not implemented yet");
  };
  t["Print"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Print"};  // (value, format = ''): writes the value to stderr and gives it back
    const ValuePtr v = a.at(0);
    const std::string text = v->kind == Value::Kind::String ? v->text : format_value(v, a.text("format", ""));
    std::fprintf(stderr, "%s\n", text.c_str());
    return v;
  };
  t["Fail"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) -> ValuePtr {
    Args a{p, n, w, "Fail"};
    fail(a.at(0)->kind == Value::Kind::String ? a.at(0)->text : format_value(a.at(0), ""), w);
  };
}

}  // namespace

// `new StringFunction [ what = ... ]` and its kin: CNTK's record-taking spellings of the value
// functions above (its library defines Format, Substr, ... over them).
ValuePtr new_value_function(const char* cls, std::vector<ValuePtr>& p, const TextLocation& w) {
  if (p.empty() || p[0]->kind != Value::Kind::Record) fail(std::string(cls) + " needs a record", w);
  const RecordPtr& r = p[0]->record;
  auto member = [&](const std::string& id) {
    const ThunkPtr* t = r->find_here(id);
    if (!t) fail(std::string(cls) + ": the record has no member '" + id + "'", w);
    return (*t)->force();
  };
  const std::string cls_name = cls;
  const std::string what = cls_name == "PrintAction" ? "" : as_string(member("what"), cls_name + " what");
  std::vector<ValuePtr> args;
  std::map<std::string, ValuePtr> none;
  static const Table functions = builtin_table();
  auto apply = [&](const char* fn, std::vector<ValuePtr> a) { return functions.at(fn)(a, none, w); };
  if (cls_name == "PrintAction") return apply("Print", {member("what")});
  if (cls_name == "StringFunction") {
    if (what == "Format") return apply("Format", {member("arg"), member("how")});
    if (what == "Chr") return apply("Chr", {member("arg")});
    if (what == "Substr") return apply("Substr", {member("arg"), member("pos"), member("chars")});
    if (what == "Replace") return apply("Replace", {member("arg"), member("replacewhat"), member("withwhat")});
  } else if (cls_name == "NumericFunction") {
    if (what == "Floor" || what == "Length") return apply(what.c_str(), {member("arg")});
    if (what == "Mod" || what == "IntDiv") {
      const ValuePtr a = member("args");
      if (a->kind != Value::Kind::Array || a->array->items.size() != 2) fail(what + " takes two arguments", w);
      return apply(what.c_str(), {a->array->items[0]->force(), a->array->items[1]->force()});
    }
  }
  fail("unknown 'what' value '" + what + "' of " + cls_name, w);
}

// An Input's sequence axis: a DynamicAxis() value (named after its member; one used unnamed gets
// a unique name), an axis name as CNTK also took, or '' / none for the default one.
Axis input_sequence_axis(const ValuePtr& v, const TextLocation& where) {
  if (!v) return Axis::default_dynamic_axis();
  if (v->kind == Value::Kind::DynamicAxis) {
    if (!v->axis) v->axis = Axis::new_unique_dynamic_axis("DynamicAxis");
    return *v->axis;
  }
  if (v->kind == Value::Kind::String)
    return v->text.empty() || v->text == "*" ? Axis::default_dynamic_axis() : Axis::dynamic(v->text);
  if (is_none(v)) return Axis::default_dynamic_axis();
  fail(std::string("Input: dynamicAxis must be a DynamicAxis() or an axis name, not a ") + kind_name(v->kind), where);
}

Table builtin_table() {
  Table t;
  t["Input"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Input"};
    const bool sparse = a.opt("sparse") ? a.opt("sparse")->boolean : false;
    // A sequence axis, as CNTK's inputs have; networks without sequence ops drop it at the end.
    const bool sparse_input = sparse || (a.opt("isSparse") && a.opt("isSparse")->boolean);
    const Axis axis = input_sequence_axis(a.opt("dynamicAxis"), w);
    if (axis != Axis::default_dynamic_axis()) g_sequential = true;  // its own axis is kept
    return node(
        Variable::input(bs_shape(dims_of(p, w)), g_dtype, sparse_input, false, {Axis::default_batch_axis(), axis}, ""));
  };
  t["DynamicAxis"] = [](std::vector<ValuePtr>&, std::map<std::string, ValuePtr>&, const TextLocation&) {
    return ValuePtr(std::make_shared<Value>(Value::Kind::DynamicAxis));  // its axis is made when named or used
  };
  t["ParameterTensor"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "ParameterTensor"};
    return make_parameter(dims_of({a.at(0)}, w), a);
  };
  t["Parameter"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Parameter"};
    // A [n x 1] parameter is a bias column: a vector, as CNTK 2.7 loads such v1 parameters.
    std::vector<size_t> dims = dims_of({a.at(0), a.at(1)}, w);
    if (dims.size() == 2 && dims[1] == 1) dims.pop_back();
    return make_parameter(dims, a);
  };
  t["Constant"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Constant"};
    const std::vector<size_t> dims = {size_t(a.number("rows", 1)), size_t(a.number("cols", 1))};
    return node(Variable::constant(bs_shape(dims), g_dtype, as_number(a.at(0), "Constant value"), ""));
  };
  t["Times"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Times"};  // (A, B, outputRank = 1, inferInputRankToMap = -1): A * B
    const double map_rank = a.number("inferInputRankToMap", -1);
    return node(ops::times(a.node_at(1), a.node_at(0), int(a.number("outputRank", 1)),
                           map_rank < 0 ? std::nullopt : std::optional<int>(int(map_rank)))
                    ->output());
  };
  for (auto [name, op] : {std::pair{"Plus", "Plus"},
                          {"Minus", "Minus"},
                          {"ElementTimes", "ElementTimes"},
                          {"ElementDivide", "ElementDivide"},
                          {"Less", "Less"},
                          {"LessEqual", "LessEqual"},
                          {"Greater", "Greater"},
                          {"GreaterEqual", "GreaterEqual"},
                          {"Equal", "Equal"},
                          {"NotEqual", "NotEqual"},
                          {"LogPlus", "LogPlus"}}) {
    std::string op_name = op;
    const char* bs_name = name;
    t[name] = [op_name, bs_name](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
      Args a{p, n, w, bs_name};
      return node(ops::apply(op_name, on_common_axes({a.node_at(0), a.node_at(1)}))->output());
    };
  }
  add_unary(t, "Sigmoid", "StableSigmoid");
  add_unary(t, "Tanh", "Tanh");
  add_unary(t, "RectifiedLinear", "ReLU");
  add_unary(t, "ReLU", "ReLU");
  add_unary(t, "Exp", "Exp");
  add_unary(t, "Log", "Log");
  add_unary(t, "Negate", "Negate");
  add_unary(t, "Abs", "Abs");
  add_unary(t, "Sqrt", "Sqrt");
  add_unary(t, "Softmax", "Softmax");
  for (const char* op : {"Reciprocal", "Hardmax", "Sin", "Cos", "Sinh", "Cosh", "Asin", "Acos", "Asinh", "Atanh",
                         "StraightThrough", "StopGradient"})
    add_unary(t, op, op);
  t["Logistic"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Logistic"};  // (label, probability)
    const Variable label = a.node_at(0);
    return node(ops::apply("Logistic", {shaped_like(a.node_at(1), label), label})->output());
  };
  t["WeightedLogistic"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "WeightedLogistic"};  // (label, probability, instanceWeight): each term times its weight
    const Variable label = a.node_at(0);
    return node(ops::apply("Logistic", {shaped_like(a.node_at(1), label), label, a.node_at(2)})->output());
  };
  t["SquareError"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "SquareError"};
    const Variable label = a.node_at(0);
    auto d = ops::minus(label, shaped_like(a.node_at(1), label));
    return node(ops::reduce_sum(ops::element_times(d, d), Axis::all_static_axes(), false)->output());
  };
  t["CrossEntropyWithSoftmax"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n,
                                    const TextLocation& w) {
    Args a{p, n, w, "CrossEntropyWithSoftmax"};  // (labels, z)
    const Variable label = a.node_at(0);
    return node(ops::cross_entropy_with_softmax(shaped_like(a.node_at(1), label), label)->output());
  };
  for (const char* name : {"ClassificationError", "ErrorPrediction"}) {
    t[name] = [name](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
      Args a{p, n, w, name};  // (labels, z)
      const Variable label = a.node_at(0);
      return node(ops::classification_error(shaped_like(a.node_at(1), label), label)->output());
    };
  }
  // ReduceSum/LogSum/Mean/Min/Max (x, axis = None): over all elements, or BrainScript axis k.
  for (const char* kind : {"Sum", "LogSum", "Mean", "Min", "Max"}) {
    const std::string fn = std::string("Reduce") + kind, op = kind;
    t[fn] = [fn, op](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
      Args a{p, n, w, fn.c_str()};
      const ValuePtr axis = a.opt("axis");
      if (!axis || is_none(axis) || (axis->kind == Value::Kind::Number && axis->number == 0))
        return node(ops::reduce(op, a.node_at(0))->output());
      return node(ops::reduce(op, a.node_at(0), bs_axis(axis, fn, w))->output());
    };
  }
  for (auto [name, kind] :
       {std::pair{"Mean", PrecomputedStatistic::Kind::Mean}, {"InvStdDev", PrecomputedStatistic::Kind::InvStdDev}}) {
    const char* fn = name;
    const auto k = kind;
    t[name] = [fn, k](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
      Args a{p, n, w, fn};
      const Variable x = a.node_at(0);
      if (!x.is_input()) fail(std::string(fn) + ": the statistic of an Input node is computed, not of a " + x.str(), w);
      const Variable c = Variable::constant(x.shape(), g_dtype, k == PrecomputedStatistic::Kind::Mean ? 0.0 : 1.0, "");
      g_statistics.push_back({k, x, c});
      return node(c);
    };
  }
  t["Slice"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Slice"};  // (beginIndex, endIndex, input, axis = 1): BrainScript axis k is NumPy axis -k
    const double axis = a.number("axis", 1);
    if (axis < 0) {  // the sequence axis: steps [begin, end) of each sequence (negative: from the end)
      g_sequential = true;
      Dictionary attrs = {{"beginIndex", DictValue(int64_t(as_number(a.at(0), "Slice beginIndex")))},
                          {"endIndex", DictValue(int64_t(as_number(a.at(1), "Slice endIndex")))}};
      return node(ops::apply("SequenceSlice", {a.node_at(2)}, attrs)->output());
    }
    if (axis < 1 || axis != std::floor(axis)) fail("Slice: axis must be a whole number >= 1 (or -1)", w);
    Dictionary attrs = {{"axis", DictValue(Axis(-int(axis)))},
                        {"beginIndex", DictValue(int64_t(as_number(a.at(0), "Slice beginIndex")))},
                        {"endIndex", DictValue(int64_t(as_number(a.at(1), "Slice endIndex")))},
                        {"sliceStrides", DictValue(int64_t(1))}};
    return node(ops::apply("Slice", {a.node_at(2)}, attrs)->output());
  };
  // Convolution (W, x, kernelDims, mapDims = 0, stride = 1, sharing = true, autoPadding = true,
  // lowerPad = 0, upperPad = 0): per-axis values in BrainScript order (width first).
  t["Convolution"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Convolution"};
    const std::vector<size_t> strides = a.opt("stride") ? dims_of({a.opt("stride")}, w) : std::vector<size_t>{1};
    Dictionary attrs = {{"strides", DictValue(bs_shape(strides))},
                        {"autoPadding", ops::flag_list(bs_flags(a.opt("autoPadding"), true))},
                        {"dilation", DictValue(NDShape{1})},
                        {"groups", DictValue(int64_t(1))},
                        {"sharing", ops::flag_list({true})},
                        {"reductionRank", DictValue(int64_t(1))},
                        {"transpose", DictValue(false)}};
    explicit_padding(attrs, a);
    return node(ops::apply("Convolution", {a.node_at(0), a.node_at(1)}, attrs)->output());
  };
  // Pooling (x, poolKind = 'max' | 'average', kernelDims, stride = 1, autoPadding = true, ...).
  t["Pooling"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Pooling"};
    const std::string kind = as_string(a.at(1), "Pooling poolKind");
    if (kind != "max" && kind != "average") fail("Pooling: poolKind must be 'max' or 'average', not '" + kind + "'", w);
    const std::vector<size_t> strides = a.opt("stride") ? dims_of({a.opt("stride")}, w) : std::vector<size_t>{1};
    Dictionary attrs = {
        {"poolingType", DictValue(int64_t(kind == "max" ? ops::PoolingType::Max : ops::PoolingType::Average))},
        {"poolingWindowShape", DictValue(bs_shape(dims_of({a.at(2)}, w)))},
        {"strides", DictValue(bs_shape(strides))},
        {"autoPadding", ops::flag_list(bs_flags(a.opt("autoPadding"), true))},
        {"ceilOutDim", DictValue(flag(a.opt("ceilOutDim")))},
        {"includePad", DictValue(flag(a.opt("includePad")))}};
    explicit_padding(attrs, a);
    return node(ops::apply("Pooling", {a.node_at(0)}, attrs)->output());
  };
  // ConvolutionTranspose (W, x, kernelDims, mapDims = 0, stride = 1, sharing = true, autoPadding = true,
  // lowerPad = 0, upperPad = 0, outputShape = None, dilation = 1): W is [filter x out x in].
  t["ConvolutionTranspose"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "ConvolutionTranspose"};
    auto per_axis = [&](const char* key) {
      return bs_shape(a.opt(key) ? dims_of({a.opt(key)}, w) : std::vector<size_t>{1});
    };
    const ValuePtr out_shape = a.opt("outputShape");
    const NDShape output_shape = out_shape && !is_none(out_shape) ? bs_shape(dims_of({out_shape}, w)) : NDShape{0};
    Dictionary attrs = {{"strides", DictValue(per_axis("stride"))},
                        {"sharing", ops::flag_list({true})},
                        {"autoPadding", ops::flag_list(bs_flags(a.opt("autoPadding"), true))},
                        {"dilation", DictValue(per_axis("dilation"))},
                        {"reductionRank", DictValue(int64_t(1))},
                        {"groups", DictValue(int64_t(1))},
                        {"maxTempMemSizeInSamples", DictValue(int64_t(0))},
                        {"transpose", DictValue(true)},
                        {"outputShape", DictValue(output_shape)}};
    explicit_padding(attrs, a);
    return node(ops::apply("Convolution", {a.node_at(0), a.node_at(1)}, attrs)->output());
  };
  // MaxUnpooling (unpoolInput, poolInput, kernelDims, stride = 1, autoPadding = true, lowerPad = 0,
  // upperPad = 0): each value
  // goes back to where its window's maximum was in poolInput.
  t["MaxUnpooling"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "MaxUnpooling"};
    const std::vector<size_t> strides = a.opt("stride") ? dims_of({a.opt("stride")}, w) : std::vector<size_t>{1};
    Dictionary attrs = {{"poolingType", DictValue(int64_t(0))},
                        {"unpoolingWindowShape", DictValue(bs_shape(dims_of({a.at(2)}, w)))},
                        {"strides", DictValue(bs_shape(strides))},
                        {"autoPadding", ops::flag_list(bs_flags(a.opt("autoPadding"), true))}};
    explicit_padding(attrs, a);
    return node(ops::apply("Unpooling", {a.node_at(0), a.node_at(1)}, attrs)->output());
  };
  // _ConcatArrays (a, b): the items of both (a number counts as a one-item array).
  t["_ConcatArrays"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "_ConcatArrays"};
    auto out = std::make_shared<Array>();
    for (size_t i = 0; i < 2; ++i) {
      ValuePtr v = a.at(i);
      if (v->kind == Value::Kind::Array)
        out->items.insert(out->items.end(), v->array->items.begin(), v->array->items.end());
      else
        out->items.push_back(ready(v));
    }
    auto v = std::make_shared<Value>(Value::Kind::Array);
    v->array = out;
    return ValuePtr(v);
  };
  // Repeat (n, value): an array of n copies.
  t["Repeat"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Repeat"};
    const double count = as_number(a.at(0), "Repeat count");
    if (count < 0 || count > 1e6 || count != std::floor(count)) fail("Repeat: bad count", w);
    auto out = std::make_shared<Array>();
    for (size_t i = 0; i < size_t(count); ++i) out->items.push_back(ready(a.at(1)));
    auto v = std::make_shared<Value>(Value::Kind::Array);
    v->array = out;
    return ValuePtr(v);
  };
  // Dropout (x): its rate is the SGD block's dropoutRate, set by the train action per epoch.
  t["Dropout"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Dropout"};
    return node(ops::apply("Dropout", {a.node_at(0)}, {{"dropoutRate", DictValue(0.0)}})->output());
  };
  // BatchNormalization (input, scale, bias, runMean, runVariance, spatial,
  // normalizationTimeConstant = 0, blendTimeConstant = 0, epsilon = 0.00001): the running count
  // is a constant of its own.
  t["BatchNormalization"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "BatchNormalization"};
    const ValuePtr spatial = a.at(5);
    if (spatial->kind != Value::Kind::Bool) fail("BatchNormalization: spatial must be a boolean", w);
    if (n.count("useCntkEngine") && !n.at("useCntkEngine")->boolean)
      throw NotImplementedError("BatchNormalization: useCntkEngine=false (cuDNN) is not available");
    const double eps = a.number("epsilon", 0.00001);
    Dictionary attrs = {{"spatial", DictValue(spatial->boolean)},
                        {"normalizationTimeConstant", DictValue(a.number("normalizationTimeConstant", 0))},
                        {"blendTimeConstant", DictValue(a.number("blendTimeConstant", 0))},
                        {"epsilon", DictValue(eps)},
                        {"useCuDNNEngine", DictValue(false)},
                        {"disableRegularization", DictValue(false)}};
    const Variable count = Variable::constant(NDShape{}, g_dtype, 0.0, "");
    return node(ops::apply("BatchNormalization",
                           {a.node_at(0), a.node_at(1), a.node_at(2), a.node_at(3), a.node_at(4), count}, attrs)
                    ->output());
  };
  t["Length"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Length"};
    ValuePtr v = a.at(0);
    if (v->kind == Value::Kind::String) return number(double(v->text.size()));
    return number(v->kind == Value::Kind::Array ? double(v->array->items.size()) : 1);
  };
  add_node_primitives(t);
  add_special_nodes(t);
  add_sequence_primitives(t);
  add_value_functions(t);
  t["Sequential"] = [](std::vector<ValuePtr>& p, std::map<std::string, ValuePtr>& n, const TextLocation& w) {
    Args a{p, n, w, "Sequential"};
    ValuePtr fs = a.at(0);
    return builtin([fs, w](std::vector<ValuePtr>& args, std::map<std::string, ValuePtr>&, const TextLocation& at) {
      if (args.size() != 1) fail("a Sequential function takes one argument", at);
      ValuePtr x = args[0];
      if (fs->kind != Value::Kind::Array) return call_function(fs, {x}, at);
      for (const auto& f : fs->array->items) x = call_function(f->force(), {x}, at);
      return x;
    });
  };
  return t;
}

}  // namespace cntk::brainscript::detail
