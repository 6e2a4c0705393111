// The train, test and write actions: CNTK's SGD block and reader blocks over the engine's
// Trainer, learners and MinibatchSource, with CNTK's log lines.
#include "brainscript/training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "brainscript/evaluator.h"
#include "brainscript/simple_network.h"
#include "cntk/learner.h"
#include "cntk/legacy_model.h"
#include "cntk/serialize.h"
#include "cntk/trainer.h"
#include "io/ctf_deserializer.h"
#include "io/minibatch_source.h"

namespace cntk::brainscript {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A per-epoch schedule value: epoch i takes entry i, the last entry holds from then on.
template <typename T>
T for_epoch(const std::vector<T>& values, size_t epoch) {
  return values[std::min(epoch, values.size() - 1)];
}

std::vector<double> numbers(const std::vector<std::string>& items, const std::string& what) {
  std::vector<double> out;
  for (const auto& s : items) out.push_back(config_to_double(s, what));
  return out;
}

// The reader block: CNTKTextFormatReader streams named as the network's inputs. `sweep_samples`
// (if given) receives the number of samples in one sweep of the data.
std::unique_ptr<io::MinibatchSource> make_reader(const ConfigRecord& command, const std::vector<Variable>& inputs,
                                                 bool randomize_default, uint64_t max_sweeps,
                                                 size_t* sweep_samples = nullptr) {
  auto reader = command.block("reader");
  const std::string type = reader->get("readerType", "");
  if (type != "CNTKTextFormatReader")
    throw NotImplementedError("reader type '" + type + "' (in " + reader->name() +
                              ") is not implemented yet; CNTKTextFormatReader is");
  auto input = reader->block("input");
  std::vector<io::CTFStreamDef> defs;
  for (const auto& name : input->keys()) {
    auto s = input->block(name);
    io::CTFStreamDef d;
    d.name = name;
    d.alias = s->get("alias", name);
    const std::string format = s->get("format", "dense");
    if (format != "dense" && format != "sparse")
      throw ValueError("input '" + name + "' in " + reader->name() + ": format must be dense or sparse, not '" +
                       format + "'");
    d.sparse = format == "sparse";
    d.shape = NDShape{s->get_int("dim", 0)};
    for (const auto& in : inputs)
      if (in.name() == name) {
        d.dtype = in.dtype();
        if (in.shape().total_size() == d.shape.total_size()) d.shape = in.shape();
      }
    defs.push_back(d);
  }
  io::MinibatchSourceConfig cfg;
  auto deserializer = std::make_shared<io::CTFDeserializer>(reader->get("file"), defs);
  if (sweep_samples) {
    *sweep_samples = 0;
    for (const auto& chunk : deserializer->chunks()) *sweep_samples += chunk.num_samples;
  }
  cfg.deserializers.push_back(deserializer);
  cfg.randomize = reader->get_bool("randomize", randomize_default);
  cfg.max_sweeps = max_sweeps;
  if (reader->exists("randomizationWindow"))
    cfg.randomization_window_in_samples = reader->get_int("randomizationWindow", 0);
  return std::make_unique<io::MinibatchSource>(cfg);
}

// The minibatch's data for each network input, by stream name.
VariableValues arguments_for(const io::MinibatchSource& source, const io::Minibatch& mb,
                             const std::vector<Variable>& inputs) {
  VariableValues args;
  for (size_t i = 0; i < source.streams().size(); ++i)
    for (const auto& in : inputs)
      if (in.name() == source.streams()[i].name)
        args.emplace_back(
            in, in.dynamic_axes().size() == 1 ? io::drop_sequence_axis(mb.streams[i].data) : mb.streams[i].data);
  return args;
}

std::vector<Variable> leaf_inputs(const FunctionPtr& model) {
  std::vector<Variable> out;
  for (const auto& v : model->arguments()) out.push_back(v);
  return out;
}

FunctionPtr single(const Variable& v) { return Function::combine({v}); }

// CNTK's "<name> = <average> * <count>; " criterion format.
void log_criterion(const std::string& name, double sum, size_t count) {
  std::fprintf(stderr, "%s = %.8f * %zu; ", name.c_str(), count ? sum / double(count) : 0.0, count);
}

std::string node_name(const Variable& v) {
  if (v.is_output() && v.owner() && !v.owner()->name().empty()) return v.owner()->name();
  return v.name();
}

Network network_for(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  if (c.exists("BrainScriptNetworkBuilder") || c.exists("ExperimentalNetworkBuilder")) {
    EvaluationOptions options;
    options.dtype = c.get("precision", "float") == "double" ? DataType::Double : DataType::Float;
    options.include_paths = ctx.command_line->config_dirs;
    return build_network(
        c.get(c.exists("BrainScriptNetworkBuilder") ? "BrainScriptNetworkBuilder" : "ExperimentalNetworkBuilder"),
        options);
  }
  if (c.exists("SimpleNetworkBuilder")) {
    EvaluationOptions options;
    options.dtype = c.get("precision", "float") == "double" ? DataType::Double : DataType::Float;
    return build_network(simple_network_source(*c.block("SimpleNetworkBuilder")), options);
  }
  if (c.exists("NDLNetworkBuilder"))
    throw NotImplementedError("NDLNetworkBuilder (in command '" + ctx.command +
                              "') is not implemented yet; BrainScriptNetworkBuilder and SimpleNetworkBuilder are");
  throw ValueError("no network builder in command '" + ctx.command +
                   "': BrainScriptNetworkBuilder, SimpleNetworkBuilder or NDLNetworkBuilder must be given");
}

// Outputs of a loaded model that are criteria or metrics: one value per sample from a loss or
// error op. CNTK kept these roles in its v1 files; models written as CNTK 2.7 wrote them keep
// only the root nodes, so the roles are recognised by op (or named by evalNodeNames).
bool is_metric(const Variable& v) {
  static const std::set<std::string> ops = {"CrossEntropyWithSoftmax",
                                            "ClassificationError",
                                            "Logistic",
                                            "ReduceElements",
                                            "SquaredError",
                                            "LambdaRank",
                                            "NDCG",
                                            "EditDistanceError",
                                            "CosDistance"};
  return v.is_output() && v.owner() && ops.count(v.owner()->op_name()) && v.shape().total_size() == 1;
}

FunctionPtr load_model(const ConfigRecord& c) {
  const std::string path = c.get("modelPath");
  if (!fs::exists(path)) throw IOError("model file '" + path + "' does not exist");
  return load_function(path);
}

std::vector<Variable> select_nodes(const FunctionPtr& model, const ConfigRecord& c, const char* key, bool metrics) {
  std::vector<Variable> out;
  if (c.exists(key)) {
    for (const auto& name : c.get_array(key)) {
      bool found = false;
      for (const auto& o : model->outputs())
        if (node_name(o) == name && !found) {
          out.push_back(o);
          found = true;
        }
      for (const auto& in : model->arguments())  // an input's values are the data read for it
        if (in.name() == name && !found) {
          out.push_back(in);
          found = true;
        }
      if (!found) throw ValueError(std::string(key) + ": the model has no output node named '" + name + "'");
    }
    return out;
  }
  for (const auto& o : model->outputs())
    if (is_metric(o) == metrics) out.push_back(o);
  return out;
}

// CNTK's pre-compute pass: one sweep of the training data gives each Mean/InvStdDev node the
// per-element mean (or 1/stddev, the variance floored at 1e-10) of its input.
void precompute(const ConfigRecord& c, Network& net, const std::vector<Variable>& inputs) {
  Log::printf("Precomputing --> %zu PreCompute nodes found.\n\n", net.statistics.size());
  auto source = make_reader(c, inputs, /*randomize_default=*/false, 1);
  std::map<VariableImpl*, std::pair<std::vector<double>, std::vector<double>>> moments;  // sum, sum of squares
  std::map<VariableImpl*, size_t> counts;
  while (true) {
    io::Minibatch mb = source->next_minibatch(10000);
    if (mb.empty()) break;
    for (const auto& [var, value] : arguments_for(*source, mb, inputs)) {
      NDArrayView v = value.data().contiguous();
      const size_t dim = size_t(var.shape().total_size());
      auto& [sum, sq] = moments[var.get()];
      sum.resize(dim), sq.resize(dim);
      const size_t n = size_t(v.numel()) / dim;
      for (size_t i = 0; i < n; ++i)
        for (size_t k = 0; k < dim; ++k) {
          const double x = v.dtype() == DataType::Double ? v.data<double>()[i * dim + k] : v.data<float>()[i * dim + k];
          sum[k] += x, sq[k] += x * x;
        }
      counts[var.get()] += n;
    }
  }
  for (auto& stat : net.statistics) {
    auto it = moments.find(stat.input.get());
    if (it == moments.end() || counts[stat.input.get()] == 0)
      throw ValueError("no data for the input '" + stat.input.name() + "' of a Mean/InvStdDev node");
    const double n = double(counts[stat.input.get()]);
    NDArrayView out = NDArrayView::zeros(DataType::Double, stat.value.shape());
    for (size_t k = 0; k < it->second.first.size(); ++k) {
      const double mean = it->second.first[k] / n;
      out.data<double>()[k] = stat.kind == PrecomputedStatistic::Kind::Mean
                                  ? mean
                                  : 1 / std::sqrt(std::max(it->second.second[k] / n - mean * mean, 1e-10));
    }
    stat.value.set_value(out.cast(stat.value.dtype()));
  }
  Log::printf("Precomputing --> Completed.\n\n");
}

void train(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  const std::string model_path = c.get("modelPath");
  if (c.get_bool("makeMode", true) && fs::exists(model_path)) {
    Log::printf("CNTKCommandTrainInfo: %s : model '%s' exists, training skipped (makeMode)\n", ctx.command.c_str(),
                model_path.c_str());
    return;
  }
  auto sgd = c.block("SGD");
  const long long max_epochs = sgd->get_int("maxEpochs", -1);
  if (max_epochs <= 0) throw ValueError(sgd->name() + ": maxEpochs must be given and positive");
  size_t epoch_size = size_t(sgd->get_int("epochSize", 0));  // 0: one sweep of the data
  const std::vector<double> mb_sizes = numbers(sgd->get_array("minibatchSize", {"256"}), "minibatchSize");
  std::string update = sgd->get("gradUpdateType", "None");
  std::transform(update.begin(), update.end(), update.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (update == "" || update == "normal" || update == "simple") update = "none";  // CNTK's older names
  if (update != "none" && update != "adagrad" && update != "rmsprop" && update != "fsadagrad")
    throw NotImplementedError("gradUpdateType '" + sgd->get("gradUpdateType") +
                              "' is not implemented yet (None, AdaGrad, RmsProp and FSAdaGrad are)");
  const std::vector<double> dropout_rates = numbers(sgd->get_array("dropoutRate", {"0"}), "dropoutRate");

  std::vector<double> lr_per_sample;
  if (sgd->exists("learningRatesPerSample")) {
    lr_per_sample = numbers(sgd->get_array("learningRatesPerSample"), "learningRatesPerSample");
  } else if (sgd->exists("learningRatesPerMB")) {
    const auto per_mb = numbers(sgd->get_array("learningRatesPerMB"), "learningRatesPerMB");
    for (size_t i = 0; i < per_mb.size(); ++i) lr_per_sample.push_back(per_mb[i] / for_epoch(mb_sizes, i));
  } else {
    throw ValueError(sgd->name() + ": learningRatesPerSample or learningRatesPerMB must be given");
  }
  // Momentum as a per-sample value; CNTK's default is 0.9 per minibatch.
  std::vector<double> momentum_per_sample;
  if (sgd->exists("momentumPerSample")) {
    momentum_per_sample = numbers(sgd->get_array("momentumPerSample"), "momentumPerSample");
  } else if (sgd->exists("momentumAsTimeConstant")) {
    for (double tc : numbers(sgd->get_array("momentumAsTimeConstant"), "momentumAsTimeConstant"))
      momentum_per_sample.push_back(tc == 0 ? 0 : std::exp(-1 / tc));
  } else {
    const auto per_mb = numbers(sgd->get_array("momentumPerMB", {"0.9"}), "momentumPerMB");
    for (size_t i = 0; i < per_mb.size(); ++i)
      momentum_per_sample.push_back(std::pow(per_mb[i], 1.0 / for_epoch(mb_sizes, i)));
  }
  if (std::set<double>(momentum_per_sample.begin(), momentum_per_sample.end()).size() > 1)
    throw NotImplementedError("a momentum that changes between epochs is not implemented yet");

  AdditionalLearningOptions options;
  options.l1_regularization_weight = sgd->get_double("L1RegWeight", 0);
  options.l2_regularization_weight = sgd->get_double("L2RegWeight", 0);
  options.gradient_clipping_threshold_per_sample =
      sgd->get_double("clippingThresholdPerSample", std::numeric_limits<double>::infinity());
  options.gradient_clipping_with_truncation = sgd->get_bool("gradientClippingWithTruncation", true);

  Network net = network_for(ctx);
  if (net.criteria.empty()) throw ValueError("the network of command '" + ctx.command + "' has no criterionNodes");
  if (net.evaluations.size() > 1)
    throw NotImplementedError("training with more than one evaluation node is not implemented yet");
  const Variable criterion = net.criteria[0];
  FunctionPtr evaluation = net.evaluations.empty() ? nullptr : single(net.evaluations[0]);
  const double momentum = momentum_per_sample[0];
  // CNTK's v1 updates are the engine's learners with a per-sample learning rate and unit-gain
  // momentum; AdaGrad and RmsProp take no momentum.
  const auto params = net.model->parameters();
  const LearningRateSchedule lr0(lr_per_sample[0], 1);
  const bool ave_multiplier = sgd->get_bool("normWithAveMultiplier", true);
  LearnerPtr learner;
  if (update == "adagrad") {
    learner = adagrad_learner(params, lr0, ave_multiplier, options);
  } else if (update == "rmsprop") {
    learner = rmsprop_learner(params, lr0, sgd->get_double("rms_gamma", 0.99), sgd->get_double("rms_wgt_inc", 1.2),
                              sgd->get_double("rms_wgt_dec", 0.75), sgd->get_double("rms_wgt_max", 10.0),
                              sgd->get_double("rms_wgt_min", 0.1), ave_multiplier, options);
  } else if (update == "fsadagrad") {
    learner = fsadagrad_learner(
        params, lr0, MomentumSchedule(momentum, 1), /*unit_gain=*/true,
        momentum_as_time_constant_schedule(sgd->get_double("varianceTimeConstant", 2 * 3600 * 100)), options);
  } else {
    learner = momentum_sgd_learner(params, lr0, MomentumSchedule(momentum, 1), /*unit_gain=*/true, options);
  }
  Trainer trainer(net.model, single(criterion), evaluation, {learner});

  const std::vector<Variable> inputs = leaf_inputs(net.model);
  if (!net.statistics.empty()) precompute(c, net, inputs);
  size_t sweep_samples = 0;
  auto source = make_reader(c, inputs, /*randomize_default=*/true, io::kInfinitelyRepeat, &sweep_samples);
  // epochSize 0 is one sweep; its minibatches end at the sweep's end, as CNTK's readers ended them.
  if (epoch_size == 0) epoch_size = sweep_samples;
  const size_t show_every = size_t(sgd->get_int("numMBsToShowResult", 10));
  const std::string crit_name = node_name(criterion);
  const std::string eval_name = net.evaluations.empty() ? "" : node_name(net.evaluations[0]);
  size_t total_samples = 0, samples_per_epoch = 0;
  fs::path model_dir = fs::path(model_path).parent_path();
  if (!model_dir.empty()) fs::create_directories(model_dir);
  bool data_left = true;
  for (long long epoch = 0; epoch < max_epochs && data_left; ++epoch) {
    const double lr = for_epoch(lr_per_sample, size_t(epoch));
    const size_t mb_size = size_t(for_epoch(mb_sizes, size_t(epoch)));
    learner->reset_learning_rate(LearningRateSchedule(lr, 1));
    set_dropout_rate(net.model, for_epoch(dropout_rates, size_t(epoch)));
    std::fprintf(stderr, "\n");
    Log::printf(
        "Starting Epoch %lld: learning rate per sample = %f  effective momentum = %f  momentum as time constant = %.1f "
        "samples\n",
        epoch + 1, lr, std::pow(momentum, double(mb_size)),
        momentum > 0 && momentum < 1 ? -1 / std::log(momentum) : 0.0);
    std::fprintf(stderr, "\n");
    Log::printf("Starting minibatch loop.\n");
    const auto epoch_start = Clock::now();
    auto logged_at = Clock::now();
    double crit_sum = 0, eval_sum = 0, crit_logged = 0, eval_logged = 0;
    size_t samples = 0, eval_samples = 0, samples_logged = 0, eval_samples_logged = 0, mbs = 0, mbs_logged = 0;
    while (true) {
      if (epoch_size && samples >= epoch_size) break;
      const size_t want = epoch_size ? std::min(mb_size, epoch_size - samples) : mb_size;
      io::Minibatch mb = source->next_minibatch(want);
      if (mb.empty()) {
        data_left = false;
        break;
      }
      bool sweep_end = false;
      for (const auto& s : mb.streams) sweep_end |= s.sweep_end;
      trainer.train_minibatch(arguments_for(*source, mb, inputs), sweep_end);
      crit_sum += trainer.previous_minibatch_loss().sum;
      samples += trainer.previous_minibatch_loss().samples;
      eval_sum += trainer.previous_minibatch_evaluation().sum;
      eval_samples += trainer.previous_minibatch_evaluation().samples;
      ++mbs;
      if (show_every && mbs % show_every == 0) {
        const double t = seconds_since(logged_at);
        Log::printf(" Epoch[%2lld of %lld]-Minibatch[%4zu-%4zu", epoch + 1, max_epochs, mbs_logged + 1, mbs);
        if (epoch > 0 && samples_per_epoch) {  // CNTK shows progress once it knows an epoch's size
          const double mbs_per_epoch = double(samples_per_epoch) / double(mb_size);
          const int digits = std::max(int(std::ceil(std::log10(mbs_per_epoch / double(mbs - mbs_logged)))) - 2, 2);
          std::fprintf(stderr, ", %2.*f%%", digits, 100.0 * double(mbs) / mbs_per_epoch);
        }
        std::fprintf(stderr, "]: ");
        log_criterion(crit_name, crit_sum - crit_logged, samples - samples_logged);
        if (evaluation) log_criterion(eval_name, eval_sum - eval_logged, eval_samples - eval_samples_logged);
        std::fprintf(stderr, "time = %.4fs; samplesPerSecond = %.1f\n", t,
                     double(samples - samples_logged) / std::max(t, 1e-9));
        crit_logged = crit_sum, eval_logged = eval_sum, samples_logged = samples, eval_samples_logged = eval_samples;
        mbs_logged = mbs;
        logged_at = Clock::now();
      }
    }
    if (samples == 0) break;
    total_samples += samples;
    if (epoch == 0) samples_per_epoch = epoch_size ? epoch_size : samples;
    Log::printf("Finished Epoch[%2lld of %lld]: [Training] ", epoch + 1, max_epochs);
    log_criterion(crit_name, crit_sum, samples);
    if (evaluation) log_criterion(eval_name, eval_sum, eval_samples);
    std::fprintf(stderr, "totalSamplesSeen = %zu; learningRatePerSample = %.8g; epochTime=%.6gs\n", total_samples,
                 float(lr), seconds_since(epoch_start));
    const bool last = epoch + 1 == max_epochs;
    const std::string path = last ? model_path : model_path + "." + std::to_string(epoch + 1);
    Log::printf("SGD: Saving checkpoint model '%s'\n", path.c_str());
    save_as_legacy_model(net.model, path);
    if (!last && !c.get_bool("keepCheckPointFiles", false) && epoch > 0)
      fs::remove(model_path + "." + std::to_string(epoch));  // CNTK keeps only the latest checkpoint
  }
  if (!fs::exists(model_path)) save_as_legacy_model(net.model, model_path);  // data ended before maxEpochs
}

void test(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  FunctionPtr model = load_model(c);
  const std::vector<Variable> metrics = select_nodes(model, c, "evalNodeNames", true);
  if (metrics.empty()) throw ValueError("the model '" + c.get("modelPath") + "' has no criterion or evaluation node");
  const std::vector<Variable> inputs = leaf_inputs(model);
  auto source = make_reader(c, inputs, /*randomize_default=*/false, 1);
  const size_t mb_size = size_t(config_to_double(c.get_array("minibatchSize", {"10000"})[0], "minibatchSize"));
  std::vector<Evaluator> evaluators;
  for (const auto& m : metrics) evaluators.emplace_back(single(m));
  std::vector<double> sums(metrics.size(), 0);
  std::vector<size_t> counts(metrics.size(), 0);
  size_t mbs = 0;
  while (true) {
    io::Minibatch mb = source->next_minibatch(mb_size);
    if (mb.empty()) break;
    const VariableValues args = arguments_for(*source, mb, inputs);
    for (size_t i = 0; i < metrics.size(); ++i) {
      evaluators[i].test_minibatch(args);
      sums[i] += evaluators[i].previous_test_minibatch().sum;
      counts[i] += evaluators[i].previous_test_minibatch().samples;
    }
    ++mbs;
  }
  Log::printf("Final Results: Minibatch[1-%zu]: ", mbs);
  for (size_t i = 0; i < metrics.size(); ++i) {
    log_criterion(node_name(metrics[i]), sums[i], counts[i]);
    if (metrics[i].owner()->op_name() == "CrossEntropyWithSoftmax" && counts[i])
      std::fprintf(stderr, "perplexity = %.8f; ", std::exp(sums[i] / double(counts[i])));
  }
  std::fprintf(stderr, "\n");
}

// The write action's `format` block (CNTK's WriteFormattingOptions): type real (values) or
// category (the index of the largest value, or its line of labelMappingFile), and the strings
// put around sequences, samples and elements. "\n", "\t", "\r", "\s" in them are escapes; %s is
// the node's name, %n the minibatch number.
struct WriteFormat {
  bool category = false;
  std::vector<std::string> labels;
  std::string prologue, epilogue, sequence_separator, sequence_prologue, sequence_epilogue = "\n";
  std::string element_separator = " ", sample_separator = "\n", precision;

  explicit WriteFormat(const ConfigRecord& c) {
    if (!c.exists("format")) return;
    auto f = c.block("format");
    if (f->exists_here("type")) {
      const std::string type = f->get("type");
      if (type == "category")
        category = true;
      else if (type == "sparse")
        throw NotImplementedError("write: format type 'sparse' is not implemented yet");
      else if (type != "real")
        throw ValueError("write: format type must be 'real', 'category' or 'sparse', not '" + type + "'");
    }
    if (!f->get_bool("transpose", true))
      throw NotImplementedError("write: format transpose=false is not implemented yet");
    if (auto mapping = f->find("labelMappingFile")) {
      std::ifstream in(*mapping);
      if (!in) throw IOError("cannot read labelMappingFile '" + *mapping + "'");
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        labels.push_back(line);
      }
    }
    prologue = f->get("prologue", prologue);
    epilogue = f->get("epilogue", epilogue);
    sequence_separator = f->get("sequenceSeparator", sequence_separator);
    sequence_prologue = f->get("sequencePrologue", sequence_prologue);
    sequence_epilogue = f->get("sequenceEpilogue", sequence_epilogue);
    element_separator = f->get("elementSeparator", element_separator);
    sample_separator = f->get("sampleSeparator", sample_separator);
    precision = f->get("precisionFormat", precision);
  }

  static std::string processed(std::string s, const std::string& node, size_t minibatch) {
    auto replace = [&s](const std::string& from, const std::string& to) {
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    };
    replace("\\n", "\n");
    replace("\\r", "\r");
    replace("\\t", "\t");
    replace("\\s", " ");
    replace("%s", node);
    replace("%n", std::to_string(minibatch));
    return s;
  }
};

// Writes each output node's values to <outputPath>.<node name> (outputPath "-": stdout), one
// line per sample unless the format block says otherwise.
void write(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  const WriteFormat format(c);
  FunctionPtr model = load_model(c);
  const std::vector<Variable> outputs = select_nodes(model, c, "outputNodeNames", false);
  if (outputs.empty()) throw ValueError("the model '" + c.get("modelPath") + "' has no output node to write");
  const std::vector<Variable> inputs = leaf_inputs(model);
  auto source = make_reader(c, inputs, /*randomize_default=*/false, 1);
  const std::string base = c.get("outputPath");
  std::vector<std::FILE*> files;
  for (const auto& o : outputs) {
    if (base == "-") {
      files.push_back(stdout);
      continue;
    }
    const std::string path = base + "." + node_name(o);
    if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path());
    files.push_back(std::fopen(path.c_str(), "w"));
    if (!files.back()) throw IOError("cannot write '" + path + "'");
  }
  const std::string value_format =
      "%" + format.precision + (format.category ? (format.labels.empty() ? "zu" : "s") : "f");
  auto put = [](std::FILE* f, const std::string& s) { std::fputs(s.c_str(), f); };
  for (size_t i = 0; i < outputs.size(); ++i)
    put(files[i], WriteFormat::processed(format.prologue, node_name(outputs[i]), 0));
  size_t minibatch = 0;
  std::vector<size_t> sequences_written(outputs.size(), 0);
  while (true) {
    io::Minibatch mb = source->next_minibatch(10000);
    if (mb.empty()) break;
    const VariableValues args = arguments_for(*source, mb, inputs);
    std::vector<Variable> computed;
    for (const auto& o : outputs)
      if (!o.is_input()) computed.push_back(o);
    std::vector<cntk::Value> computed_values, values;
    forward(model, args, computed, computed_values, false);
    for (size_t i = 0, k = 0; i < outputs.size(); ++i) {
      if (!outputs[i].is_input()) {
        values.push_back(computed_values[k++]);
        continue;
      }
      for (const auto& [var, value] : args)
        if (var == outputs[i]) values.push_back(value);
      if (values.size() != i + 1) throw ValueError("write: no data for the input '" + outputs[i].name() + "'");
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const std::string name = node_name(outputs[i]);
      NDArrayView v = values[i].data().contiguous().cast(DataType::Double);
      const double* data = v.data<double>();
      const size_t dim = size_t(outputs[i].shape().total_size());
      const auto* mask = values[i].mask().get();
      const size_t steps = outputs[i].dynamic_axes().size() == 2 && mask ? size_t(mask->max_len()) : 1;
      const size_t n_seq = dim ? size_t(v.numel()) / dim / steps : 0;
      for (size_t s = 0; s < n_seq; ++s) {
        if (sequences_written[i]++) put(files[i], WriteFormat::processed(format.sequence_separator, name, minibatch));
        put(files[i], WriteFormat::processed(format.sequence_prologue, name, minibatch));
        for (size_t t = 0; t < steps; ++t) {
          if (mask && steps > 1 && mask->at(int64_t(s), int64_t(t)) == MaskKind::Invalid) break;
          if (t) put(files[i], WriteFormat::processed(format.sample_separator, name, minibatch));
          const double* sample = data + (s * steps + t) * dim;
          char buf[512];
          if (format.category) {
            const size_t best = size_t(std::max_element(sample, sample + dim) - sample);
            if (format.labels.empty())
              std::snprintf(buf, sizeof buf, value_format.c_str(), best);
            else
              std::snprintf(buf, sizeof buf, value_format.c_str(),
                            best < format.labels.size() ? format.labels[best].c_str() : "?");
            put(files[i], buf);
          } else {
            for (size_t k = 0; k < dim; ++k) {
              if (k) put(files[i], WriteFormat::processed(format.element_separator, name, minibatch));
              std::snprintf(buf, sizeof buf, value_format.c_str(), sample[k]);
              put(files[i], buf);
            }
          }
        }
        put(files[i], WriteFormat::processed(format.sequence_epilogue, name, minibatch));
      }
    }
    ++minibatch;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    put(files[i], WriteFormat::processed(format.epilogue, node_name(outputs[i]), minibatch));
    if (files[i] != stdout && std::fclose(files[i]) != 0)
      throw IOError("cannot finish writing " + node_name(outputs[i]));
  }
}

void dump_node(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  const std::string model_path = c.get("modelPath");
  std::ifstream in(model_path, std::ios::binary);
  if (!in) throw IOError("cannot read model file '" + model_path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!is_legacy_model(bytes)) throw NotImplementedError("dumpNode reads v1 model files only");
  const std::string out_path = c.get("outputFile", model_path + ".__AllNodes__.txt");
  std::ofstream out(out_path);
  out << dump_legacy_model(bytes, model_path);
  if (!out) throw IOError("cannot write '" + out_path + "'");
}

}  // namespace

void register_training_actions(std::map<std::string, Action>& table) {
  table["train"] = train;
  table["trainRNN"] = train;
  table["test"] = test;
  table["eval"] = test;
  table["write"] = write;
  for (const char* name : {"dumpNode", "dumpNodes", "dumpnode"}) table[name] = dump_node;
}

}  // namespace cntk::brainscript
