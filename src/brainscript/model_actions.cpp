// The cv and edit actions: CNTK's cross-validation over the models an SGD run saved
// (DoCrossValidate) and its model editing (DoEdit: a BrainScript network saved as a model, or a
// MEL script).
#include "brainscript/model_actions.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <regex>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "brainscript/evaluator.h"
#include "brainscript/mel.h"
#include "brainscript/ndl.h"
#include "brainscript/reader_config.h"
#include "brainscript/special_nodes.h"
#include "cntk/evaluation.h"
#include "cntk/legacy_model.h"
#include "cntk/serialize.h"
#include "ops/op.h"
#include "serialize/v1_model.h"

namespace cntk::brainscript {

namespace {

namespace fs = std::filesystem;

// Runs `evaluate` (the test action) with stderr going to a temporary file, copies what it logged
// to stderr and returns the averages of its "Final Results" line, in node order. Reading the
// figures back from the test action keeps one evaluator of saved models, so cv and test report
// the same numbers.
std::vector<std::pair<std::string, double>> final_results(const std::function<void()>& evaluate) {
  std::fflush(stderr);
  std::FILE* log = std::tmpfile();
  if (!log) throw IOError("cv: cannot create a temporary file");
  const int saved = dup(2);
  if (saved < 0 || dup2(fileno(log), 2) < 0) {
    std::fclose(log);
    throw IOError("cv: cannot redirect the log");
  }
  std::string text;
  auto restore = [&] {
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    std::rewind(log);
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, log)) > 0;) text.append(buf, n);
    std::fclose(log);
    std::fputs(text.c_str(), stderr);
  };
  try {
    evaluate();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  const size_t at = text.rfind("Final Results:");
  if (at == std::string::npos) throw ValueError("cv: the evaluation reported no results");
  const std::string line = text.substr(at, text.find('\n', at) - at);
  static const std::regex criterion(R"(([^\s;:]+) = (\S+) \* (\d+);)");
  std::vector<std::pair<std::string, double>> out;
  for (std::sregex_iterator it(line.begin(), line.end(), criterion), end; it != end; ++it)
    out.emplace_back((*it)[1].str(), std::stod((*it)[2].str()));
  return out;
}

// cv: evaluates modelPath.N for N in crossValidationInterval (start:step:end) on the reader's
// data, as the test action does (evalNodeNames, minibatchSize); a missing epoch model is
// replaced once by modelPath itself, as CNTK did. Then reports the best model per criterion.
void cross_validate(const ActionContext& ctx, const Action& test) {
  const ConfigRecord& c = *ctx.config;
  const std::string model_path = c.get("modelPath");
  const std::vector<std::string> interval = c.get_array("crossValidationInterval");
  if (interval.size() != 3) throw ValueError("cv: crossValidationInterval must be start:step:end");
  long long bounds[3];
  for (size_t i = 0; i < 3; ++i) {
    const double d = config_to_double(interval[i], "crossValidationInterval");
    if (d != std::floor(d) || d < 0) throw ValueError("cv: crossValidationInterval must hold whole numbers >= 0");
    bounds[i] = (long long)d;
  }
  if (bounds[1] <= 0) throw ValueError("cv: the step of crossValidationInterval must be positive");
  const double pause = c.get_double("sleepTimeBetweenRuns", 0);
  std::vector<std::string> models;
  std::vector<std::vector<std::pair<std::string, double>>> results;
  bool final_model_evaluated = false;
  for (long long n = bounds[0]; n <= bounds[2]; n += bounds[1]) {
    std::string path = model_path + "." + std::to_string(n);
    if (!fs::exists(path)) {
      std::fprintf(stderr, "Model %s does not exist.\n", path.c_str());
      if (final_model_evaluated || !fs::exists(model_path)) continue;
      path = model_path;
      final_model_evaluated = true;
    }
    std::fprintf(stderr, "Model %s --> \n", path.c_str());
    ActionContext one = ctx;
    one.config = ConfigRecord::parse("modelPath = \"" + path + "\"", c.name(), ctx.config);
    results.push_back(final_results([&] { test(one); }));
    models.push_back(path);
    if (pause > 0) usleep(useconds_t(pause * 1e6));
  }
  if (models.empty()) throw ValueError("cv: no model was evaluated (none of the models of modelPath exists)");
  std::fprintf(stderr, "Best models:\n------------\n");
  for (size_t k = 0; k < results[0].size(); ++k) {
    size_t best = 0;
    for (size_t i = 1; i < results.size(); ++i)
      if (k < results[i].size() && results[i][k].second < results[best][k].second) best = i;
    std::fprintf(stderr, "Based on Err[%zu]: Best model = %s with min err %.8g\n", k, models[best].c_str(),
                 results[best][k].second);
  }
}

// ---------------------------------------------------------------------------------------------
// bnstat

// bnstat (CNTK's DoBatchNormalizationStat): the running mean and variance of each
// BatchNormalization node of modelPath, bottom-up, become the average over itersPerNode
// minibatches (minibatchSize) of the statistics of its input, computed in training mode with the
// nodes below it already fixed; the model is written to newModelPath (default modelPath.PBN).
void batch_norm_statistics(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  const std::string model_path = c.get("modelPath");
  std::string output = c.get("newModelPath", "");
  if (output.empty()) output = model_path + ".PBN";
  const long long iters = c.get_int("itersPerNode", 30);
  const double mb_size = config_to_double(c.get_array("minibatchSize", {"40960"})[0], "minibatchSize");
  if (iters <= 0 || mb_size < 1) throw ValueError("bnstat: itersPerNode and minibatchSize must be positive");
  if (!fs::exists(model_path)) throw IOError("model file '" + model_path + "' does not exist");
  FunctionPtr model = load_function(model_path);
  std::vector<FunctionPtr> nodes;
  for (const auto& f : model->topological_order())
    if (f->op_name() == "BatchNormalization") nodes.push_back(f);
  if (nodes.empty()) throw ValueError("bnstat: the model '" + model_path + "' has no BatchNormalization node");
  const std::vector<Variable> inputs = model->arguments();
  Reader reader = make_reader(c, inputs, /*randomize_default=*/true, io::kInfinitelyRepeat);
  std::vector<Dictionary> attributes;
  std::vector<NDArrayView> counts;
  constexpr size_t kRunMean = 3, kRunCount = 5;  // BatchNormalization's inputs (src/ops/norm.cpp)
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& bn : nodes) {
    Log::printf("Estimating Statistics --> %s\n", bn->name().c_str());
    attributes.push_back(bn->attributes());
    std::vector<Variable> in = bn->inputs();
    for (size_t i = kRunMean; i <= kRunCount; ++i) in[i].set_value(NDArrayView::zeros(in[i].dtype(), in[i].shape()));
    // A negative time constant averages over all the minibatches seen (CNTK's setting here).
    bn->mutable_attributes()["normalizationTimeConstant"] = DictValue(-1.0);
    bn->mutable_attributes()["blendTimeConstant"] = DictValue(0.0);
    for (long long k = 0; k < iters; ++k) {
      const io::Minibatch mb = reader.source->next_minibatch(size_t(mb_size));
      if (mb.empty()) throw ValueError("bnstat: the reader ran out of data");
      std::vector<cntk::Value> outs;
      forward(model, arguments_for(*reader.source, mb, inputs), {bn->output()}, outs, /*keep_for_backward=*/true);
    }
    // Fixed for the nodes above: normalizing with these statistics only, no longer updating them.
    bn->mutable_attributes()["normalizationTimeConstant"] = DictValue(inf);
    bn->mutable_attributes()["blendTimeConstant"] = DictValue(inf);
    counts.push_back(in[kRunCount].value().copy());
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i]->mutable_attributes() = attributes[i];
    nodes[i]->inputs()[kRunCount].set_value(counts[i]);
  }
  if (fs::path(output).has_parent_path()) fs::create_directories(fs::path(output).parent_path());
  save_as_legacy_model(model, output);
  Log::printf("bnstat: model with re-estimated statistics saved as '%s'\n", output.c_str());
}

