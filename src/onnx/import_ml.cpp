// Rules of ONNX's ai.onnx.ml domain over numeric tensors: Binarizer, ArrayFeatureExtractor and
// TreeEnsemble (opset 5); and the default domain's feature extractor of the same kind,
// TfIdfVectorizer over integer tokens.
// The domain's string, map and sequence forms (LabelEncoder over strings, ZipMap, DictVectorizer)
// have no engine values and are refused as unknown op types.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

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
  Variable th =
      Variable::constant(NDShape{}, x.dtype(), double(c.attr_float("threshold", 0.0f)), c.name() + "/threshold");
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
  Variable flat =
      out(c.primitive("Reshape", {cast(c, idx, DataType::Float)}, Dictionary{{"newShape", NDShape({1, n})}}));
  Variable onehot = cast(c, out(c.primitive("Equal", {Variable::constant(positions, c.name() + "/positions"), flat})),
                         x.dtype());  // [N, n]
  auto xd = dims;
  xd.push_back(1);  // [..., N, 1] times [N, n], summed over N
  Variable p = out(
      c.primitive("ElementTimes", {out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape(xd)}})), onehot}));
  Variable y = out(c.primitive(
      "ReduceElements", {p},
      Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(-2)}}));
  if (c.input_elem_type(0) != ::onnx::TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  return {y};
}

std::vector<double> doubles(ImportContext& c, const std::string& attr) {
  NDArrayView v = c.tensor_value(c.attr_tensor(attr)).cast(DataType::Double).contiguous();
  return std::vector<double>(v.data<double>(), v.data<double>() + v.numel());
}