// ---------------------------------------------------------------------------------------------
// edit

// A node name pattern with at most one `*`, as MEL's wildcards (`L*.W`).
struct NamePattern {
  std::string prefix, suffix;
  bool wildcard = false;
  explicit NamePattern(const std::string& p) {
    const size_t star = p.find('*');
    wildcard = star != std::string::npos;
    prefix = p.substr(0, star);
    if (wildcard) {
      suffix = p.substr(star + 1);
      if (suffix.find('*') != std::string::npos) throw NotImplementedError("MEL: names with two '*' ('" + p + "')");
    }
  }
  // The part `*` matched, or nullopt.
  std::optional<std::string> match(const std::string& name) const {
    if (!wildcard) return name == prefix ? std::optional<std::string>("") : std::nullopt;
    if (name.size() < prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      return std::nullopt;
    return name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  }
};

// A model's node groups (CNTK's feature, label, criterion, evaluation and output nodes) by node
// name: what a v1 file keeps beside the nodes, and what SetProperty's role properties change.
struct NodeRoles {
  std::vector<std::string> feature, label, criterion, evaluation, output;
  std::vector<std::string>* group(const std::string& role) {
    if (role == "feature") return &feature;
    if (role == "label") return &label;
    if (role == "criterion") return &criterion;
    if (role == "evaluation") return &evaluation;
    if (role == "output") return &output;
    return nullptr;
  }
};

// A v1 node name as the engine names the node: files OpenCNTK writes carry the uid in the name.
std::string v1_plain_name(const std::string& name) { return v1::uid_and_name(name).second; }

// The groups of a graph without any recorded: its inputs are features, its roots outputs.
NodeRoles roles_of_graph(const FunctionPtr& m) {
  NodeRoles r;
  for (const auto& a : m->arguments()) r.feature.push_back(a.name());
  for (const auto& o : m->outputs())
    if (o.owner()) r.output.push_back(o.owner()->name());
  return r;
}

// The groups of a network that lists them (a v1 file's Network, or the BrainScript builders'),
// each member named by `name`.
template <class Groups, class Name>
NodeRoles roles_of(const Groups& g, Name name) {
  NodeRoles r;
  auto names = [&name](const auto& group, std::vector<std::string>& out) {
    for (const auto& member : group) out.push_back(name(member));
  };
  names(g.features, r.feature);
  names(g.labels, r.label);
  names(g.criteria, r.criterion);
  names(g.evaluations, r.evaluation);
  names(g.outputs, r.output);
  return r;
}

NodeRoles roles_of_network(const Network& net) {
  return roles_of(net, [](const Variable& v) { return v.owner() ? v.owner()->name() : v.name(); });
}

// The v1 bytes of `m` with `roles` as its node groups (names no node has any more are dropped).
std::string legacy_model_bytes(const FunctionPtr& m, const NodeRoles& roles) {
  v1::Network net = v1::network_from_function(m);
  std::map<std::string, std::string> by_name;  // the engine's name -> the file's node name
  for (const auto& [key, node] : net.nodes) by_name.emplace(v1_plain_name(node.name), node.name);
  auto fill = [&](const std::vector<std::string>& names, std::vector<std::string>& group) {
    group.clear();
    for (const auto& n : names)
      if (auto it = by_name.find(n);
          it != by_name.end() && std::find(group.begin(), group.end(), it->second) == group.end())
        group.push_back(it->second);
  };
  fill(roles.feature, net.features);
  fill(roles.label, net.labels);
  fill(roles.criterion, net.criteria);
  fill(roles.evaluation, net.evaluations);
  fill(roles.output, net.outputs);
  return v1::write_network(net);
}

// MEL over the engine's graphs: models by name (the last loaded is the default), node names
// as the v1 files name them, and each model's node groups (kept from its v1 file, written back
// by SaveModel). LoadModel, LoadModelWithName, LoadNDLSnippet, SaveModel, SaveDefaultModel,
// SetDefaultModel, UnloadModel, Dump (values always included), Rename, SetProperty,
// SetNodeInput, SetNodeInputs, Copy, CopySubTree, Remove; CNTK's other MEL functions and in-line
// NDL raise NotImplementedError.
class MelSession {
 public:
  // `script`: the script's text ($var$s resolved), where in-line NDL errors point.
  MelSession(std::shared_ptr<const SourceFile> script, std::shared_ptr<const ConfigRecord> config)
      : path_(script->path), script_(std::move(script)), config_(std::move(config)) {}

  void run(const MelCall& c) {
    if (c.function.empty()) return inline_ndl(c);
    const std::string fn = mel_function_name(c.function);
    // `name = F(...)` returns a value for CreateModel and LoadModel only (the model's name); with
    // any other function the statement is in-line NDL, as CNTK read it.
    if (!c.result.empty()) {
      if (fn != "CreateModel" && fn != "LoadModel") return inline_ndl(c);
      MelCall named = c;
      named.function = fn + "WithName";
      named.args.insert(named.args.begin(), c.result);
      named.result.clear();
      return run(named);
    }
    if (fn.empty()) throw ValueError(where(c) + "unknown MEL function '" + c.function + "'");
    auto need = [&](size_t lo, size_t hi) {
      if (c.args.size() < lo || c.args.size() > hi)
        throw ValueError(where(c) + fn + " takes " + std::to_string(lo) + (hi > lo ? " to " + std::to_string(hi) : "") +
                         " parameters");
    };
    if (fn == "CreateModel" || fn == "CreateModelWithName") {
      // CNTK 2.7's CreateModel() made the model and then failed as an unknown function (its
      // dispatch fell through); here both forms make an empty model, the new default.
      const bool named = fn == "CreateModelWithName";
      need(named ? 1 : 0, named ? 1 : 0);
      add_model(named ? c.args[0] : "default", nullptr, NodeRoles());
    } else if (fn == "LoadModel" || fn == "LoadModelWithName") {
      const bool named = fn == "LoadModelWithName";
      need(named ? 2 : 1, named ? 2 : 1);
      check_options(c, {"format"});
      const std::string file = c.args[named ? 1 : 0];
      if (!fs::exists(file)) throw IOError(where(c) + "model file '" + file + "' does not exist");
      const FunctionPtr m = load_function(file);
      add_model(named ? c.args[0] : "default", m, recorded_roles(file, m));
    } else if (fn == "LoadNDLSnippet") {
      need(2, 3);
      load_ndl_snippet(c);
    } else if (fn == "SaveModel" || fn == "SaveDefaultModel") {
      const bool by_name = fn == "SaveModel";
      need(by_name ? 2 : 1, by_name ? 2 : 1);
      check_options(c, {"format"});
      const std::string file = c.args[by_name ? 1 : 0];
      FunctionPtr m = model(by_name ? c.args[0] : default_, c);
      if (fs::path(file).has_parent_path()) fs::create_directories(fs::path(file).parent_path());
      // CNTK's SaveModel wrote its own (v1) format, the node groups included.
      write_file_atomically(file, legacy_model_bytes(m, roles_for(by_name ? c.args[0] : default_, m)));
    } else if (fn == "SetDefaultModel") {
      need(1, 1);
      if (!models_.count(c.args[0])) throw ValueError(where(c) + "no model named '" + c.args[0] + "'");
      default_ = c.args[0];
    } else if (fn == "UnloadModel") {
      for (const auto& name : c.args) {
        if (!models_.erase(name)) Log::printf("WARNING: model %s does not exist.\n", name.c_str());
        roles_.erase(name);
        if (same_name(default_, name)) default_.clear();
      }
    } else if (fn == "Rename") {
      need(2, 2);
      rename(c);
    } else if (fn == "DumpModel" || fn == "DumpNode") {
      need(2, 2);
      dump(c, fn == "DumpNode");
    } else if (fn == "SetProperty") {
      need(3, 3);
      set_property(c);
    } else if (fn == "SetPropertyForSubTree") {
      need(3, 3);
      set_property_for_subtree(c);
    } else if (fn == "SetNodeInput") {
      need(3, 3);
      set_input(c);
    } else if (fn == "SetNodeInputs") {
      need(2, 4);
      set_inputs(c);
    } else if (fn == "CopyNodeInputs") {
      need(2, 2);
      copy_inputs(c);
    } else if (fn == "CopySubTree") {
      need(3, 3);
      copy_subtree(c);
    } else if (fn == "CopyNode") {
      need(2, 2);
      copy(c);
    } else if (fn == "ReviseParameter") {
      need(2, 2);
      revise_parameter(c);
    } else if (fn == "RemoveNode" || fn == "DeleteNode") {
      need(1, 1000);
      for (const auto& name : c.args) remove(name, c);
    } else {
      throw NotImplementedError(where(c) + "the MEL function " + fn + " is not implemented yet");
    }
  }

 private:
  std::string path_;
  std::shared_ptr<const SourceFile> script_;
  std::shared_ptr<const ConfigRecord> config_;  // the edit command's (for $var$, ndlMacros and precision in NDL)
  std::map<std::string, InlineNdlStatement, v1::NoCaseLess> constants_;  // in-line `name = value` statements
  std::map<std::string, FunctionPtr, v1::NoCaseLess> models_;            // nullptr: made by CreateModel, no nodes yet
  std::map<std::string, NodeRoles, v1::NoCaseLess> roles_;
  std::string default_;
  std::map<std::string, Variable> known_;  // every node seen by name (see node_named)

  std::string where(const MelCall& c) const { return path_ + "(" + std::to_string(c.line) + "): "; }

  static bool same_name(const std::string& a, const std::string& b) {
    return !v1::NoCaseLess()(a, b) && !v1::NoCaseLess()(b, a);
  }

  // A model joins the session under `name` (replacing one of that name), and becomes the
  // default when there is none: CNTK kept the first model loaded as the default until
  // SetDefaultModel (its messages say the newest is; its code did not).
  void add_model(const std::string& name, const FunctionPtr& m, NodeRoles roles) {
    if (models_.count(name)) {
      Log::printf("WARNING: conflicting model name %s. Deleting the old model with the same name.\n", name.c_str());
      if (same_name(default_, name)) default_.clear();
    }
    models_[name] = m;
    roles_[name] = std::move(roles);
    if (m) remember(m);
    if (default_.empty()) default_ = name;
  }

  // The key=value options a function takes (CNTK's names, compared as MEL compares names).
  void check_options(const MelCall& c, const std::vector<std::string>& known) const {
    for (const auto& [key, value] : c.options)
      if (std::none_of(known.begin(), known.end(), [&](const std::string& k) { return mel_name_is(key, k); }))
        throw ValueError(where(c) + c.function + ": unknown option '" + key + "'");
  }

  NodeRoles roles_for(const std::string& name, const FunctionPtr& m) const {
    auto it = roles_.find(name);
    return it == roles_.end() ? roles_of_graph(m) : it->second;
  }

  // The node groups a v1 file records (by the engine's node names), else the graph's.
  static NodeRoles recorded_roles(const std::string& file, const FunctionPtr& m) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    if (!is_legacy_model(bytes.str())) return roles_of_graph(m);
    return roles_of(v1::read_network(bytes.str(), file), v1_plain_name);
  }