// TreeEnsemble: every tree's leaves as indicators over the samples, each the product of the
// branch conditions on its path (a comparison of one feature with the node's split, or its
// membership in the node's set; true for NaN where missing values track true). A sample's
// output is its leaves' weights gathered into their targets: a product of the indicators with
// a [leaves, targets] weight matrix for SUM and AVERAGE, a per-tree minimum or maximum for MIN
// and MAX. The indicators are step functions: gradients reach no input.
Vars tree_ensemble(ImportContext& c) {
  Variable x = c.input(0);
  if (c.input_dyn(0) > 0 || x.shape().rank() != 2) c.fail("X must be a static [N, features] tensor");
  if (c.attr_int("post_transform", 0) != 0) c.fail("post_transform other than NONE is not supported");
  const int64_t n = x.shape()[0], targets = c.attr_int("n_targets");
  const auto feature = c.attr_ints("nodes_featureids"), true_id = c.attr_ints("nodes_truenodeids"),
             false_id = c.attr_ints("nodes_falsenodeids"), true_leaf = c.attr_ints("nodes_trueleafs"),
             false_leaf = c.attr_ints("nodes_falseleafs"), leaf_target = c.attr_ints("leaf_targetids"),
             roots = c.attr_ints("tree_roots");
  const auto splits = doubles(c, "nodes_splits"), modes = doubles(c, "nodes_modes"),
             weights = doubles(c, "leaf_weights");
  const auto tracks = c.attr_ints("nodes_missing_value_tracks_true", std::vector<int64_t>(feature.size(), 0));
  const size_t nodes = feature.size();
  for (const auto* v : {&true_id, &false_id, &true_leaf, &false_leaf, &tracks})
    if (v->size() != nodes) c.fail("the nodes_* attributes must have one entry per node");
  if (splits.size() != nodes || modes.size() != nodes) c.fail("the nodes_* attributes must have one entry per node");
  if (leaf_target.size() != weights.size()) c.fail("leaf_targetids and leaf_weights must have one entry per leaf");
  // The members of each membership node (mode 6), NaN-delimited in the nodes' order.
  std::map<size_t, std::set<double>> members;
  if (c.has_attr("membership_values")) {
    const auto mv = doubles(c, "membership_values");
    size_t at = 0;
    for (size_t i = 0; i < nodes; ++i)
      if (modes[i] == 6)
        for (auto& set = members[i]; at < mv.size() && !std::isnan(mv[at++]);) set.insert(mv[at - 1]);
  }
  const DataType dt = x.dtype();
  auto k = [&](double v) { return Variable::constant(NDShape{}, dt, v, c.name() + "/const"); };
  auto bin = [&](const char* op, const Variable& a, const Variable& b) { return out(c.primitive(op, {a, b})); };
  std::map<size_t, Variable> conditions;  // node -> [N, 1] 0/1 in X's type
  auto condition = [&](size_t i) {
    if (auto it = conditions.find(i); it != conditions.end()) return it->second;
    if (feature[i] < 0 || feature[i] >= x.shape()[1]) c.fail("a node's feature id is out of range");
    Variable f = out(c.primitive(
        "Slice", {x}, Dictionary{{"axis", Axis(1)}, {"beginIndex", feature[i]}, {"endIndex", feature[i] + 1}}));
    static const char* const ops[] = {"LessEqual", "Less", "GreaterEqual", "Greater", "Equal", "NotEqual"};
    const int mode = int(modes[i]);
    Variable cond;
    if (mode >= 0 && mode < 6) {
      cond = cast(c, bin(ops[mode], f, k(splits[i])), dt);
    } else if (mode == 6) {
      if (!members.count(i)) c.fail("a membership node needs membership_values");
      cond = k(0);  // the members are distinct: at most one equality holds
      for (double m : members[i]) cond = bin("Plus", cond, cast(c, bin("Equal", f, k(m)), dt));
    } else {
      c.fail("nodes_modes must be 0 to 6");
    }
    if (tracks[i]) cond = bin("Plus", cond, cast(c, bin("NotEqual", f, f), dt));  // NaN, never also a true comparison
    return conditions[i] = cond;
  };
  // Per tree: its leaves' indicators and the leaves.
  std::vector<std::pair<Vars, std::vector<size_t>>> trees;
  for (int64_t root : roots) {
    const size_t r = size_t(root);
    if (r >= nodes) c.fail("a tree root is out of range");
    Vars ind;
    std::vector<size_t> leaves;
    auto leaf = [&](size_t l, const Variable& path) {
      if (l >= weights.size()) c.fail("a leaf id is out of range");
      ind.push_back(path.defined() ? path : Variable::constant(NDShape({n, 1}), dt, 1.0, c.name() + "/always"));
      leaves.push_back(l);
    };
    // A root whose branches are one and the same leaf is a leaf itself (the reference reads it
    // at the root's index).
    if (true_leaf[r] && false_leaf[r] && true_id[r] == false_id[r]) {
      leaf(r, Variable());
    } else {
      std::function<void(size_t, const Variable&, int)> walk = [&](size_t i, const Variable& path, int depth) {
        if (depth > int(nodes)) c.fail("the trees' nodes must not form cycles");
        Variable yes = condition(i), no = bin("Minus", k(1), yes);
        auto branch = [&](const Variable& cond, int64_t id, int64_t is_leaf) {
          Variable p = path.defined() ? bin("ElementTimes", path, cond) : cond;
          if (is_leaf) return leaf(size_t(id), p);
          if (id < 0 || size_t(id) >= nodes) c.fail("a node id is out of range");
          walk(size_t(id), p, depth + 1);
        };
        branch(yes, true_id[i], true_leaf[i]);
        branch(no, false_id[i], false_leaf[i]);
      };
      walk(r, Variable(), 0);
    }
    trees.emplace_back(std::move(ind), std::move(leaves));
  }
  // [N, leaves] times a [leaves, targets] matrix, summed over the leaves.
  auto gather = [&](const Vars& ind, const std::vector<size_t>& leaves, bool weighted) {
    NDArrayView m(DataType::Double, NDShape({1, int64_t(leaves.size()), targets}));
    std::fill(m.data<double>(), m.data<double>() + m.numel(), 0.0);
    for (size_t j = 0; j < leaves.size(); ++j) {
      const int64_t t = leaf_target[leaves[j]];
      if (t < 0 || t >= targets) c.fail("a leaf's target id is out of range");
      m.data<double>()[int64_t(j) * targets + t] += weighted ? weights[leaves[j]] : 1.0;
    }
    Variable all = ind.size() == 1 ? ind[0] : out(c.primitive("Splice", ind, Dictionary{{"axis", Axis(1)}}));
    all = out(c.primitive("Reshape", {all}, Dictionary{{"newShape", NDShape({n, int64_t(leaves.size()), 1})}}));
    Variable w = Variable::constant(m.cast(dt), c.name() + "/leaf_weights");
    return out(c.primitive(
        "ReduceElements", {bin("ElementTimes", all, w)},
        Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", false}, {"axis", Axis(1)}}));
  };
  const int64_t agg = c.attr_int("aggregate_function", 1);
  Variable y;
  if (agg == 0 || agg == 1) {
    Vars ind;
    std::vector<size_t> leaves;
    for (const auto& [i, l] : trees) {
      ind.insert(ind.end(), i.begin(), i.end());
      leaves.insert(leaves.end(), l.begin(), l.end());
    }
    y = gather(ind, leaves, true);
    if (agg == 0) y = bin("ElementDivide", y, k(double(trees.size())));
  } else if (agg == 2 || agg == 3) {
    // Each tree reaches one leaf: its weight where that leaf targets t, else the start value.
    // The start value: the largest (MIN) or lowest (MAX) finite value of X's type.
    const double top = dt == DataType::Float16 ? 65504.0
                       : dt == DataType::Float ? double(std::numeric_limits<float>::max())
                                               : std::numeric_limits<double>::max();
    const double init = agg == 2 ? top : -top;
    y = Variable::constant(NDShape({n, targets}), dt, init, c.name() + "/start");
    for (const auto& [ind, leaves] : trees) {
      Variable value = gather(ind, leaves, true), hit = gather(ind, leaves, false);
      Variable tree = out(c.primitive("Select", {hit, value, y}));
      y = out(c.primitive("Select", {bin(agg == 2 ? "Less" : "Greater", tree, y), tree, y}));
    }
  } else {
    c.fail("aggregate_function must be 0 to 3");
  }
  if (c.input_elem_type(0) != ::onnx::TensorProto::FLOAT) c.set_output_elem_type(0, c.input_elem_type(0));
  return {y};
}

// TfIdfVectorizer (opset 9, the default domain; over integers): each pooled n-gram's count in
// each row, with skips. An n-gram of n >= 2 items is counted at every distance d from 1 to
// max_skip_count + 1 between its items, a unigram once; at distance d its count is the sum over
// the start positions of the product of the n equalities X[s + d * j] == gram[j] (shifted slices).
// The counts go to the output columns ngram_indexes names; mode IDF and TFIDF weigh them.
Vars tfidf_vectorizer(ImportContext& c) {
  if (c.has_attr("pool_strings")) c.fail("string n-grams are not supported (the engine has no strings)");
  Variable x = cast(c, c.input(0), DataType::Float);
  const auto xd = x.shape().dims();
  if (c.input_dyn(0) > 0 || xd.empty() || xd.size() > 2 || xd.back() < 0)
    c.fail("X must be a static [C] or [B, C] tensor");
  const std::string mode = c.attr_string("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") c.fail("mode must be TF, IDF or TFIDF, not '" + mode + "'");
  const int64_t lo = c.attr_int("min_gram_length"), hi = c.attr_int("max_gram_length");
  const int64_t skips = c.attr_int("max_skip_count"), len = xd.back(), rows = xd.size() == 2 ? xd[0] : 1;
  const auto pool = c.attr_ints("pool_int64s"), starts = c.attr_ints("ngram_counts"),
             indexes = c.attr_ints("ngram_indexes");
  const auto weights = c.attr_floats("weights", std::vector<float>{});
  if (indexes.empty()) c.fail("ngram_indexes must not be empty");
  const int64_t width = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (!weights.empty() && int64_t(weights.size()) < width) c.fail("weights must have one entry per output column");
  Variable rows_x = out(c.primitive("Reshape", {x}, Dictionary{{"newShape", NDShape({rows, len})}}));
  auto k = [&](double v) { return Variable::constant(NDShape{}, DataType::Float, v, c.name() + "/const"); };
  std::vector<Variable> columns(static_cast<size_t>(width));
  size_t gram_id = 0;  // the pool's n-grams in order, over all sizes: ngram_indexes' order
  for (size_t size_i = 0; size_i < starts.size(); ++size_i) {
    const int64_t n = int64_t(size_i) + 1;
    const int64_t begin = starts[size_i], end = size_i + 1 < starts.size() ? starts[size_i + 1] : int64_t(pool.size());
    if (begin < 0 || end > int64_t(pool.size()) || end < begin || (end - begin) % n)
      c.fail("ngram_counts must split pool_int64s into n-grams of 1, 2, ... items");
    for (int64_t g = begin; g < end; g += n, ++gram_id) {
      if (gram_id >= indexes.size()) c.fail("ngram_indexes must have one entry per pooled n-gram");
      if (n < lo || n > hi) continue;
      Variable count;
      for (int64_t d = 1; d <= (n == 1 ? 1 : skips + 1); ++d) {
        const int64_t span = len - d * (n - 1);  // start positions whose n-gram fits in the row
        if (span <= 0) break;
        Variable match;
        for (int64_t j = 0; j < n; ++j) {
          Variable items = out(c.primitive(
              "Slice", {rows_x}, Dictionary{{"axis", Axis(1)}, {"beginIndex", d * j}, {"endIndex", d * j + span}}));
          Variable eq = out(c.primitive("Equal", {items, k(double(pool[size_t(g + j)]))}));
          match = match.defined() ? out(c.primitive("ElementTimes", {match, eq})) : eq;
        }
        Variable found = out(c.primitive(
            "ReduceElements", {match},
            Dictionary{{"reductionOpName", std::string("Sum")}, {"reductionKeepDimensions", true}, {"axis", Axis(1)}}));
        count = count.defined() ? out(c.primitive("Plus", {count, found})) : found;
      }
      if (!count.defined()) continue;
      auto& col = columns[size_t(indexes[gram_id])];
      col = col.defined() ? out(c.primitive("Plus", {col, count})) : count;
    }
  }
  Vars cols;
  for (int64_t i = 0; i < width; ++i) {
    Variable col = columns[size_t(i)].defined()
                       ? columns[size_t(i)]
                       : Variable::constant(NDShape({rows, 1}), DataType::Float, 0.0, c.name() + "/zero");
    if (mode == "IDF") col = out(c.primitive("Greater", {col, k(0)}));
    if (mode != "TF" && !weights.empty()) col = out(c.primitive("ElementTimes", {col, k(double(weights[size_t(i)]))}));
    cols.push_back(col);
  }
  Variable y = cols.size() == 1 ? cols[0] : out(c.primitive("Splice", cols, Dictionary{{"axis", Axis(1)}}));
  if (xd.size() == 1) y = out(c.primitive("Reshape", {y}, Dictionary{{"newShape", NDShape({width})}}));
  return {y};
}

}  // namespace

void register_import_ml() {
  const std::string domain = "ai.onnx.ml";
  register_onnx_import("Binarizer", binarizer, 1, domain);
  register_onnx_import("ArrayFeatureExtractor", array_feature_extractor, 1, domain);
  register_onnx_import("TreeEnsemble", tree_ensemble, 5, domain);
  register_onnx_import("TfIdfVectorizer", tfidf_vectorizer, 9);
}

}  // namespace cntk::onnx_io