  // LoadNDLSnippet(model, file[, section=name]): a model built from an NDL file (the NDL
  // reader's: a file of NDL statements and macros, or a config whose run= names the sections;
  // `section` picks one, also given as a third parameter). The edit command's config serves the
  // file's $variables$ and precision.
  void load_ndl_snippet(const MelCall& c) {
    check_options(c, {"section"});
    const std::string& name = c.args[0];
    const std::string& file = c.args[1];
    if (!fs::exists(file)) throw IOError(where(c) + "NDL file '" + file + "' does not exist");
    auto quote = [](const std::string& v) { return v.find('"') == std::string::npos ? '"' + v + '"' : "'" + v + "'"; };
    std::string text = "NDLNetworkBuilder = [ networkDescription = " + quote(file);
    std::string section = c.args.size() == 3 ? c.args[2] : "";
    for (const auto& [key, value] : c.options) section = value;  // the one option checked above
    if (!section.empty()) {
      std::ifstream in(file);
      std::stringstream ndl;
      ndl << in.rdbuf();
      std::shared_ptr<ConfigRecord> sections;
      try {
        sections = ConfigRecord::parse(ndl.str(), file, config_);
      } catch (const ValueError&) {
      }
      if (!sections || !sections->exists_here(section))
        throw ValueError(where(c) + "LoadNDLSnippet: the NDL file '" + file + "' has no section '" + section + "'");
      text += " ; run = " + quote(section);
    }
    text += " ]";
    const auto builder = ConfigRecord::parse(text, path_, config_);
    const Network net = build_ndl_network(*builder);
    add_model(name, net.model, roles_of_network(net));
  }

  FunctionPtr model(const std::string& name, const MelCall& c) const {
    auto it = models_.find(name);
    if (it == models_.end())
      throw ValueError(where(c) + (name.empty() ? std::string("no model is loaded") : "no model named '" + name + "'"));
    if (!it->second)
      throw ValueError(where(c) + "the model '" + name + "' has no nodes yet (give it outputs with SetProperty)");
    return it->second;
  }

  // A node pattern's model (a leading `model.` picks it, else the default one) and the rest.
  std::pair<std::string, std::string> split_model(const std::string& name) const {
    const size_t dot = name.find('.');
    if (dot != std::string::npos && models_.count(name.substr(0, dot)))
      return {name.substr(0, dot), name.substr(dot + 1)};
    return {default_, name};
  }

  // In-line NDL: `name = value` and `name = Function(...)` (an NDL function or macro of the
  // edit command's ndlMacros) make nodes of the default model, which may read its nodes by
  // name; the nodes join the model once a node of it reads them (SetNodeInput) or SetProperty
  // makes one an output. A number or string is a constant later statements may use.
  // `name = [ NDL ]` is a model of its own, built as LoadNDLSnippet builds one.
  void inline_ndl(const MelCall& c) {
    const std::string value = mel_trim(c.text.substr(c.text.find('=') + 1));
    if (!value.empty() && value[0] == '[') {
      const auto builder =
          ConfigRecord::parse("NDLNetworkBuilder = [ run = __model ]\n__model = " + value, path_, config_);
      const Network net = build_ndl_network(*builder);
      return add_model(c.result, net.model, roles_of_network(net));
    }
    if (default_.empty() || !models_.count(default_))
      throw ValueError(where(c) + "in-line NDL ('" + c.text + "') needs a default model: SetDefaultModel(model) first");
    if (const FunctionPtr& m = models_.at(default_)) remember(m);  // its nodes as they are now win
    std::vector<InlineNdlStatement> statements;
    for (const auto& [name, st] : constants_)
      if (!same_name(name, c.result)) statements.push_back(st);
    statements.push_back({c.text, c.line - 1});
    const std::map<std::string, Variable> made = build_inline_ndl(config_, script_, statements, known_);
    if (made.empty()) {
      constants_[c.result] = statements.back();
      return;
    }
    for (const auto& [name, node] : made) known_[name] = node;
  }

  // ReviseParameter(nodes, file): each parameter the name matches takes its values from the
  // text matrix in `file` (CNTK's format, as initFromFilePath reads it), in its own shape; a
  // node that is not a parameter is passed over with a warning, as CNTK did.
  void revise_parameter(const MelCall& c) {
    const auto [model_name, pattern_text] = split_model(c.args[0]);
    const FunctionPtr m = model(model_name, c);
    const NamePattern pattern(pattern_text);
    size_t matched = 0;
    auto skip = [&](const std::string& name, const std::string& kind) {
      ++matched;
      Log::printf(
          "WARNING: you want to change the parameter of node (%s), but it is not a learnable parameter (it "
          "is a %s node). Skipping this node\n",
          name.c_str(), kind.c_str());
    };
    for (const auto& f : m->topological_order())
      if (f->op_name() != "Combine" && pattern.match(f->name())) skip(f->name(), f->op_name());
    for (Variable leaf : m->inputs()) {
      if (!pattern.match(leaf.name())) continue;
      if (!leaf.is_parameter() && !leaf.is_constant()) {
        skip(leaf.name(), "InputValue");
        continue;
      }
      ++matched;
      std::vector<size_t> dims(leaf.shape().dims().rbegin(), leaf.shape().dims().rend());  // BrainScript's order
      try {
        leaf.set_value(detail::parameter_from_matrix(dims, detail::read_text_matrix(c.args[1]), "'" + c.args[1] + "'",
                                                     leaf.dtype()));
      } catch (const Error& e) {
        throw ValueError(where(c) + "ReviseParameter: '" + leaf.name() + "' cannot be read from '" + c.args[1] +
                         "': " + e.what());
      }
      Log::printf("Revise node %s using parameter file %s\n", leaf.name().c_str(), c.args[1].c_str());
    }
    if (!matched) throw ValueError(where(c) + "ReviseParameter: no node named '" + c.args[0] + "'");
  }

  // DumpModel/Dump(model, file[, includeData=false]) writes every node of the model as CNTK's
  // DumpNodeInfo (values with includeData); DumpNode(nodes, file[, includeData=false]) the
  // nodes the name (one `*`, a leading `model.`) matches.
  void dump(const MelCall& c, bool nodes) {
    check_options(c, {"includeData"});
    LegacyDumpOptions options;
    for (const auto& [key, value] : c.options) options.values = config_to_bool(value, key);
    if (!c.options.count("includedata")) options.values = false;
    std::string model_name = c.args[0];
    std::optional<NamePattern> pattern;
    if (nodes) {
      std::string pattern_text;
      std::tie(model_name, pattern_text) = split_model(c.args[0]);
      pattern.emplace(pattern_text);
      options.select = [&](const std::string& n) { return pattern->match(v1_plain_name(n)).has_value(); };
    }
    const FunctionPtr m = model(model_name, c);
    std::ofstream out(c.args[1]);
    out << dump_legacy_model(legacy_model_bytes(m, roles_for(model_name, m)), model_name, options);
    if (!out) throw IOError(where(c) + "cannot write '" + c.args[1] + "'");
  }

  // The parameters and constants of `m` that `select` picks become parameters (`learned`) or
  // constants of the same value and name.
  void set_learned(const std::string& model_name, const FunctionPtr& m,
                   const std::function<bool(const Variable&)>& select, bool learned) {
    std::unordered_map<VariableImpl*, Variable> replaced;
    for (const auto& leaf : m->inputs()) {
      if (!(leaf.is_parameter() || leaf.is_constant()) || leaf.is_parameter() == learned || !select(leaf)) continue;
      replaced[leaf.get()] =
          learned ? Variable::parameter(leaf.shape(), leaf.dtype(), leaf.value().copy(), nullptr, leaf.name())
                  : Variable::constant(leaf.value().copy(), leaf.name());
    }
    if (!replaced.empty()) models_[model_name] = m->clone(CloneMethod::Share, replaced);
  }

  // needGradient / computeGradient (a boolean) or learningRateMultiplier (0 or 1) as whether
  // parameters are learned. Other multipliers raise NotImplementedError: the engine's
  // parameters are learned at the learner's rate or not at all.
  bool learned_value(const MelCall& c, const std::string& property) const {
    if (mel_name_is(property, "needGradient", "needsGradient") || mel_name_is(property, "computeGradient"))
      return config_to_bool(c.args[2], c.args[1]);
    const double m = config_to_double(c.args[2], c.args[1]);
    if (m != 0 && m != 1)
      throw NotImplementedError(where(c) + c.function + ": a learningRateMultiplier other than 0 or 1");
    return m == 1;
  }

  // SetPropertyForSubTree(node, needGradient | computeGradient | learningRateMultiplier, value):
  // every parameter below the node (and the node, if it is one) is learned or fixed.
  void set_property_for_subtree(const MelCall& c) {
    const std::string& property = c.args[1];
    if (!mel_name_is(property, "needGradient", "needsGradient") && !mel_name_is(property, "computeGradient") &&
        !mel_name_is(property, "learningRateMultiplier"))
      throw ValueError(where(c) + "SetPropertyForSubTree: the property '" + property +
                       "' is not one of needGradient, computeGradient, learningRateMultiplier");
    const bool learned = learned_value(c, property);
    const auto [model_name, pattern_text] = split_model(c.args[0]);
    FunctionPtr m = model(model_name, c);
    const NamePattern pattern(pattern_text);
    std::unordered_set<VariableImpl*> below;
    for (const auto& f : m->topological_order())
      if (pattern.match(f->name()))
        for (const auto& leaf : Function::combine({f->output()})->inputs()) below.insert(leaf.get());
    for (const auto& leaf : m->inputs())
      if (pattern.match(leaf.name())) below.insert(leaf.get());
    if (below.empty()) throw ValueError(where(c) + "SetPropertyForSubTree: no node named '" + c.args[0] + "'");
    set_learned(
        model_name, m, [&](const Variable& leaf) { return below.count(leaf.get()) > 0; }, learned);
  }

  // SetProperty(nodes, needGradient | computeGradient | learningRateMultiplier, value): a
  // parameter that is not to be learned becomes a constant of the same value and name, and the
  // reverse. CNTK's other properties (node roles, recurrent, freezeParameters) and other
  // multipliers than 0 and 1 raise NotImplementedError.
  void set_property(const MelCall& c) {
    // The property names in CNTK's order of trying (which decides what a prefix means), with
    // what each sets.
    static const std::tuple<const char*, const char*, const char*> properties[] = {
        {"finalCriterion", "Criteria", "criterion"},
        {"eval", "", "evaluation"},
        {"needGradient", "needsGradient", "learned"},
        {"computeGradient", "", "learned"},
        {"criterion", "", "criterion"},
        {"evaluation", "", "evaluation"},
        {"feature", "", "feature"},
        {"label", "", "label"},
        {"learningRateMultiplier", "", "learned"},
        {"output", "", "output"},
        {"recurrent", "", "recurrent"},
        {"freezeParameters", "", "freeze"}};
    std::string what;
    for (const auto& [name, alternate, sets] : properties)
      if (mel_name_is(c.args[1], name, alternate)) {
        what = sets;
        break;
      }
    if (what.empty()) throw ValueError(where(c) + "SetProperty: unknown property '" + c.args[1] + "'");
    if (what == "recurrent") return;  // CNTK accepted it and did nothing: loops are found from the graph
    if (what == "freeze") return freeze(c);
    if (what != "learned") return set_role(c, what);
    const bool learned = learned_value(c, c.args[1]);
    const auto [model_name, pattern_text] = split_model(c.args[0]);
    const NamePattern pattern(pattern_text);
    set_learned(
        model_name, model(model_name, c), [&](const Variable& leaf) { return pattern.match(leaf.name()).has_value(); },
        learned);
  }

  // SetProperty(nodes, freezeParameters, true): a parameter is learned no more, and a batch
  // normalization keeps its running statistics (normalizing with them, as in inference). Other
  // nodes cannot be frozen; false changes nothing, as in CNTK.
  void freeze(const MelCall& c) {
    if (!config_to_bool(c.args[2], c.args[1])) return;
    const auto [model_name, pattern_text] = split_model(c.args[0]);
    FunctionPtr m = model(model_name, c);
    const NamePattern pattern(pattern_text);
    for (const auto& f : m->topological_order()) {
      if (!pattern.match(f->name())) continue;
      if (f->op_name() != "BatchNormalization")
        throw ValueError(where(c) + "SetProperty: " + f->name() + " (" + f->op_name() + ") cannot be frozen");
      const double inf = std::numeric_limits<double>::infinity();
      f->mutable_attributes()["normalizationTimeConstant"] = DictValue(inf);
      f->mutable_attributes()["blendTimeConstant"] = DictValue(inf);
    }
    set_learned(
        model_name, m, [&](const Variable& leaf) { return pattern.match(leaf.name()).has_value(); }, false);
  }

  // SetProperty(nodes, feature | label | criterion (finalCriterion, criteria) | evaluation (eval) |
  // output, true | false): the nodes join or leave that group of the model. Features and labels
  // are inputs; the other groups hold computed nodes, and a node that joins one becomes a root of
  // the model if it was not (so that it is evaluated and saved). A root that leaves its group
  // stays in the model, as CNTK kept every node of a network.
  void set_role(const MelCall& c, const std::string& role) {
    const bool set = config_to_bool(c.args[2], c.args[1]);
    const auto [model_name, pattern_text] = split_model(c.args[0]);
    FunctionPtr m = model(model_name, c);
    const NamePattern pattern(pattern_text);
    const bool input_role = role == "feature" || role == "label";
    // Features and labels are inputs; the other groups hold computed nodes. Nodes of the other
    // kind that a wildcard matches are passed over.
    std::vector<Variable> nodes;
    std::string other;  // a matched node of the wrong kind
    for (const auto& leaf : m->inputs())
      if (pattern.match(leaf.name())) {
        if (input_role && leaf.is_input())
          nodes.push_back(leaf);
        else
          other = leaf.name();
      }
    for (const auto& f : m->topological_order()) {
      if (!pattern.match(f->name()) || f->op_name() == "Combine") continue;
      if (input_role) {
        other = f->name();
      } else if (f->outputs().size() != 1) {
        throw NotImplementedError(where(c) + "SetProperty: a node of several outputs ('" + f->name() + "')");
      } else {
        nodes.push_back(f->output());
      }
    }
    // A copy (Copy, CopySubTree) that no node of the model reads yet joins it this way.
    if (nodes.empty() && other.empty() && !pattern.wildcard)
      if (auto it = known_.find(pattern_text); it != known_.end()) {
        if (input_role ? it->second.is_input() : it->second.is_output())
          nodes.push_back(it->second);
        else
          other = pattern_text;
      }
    if (nodes.empty() && !other.empty())
      throw ValueError(where(c) + "SetProperty: '" + other + "' cannot be " +
                       (role == "output" || role == "evaluation" ? "an " : "a ") + role +
                       (input_role ? " node: it is not an input" : " node: it is not a computed node"));
    if (nodes.empty()) throw ValueError(where(c) + "SetProperty: no node named '" + c.args[0] + "'");
    if (!roles_.count(model_name)) roles_[model_name] = roles_of_graph(m);
    NodeRoles& r = roles_[model_name];
    std::vector<std::string>& group = *r.group(role);
    std::vector<Variable> outputs = m->outputs();
    bool grown = false;
    for (const auto& v : nodes) {
      const std::string name = v.owner() ? v.owner()->name() : v.name();
      auto at = std::find(group.begin(), group.end(), name);
      if (!set) {
        if (at != group.end()) group.erase(at);
        continue;
      }
      if (at == group.end()) group.push_back(name);
      if (!input_role &&
          std::none_of(outputs.begin(), outputs.end(), [&](const Variable& o) { return o.get() == v.get(); })) {
        outputs.push_back(v);
        grown = true;
      }
    }
    if (grown) models_[model_name] = Function::combine(outputs);
  }

  // Whether CNTK lists the node's operands the other way round from the engine (Times: CNTK's
  // Times(W, x) is the engine's times(x, W)); MEL's input indices and lists are CNTK's.
  static bool swaps_operands(const FunctionPtr& f) {
    const OpDef* def = find_op(f->op_name());
    return def && def->cntk_swaps_operands && f->inputs().size() == 2;
  }

  // The nodes a name pattern matches: the model's, or else (copies no node of the model reads
  // yet) the session's nodes of that name.
  std::vector<FunctionPtr> matching_nodes(const FunctionPtr& m, const NamePattern& pattern) const {
    std::vector<FunctionPtr> out;
    for (const auto& f : m->topological_order())
      if (f->op_name() != "Combine" && pattern.match(f->name())) out.push_back(f);
    if (!out.empty()) return out;
    for (const auto& [name, v] : known_)
      if (v.is_output() && pattern.match(name)) out.push_back(v.owner());
    return out;
  }

  // The node named `name` made anew with `inputs` (the engine's functions do not change once
  // made): in the model, with the graph above it cloned onto the new node, or else among the
  // session's nodes. Returns the model.
  FunctionPtr with_inputs(const FunctionPtr& m, const std::string& name, const std::vector<Variable>& inputs,
                          const MelCall& c) {
    const FunctionPtr f = node_function(m, name);
    if (f->is_block() || f->user_backend())
      throw NotImplementedError(where(c) + c.function + " of a block or user function ('" + f->name() + "')");
    const FunctionPtr made = Function::primitive(f->op_name(), inputs, f->attributes(), name);
    if (m->find_all_with_name(name).empty()) {
      known_[name] = made->output();
      return m;
    }
    return m->clone(CloneMethod::Share, {{f->output().get(), made->output()}});
  }

  // The node named `name`, in the model or among the session's nodes.
  FunctionPtr node_function(const FunctionPtr& m, const std::string& name) const {
    const auto in_model = m->find_all_with_name(name);
    return in_model.empty() ? known_.at(name).owner() : in_model[0];
  }

  // SetNodeInputs(node, input1[, input2, input3]): all inputs of one node at once (as many as
  // its operation takes), made anew as SetNodeInput makes it.
  void set_inputs(const MelCall& c) {
    const auto [model_name, pattern_text] = split_model(c.args[0]);
    FunctionPtr m = model(model_name, c);
    const std::vector<FunctionPtr> targets = matching_nodes(m, NamePattern(pattern_text));
    if (targets.size() != 1)
      throw ValueError(where(c) + "SetNodeInputs: '" + c.args[0] + "' must name exactly one node, it names " +
                       std::to_string(targets.size()));
    std::vector<Variable> inputs;
    for (size_t i = 1; i < c.args.size(); ++i) inputs.push_back(node_named(m, split_model(c.args[i]).second, c));
    const FunctionPtr& f = targets[0];
    if (swaps_operands(f)) std::reverse(inputs.begin(), inputs.end());
    if (inputs.size() != f->inputs().size())
      throw ValueError(where(c) + "SetNodeInputs: '" + f->name() + "' (" + f->op_name() + ") takes " +
                       std::to_string(f->inputs().size()) + " inputs, " + std::to_string(inputs.size()) + " given");
    models_[model_name] = with_inputs(m, f->name(), inputs, c);
  }

  // CopyNodeInputs/CopyInputs(from, to): node `to` reads the inputs `from` reads (one `*` in both
  // names pairs nodes up), made anew as SetNodeInputs makes it; both in one model.
  void copy_inputs(const MelCall& c) {
    const auto [model_name, from] = split_model(c.args[0]);
    const auto [to_model, to] = split_model(c.args[1]);
    if (!same_name(model_name, to_model))
      throw ValueError(where(c) + "CopyNodeInputs: '" + c.args[0] + "' and '" + c.args[1] +
                       "' belong to different models");
    FunctionPtr m = model(model_name, c);
    const NamePattern pattern(from), target(to);
    if (pattern.wildcard != target.wildcard)
      throw ValueError(where(c) + "CopyNodeInputs: both names or neither must hold a '*'");
    std::vector<std::pair<std::string, std::string>> pairs;
    for (const auto& f : matching_nodes(m, pattern))
      pairs.emplace_back(f->name(), target.prefix + *pattern.match(f->name()) + target.suffix);
    if (pairs.empty()) throw ValueError(where(c) + "CopyNodeInputs: no node named '" + c.args[0] + "'");
    for (const auto& [source, dest] : pairs) {
      if (m->find_all_with_name(dest).empty() && !(known_.count(dest) && known_.at(dest).is_output()))
        throw ValueError(where(c) + "CopyNodeInputs: no node named '" + dest + "'");
      m = with_inputs(m, dest, node_function(m, source)->inputs(), c);
    }
    models_[model_name] = m;
  }

  // CopySubTree(node, toModel, prefix[, copy=all]): copies of the node and of every node below
  // it (computed nodes, parameters and constants with their values, inputs as new inputs of the
  // same kind), each named prefix + its name, reading the copies. As with Copy, the copy joins
  // `toModel` once a node of it reads the copy (SetNodeInput) or SetProperty makes it an output.
  void copy_subtree(const MelCall& c) {
    if (c.options.count("copy") && c.options.at("copy") != "all")
      throw NotImplementedError(where(c) + "CopySubTree: copy=" + c.options.at("copy") + " is not implemented yet");
    const auto [model_name, from] = split_model(c.args[0]);
    FunctionPtr m = model(model_name, c);
    model(c.args[1], c);  // the target must be a loaded model
    const std::string& prefix = c.args[2];
    const NamePattern pattern(from);
    std::vector<FunctionPtr> roots;
    for (const auto& f : m->topological_order())
      if (pattern.match(f->name())) roots.push_back(f);
    if (roots.empty()) throw ValueError(where(c) + "CopySubTree: no node named '" + c.args[0] + "'");
    std::unordered_map<VariableImpl*, Variable> copies;
    for (const auto& root : roots) {
      for (const auto& f : Function::combine({root->output()})->topological_order()) {
        if (f->op_name() == "Combine") continue;
        if (f->is_block() || f->user_backend())
          throw NotImplementedError(where(c) + "CopySubTree of a block or user function ('" + f->name() + "')");
        if (f->outputs().size() != 1)
          throw NotImplementedError(where(c) + "CopySubTree of a node of several outputs ('" + f->name() + "')");
        if (copies.count(f->output().get())) continue;  // below an earlier root too
        std::vector<Variable> ins = f->inputs();
        for (auto& in : ins) {
          if (auto it = copies.find(in.get()); it != copies.end()) {
            in = it->second;
            continue;
          }
          if (in.is_output())  // outputs below the root are copied before the nodes that read them
            throw NotImplementedError(where(c) + "CopySubTree: '" + in.name() + "' is not a node of the model");
          const std::string name = prefix + in.name();
          Variable copy;
          if (in.is_parameter())
            copy = Variable::parameter(in.shape(), in.dtype(), in.value().copy(), nullptr, name);
          else if (in.is_constant())
            copy = Variable::constant(in.value().copy(), name);
          else if (in.is_input())
            copy =
                Variable::input(in.shape(), in.dtype(), in.is_sparse(), in.needs_gradient(), in.dynamic_axes(), name);
          else
            throw NotImplementedError(where(c) + "CopySubTree of a placeholder ('" + in.name() + "')");
          known_[name] = copies[in.get()] = copy;
          in = copy;
        }
        const std::string name = prefix + f->name();
        known_[name] = copies[f->output().get()] =
            Function::primitive(f->op_name(), ins, f->attributes(), name)->output();
      }
    }
  }

  // SetNodeInput(nodes, index, input): input `index` of each node (in CNTK's order of its inputs)
  // becomes the node or leaf named `input`. The engine's functions do not change once made, so
  // the node is made anew and the graph above it cloned onto it, its parameters shared.
  void set_input(const MelCall& c) {
    const auto [model_name, pattern_text] = split_model(c.args[0]);
    const double index = config_to_double(c.args[1], "SetNodeInput index");
    if (index < 0 || index != std::floor(index)) throw ValueError(where(c) + "SetNodeInput: bad input index");
    FunctionPtr m = model(model_name, c);
    const Variable input = node_named(m, split_model(c.args[2]).second, c);
    std::vector<std::string> names;
    for (const auto& f : matching_nodes(m, NamePattern(pattern_text))) names.push_back(f->name());
    if (names.empty()) throw ValueError(where(c) + "SetNodeInput: no node named '" + c.args[0] + "'");
    for (const auto& name : names) {
      const FunctionPtr f = node_function(m, name);
      std::vector<Variable> ins = f->inputs();
      if (size_t(index) >= ins.size())
        throw ValueError(where(c) + "SetNodeInput: '" + name + "' has " + std::to_string(ins.size()) + " inputs");
      ins[swaps_operands(f) ? 1 - size_t(index) : size_t(index)] = input;
      m = with_inputs(m, name, ins, c);
    }
    models_[model_name] = m;
  }

  // CopyNode/Copy(from, to[, copy=all|value]): copies of the nodes `from` names (one `*`; `to`
  // names the copies), parameters with their values; inputs among the copied nodes go to the
  // copies, the others stay shared. A copy joins the model once SetNodeInput makes a node of it
  // read it. With copy=value a parameter or constant `to` names (in its model, or made by an
  // earlier copy) takes the value of `from`, which may be in another model.
  void copy(const MelCall& c) {
    check_options(c, {"copyFlag"});
    std::string flag = "all";
    for (const auto& [key, value] : c.options) flag = value;  // the one option checked above
    const bool value_only = mel_name_is(flag, "value");
    if (!value_only && !mel_name_is(flag, "all"))
      throw ValueError(where(c) + "Copy: copy=" + flag + " is not one of all, value");
    const auto [model_name, from] = split_model(c.args[0]);
    const auto [to_model, to] = split_model(c.args[1]);
    FunctionPtr m = model(model_name, c);
    const NamePattern pattern(from), target(to);
    if (pattern.wildcard != target.wildcard) throw ValueError(where(c) + "Copy: both names or neither must hold a '*'");
    auto copy_name = [&](const std::string& name) -> std::optional<std::string> {
      auto part = pattern.match(name);
      if (!part) return std::nullopt;
      return target.prefix + *part + target.suffix;
    };
    std::unordered_map<VariableImpl*, Variable> copies;
    size_t assigned = 0;
    // copy=value: the existing node `to` names, in the target model or made by an earlier copy.
    auto existing = [&](const std::string& name, const Variable& source) -> Variable {
      if (auto it = models_.find(to_model); it != models_.end() && it->second)
        for (const auto& leaf : it->second->inputs())
          if (leaf.name() == name) return leaf;
      auto it = known_.find(name);
      return it != known_.end() && it->second != source ? it->second : Variable();
    };
    for (const auto& leaf : m->inputs()) {
      auto n = copy_name(leaf.name());
      if (!n || !(leaf.is_parameter() || leaf.is_constant())) continue;
      if (const Variable to_node = value_only ? existing(*n, leaf) : Variable();
          to_node.get() && (to_node.is_parameter() || to_node.is_constant())) {
        if (to_node.shape() != leaf.shape())
          throw ValueError(where(c) + "Copy: '" + leaf.name() + "' " + leaf.shape().str() + " and '" + *n + "' " +
                           to_node.shape().str() + " differ in shape");
        Variable(to_node).set_value(leaf.value());
        ++assigned;
        continue;
      }
      known_[*n] = copies[leaf.get()] =
          leaf.is_parameter() ? Variable::parameter(leaf.shape(), leaf.dtype(), leaf.value().copy(), nullptr, *n)
                              : Variable::constant(leaf.value().copy(), *n);
    }
    for (const auto& f : m->topological_order()) {
      auto n = copy_name(f->name());
      if (!n) continue;
      if (value_only)  // CNTK made a node without inputs, which no graph here can hold
        throw NotImplementedError(where(c) + "Copy with copy=value of a computed node ('" + f->name() + "')");
      if (f->is_block() || f->user_backend())
        throw NotImplementedError(where(c) + "Copy of a block or user function ('" + f->name() + "')");
      std::vector<Variable> ins = f->inputs();
      for (auto& in : ins)
        if (auto it = copies.find(in.get()); it != copies.end()) in = it->second;
      known_[*n] = copies[f->output().get()] = Function::primitive(f->op_name(), ins, f->attributes(), *n)->output();
    }
    if (copies.empty() && !assigned) throw ValueError(where(c) + "Copy: no node named '" + c.args[0] + "'");
  }

  // Remove/Delete(nodes): a root node leaves the model's outputs. A node that nothing reads any
  // more is gone already (graphs hold what their outputs reach); one still read is an error, as
  // its readers would be left without an input (SetNodeInput rewires them first).
  void remove(const std::string& pattern_name, const MelCall& c) {
    const auto [model_name, pattern_text] = split_model(pattern_name);
    FunctionPtr m = model(model_name, c);
    const NamePattern pattern(pattern_text);
    std::vector<Variable> kept;
    for (const auto& o : m->outputs())
      if (!(o.owner() && pattern.match(o.owner()->name()))) kept.push_back(o);
    if (kept.empty()) throw ValueError(where(c) + "Remove: '" + pattern_name + "' would remove every output");
    if (kept.size() != m->outputs().size()) m = Function::combine(kept);
    for (const auto& f : m->topological_order())
      if (pattern.match(f->name()))
        throw ValueError(where(c) + "Remove: '" + f->name() + "' is still an input of another node");
    for (const auto& leaf : m->inputs())
      if (pattern.match(leaf.name()))
        throw ValueError(where(c) + "Remove: '" + leaf.name() + "' is still an input of another node");
    models_[model_name] = m;
  }

  // The output of the function named `name`, else the leaf of that name; else a node of that
  // name the session has seen (a copy, or a node no output reaches any more: CNTK's networks
  // kept such nodes).
  Variable node_named(const FunctionPtr& m, const std::string& name, const MelCall& c) {
    remember(m);
    auto it = known_.find(name);
    if (it == known_.end()) throw ValueError(where(c) + "no node named '" + name + "'");
    return it->second;
  }

  void remember(const FunctionPtr& m) {
    for (const auto& f : m->topological_order())
      if (!f->name().empty() && f->outputs().size() == 1) known_[f->name()] = f->output();
    for (const auto& leaf : m->inputs())
      if (!leaf.name().empty()) known_[leaf.name()] = leaf;
  }

  // Rename(old, new): a node, or with `*` every node whose name matches (the part `*` matched
  // goes into new's `*`); a leading `model.` picks the model, else the default one.
  void rename(const MelCall& c) {
    const auto [model_name, from] = split_model(c.args[0]);
    std::string to = c.args[1];
    if (to.compare(0, model_name.size() + 1, model_name + ".") == 0) to = to.substr(model_name.size() + 1);
    FunctionPtr m = model(model_name, c);
    Function::allow_renaming_functions();  // the loaded nodes have their names already
    const NamePattern pattern(from), target(to);
    if (pattern.wildcard != target.wildcard)
      throw ValueError(where(c) + "Rename: both names or neither must hold a '*'");
    size_t renamed = 0;
    auto new_name = [&](const std::string& name) -> std::optional<std::string> {
      auto part = pattern.match(name);
      if (!part) return std::nullopt;
      return target.prefix + *part + target.suffix;
    };
    for (const auto& f : m->topological_order())
      if (auto n = new_name(f->name())) {
        f->set_name(*n);
        ++renamed;
      }
    NodeRoles& r = roles_[model_name];
    for (auto* group : {&r.feature, &r.label, &r.criterion, &r.evaluation, &r.output})
      for (auto& name : *group)
        if (auto n = new_name(name)) name = *n;
    for (const auto& leaf : m->inputs())
      if (auto n = new_name(leaf.name())) {
        leaf.impl()->name = *n;
        ++renamed;
      }
    if (!renamed) throw ValueError(where(c) + "Rename: no node named '" + c.args[0] + "'");
  }
};

// edit: with a BrainScriptNetworkBuilder, the network it describes is saved as
// outputModelPath (skipped in makeMode when that exists); else the MEL script editPath runs.
void edit(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  if (c.exists("BrainScriptNetworkBuilder")) {
    const std::string output = c.get("outputModelPath");
    if (c.get_bool("makeMode", true) && fs::exists(output)) {
      Log::printf("'%s' exists, skipping. Specify makeMode=false to force executing the action.\n", output.c_str());
      return;
    }
    EvaluationOptions options;
    options.dtype = c.get("precision", "float") == "double" ? DataType::Double : DataType::Float;
    options.include_paths = ctx.command_line->config_dirs;
    const Network net = build_network(c.get("BrainScriptNetworkBuilder"), options);
    if (fs::path(output).has_parent_path()) fs::create_directories(fs::path(output).parent_path());
    save_as_legacy_model(net.model, output);
    Log::printf("\nModel with %zu nodes saved as '%s'.\n",
                net.model->topological_order().size() + net.model->inputs().size(), output.c_str());
    return;
  }
  // ndlMacros serve in-line NDL, which raises NotImplementedError where a script uses it.
  const std::string path = c.get("editPath");
  std::ifstream in(path);
  if (!in) throw IOError("cannot read the MEL script '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  const auto script = std::make_shared<SourceFile>(path, c.resolve(text.str()));
  std::string resolved;
  for (const auto& line : script->lines) resolved += line + "\n";
  MelSession session(script, ctx.config);
  for (const auto& call : parse_mel(resolved, path)) session.run(call);
}

}  // namespace

void register_model_actions(std::map<std::string, Action>& table) {
  // cv evaluates saved models only (CNTK's DoCrossValidate ignores network builders): the test
  // action as registered before builders are considered.
  table["cv"] = [test = table.at("test")](const ActionContext& ctx) { cross_validate(ctx, test); };
  table["edit"] = edit;
  table["bnstat"] = batch_norm_statistics;
}

}  // namespace cntk::brainscript
