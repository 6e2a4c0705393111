// The train, test and write actions: CNTK's SGD block and reader blocks over the engine's
// Trainer, learners and MinibatchSource, with CNTK's log lines.
#include "brainscript/training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <regex>
#include <set>

#include "brainscript/epoch_search.h"
#include "brainscript/evaluator.h"
#include "brainscript/ndl.h"
#include "brainscript/reader_config.h"
#include "brainscript/sgd_config.h"
#include "brainscript/simple_network.h"
#include "brainscript/write_format.h"
#include "cntk/distributed.h"
#include "cntk/learner.h"
#include "cntk/legacy_model.h"
#include "cntk/profiler.h"
#include "cntk/serialize.h"
#include "cntk/trainer.h"
#include "io/minibatch_source.h"
#include "serialize/v1_model.h"

namespace cntk::brainscript {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<Variable> leaf_inputs(const FunctionPtr& model) {
  std::vector<Variable> out;
  for (const auto& v : model->arguments()) out.push_back(v);
  return out;
}

FunctionPtr single(const Variable& v) { return Function::combine({v}); }

// CNTK's "<name> = <average> * <count>; " criterion format (the last of a line without "; ").
void log_criterion(const std::string& name, double sum, size_t count, bool semicolon = true) {
  // CNTK's rule: a name ending in 's' ("errs") counts errors and prints as a percentage with
  // three decimals; others with eight. Values printf's %g would write with an exponent are
  // written in %e form.
  const bool percentage = !name.empty() && name.back() == 's';
  const double value = (count ? sum / double(count) : 0.0) * (percentage ? 100 : 1);
  const int precision = percentage ? 3 : 8;
  char text[64];
  std::snprintf(text, sizeof text, "%.*g", precision, value);
  const bool exponent = std::strpbrk(text, "eE") != nullptr;
  std::snprintf(text, sizeof text, exponent ? "%*.*e" : "%*.*f", percentage ? 2 : 0, precision, value);
  std::fprintf(stderr, "%s = %s%s * %zu%s", name.c_str(), text, percentage ? "%" : "", count, semicolon ? "; " : "");
}

double average(const MinibatchAggregate& a) { return a.samples ? a.sum / double(a.samples) : 0.0; }

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
  if (c.exists("NDLNetworkBuilder")) return build_ndl_network(c);
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
  Reader reader = make_reader(c, inputs, /*randomize_default=*/false, 1);
  io::MinibatchSource& source = *reader.source;
  std::map<VariableImpl*, std::pair<std::vector<double>, std::vector<double>>> moments;  // sum, sum of squares
  std::map<VariableImpl*, size_t> counts;
  while (true) {
    io::Minibatch mb = source.next_minibatch(10000);
    if (mb.empty()) break;
    for (const auto& [var, value] : arguments_for(source, mb, inputs)) {
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

// Each node's sum over one pass of `source` (CNTK's SimpleEvaluator), and the minibatches read.
// `distributed`: each worker evaluates its part of the data and the sums are over all workers;
// as CNTK's evaluator, the workers then take one more, empty round to agree that the data has
// ended, and count it as a minibatch.
std::pair<std::vector<MinibatchAggregate>, size_t> evaluate_nodes(io::MinibatchSource& source,
                                                                  const std::vector<Variable>& nodes,
                                                                  const std::vector<Variable>& inputs, size_t mb_size,
                                                                  bool distributed) {
  const size_t partitions = distributed ? number_of_workers() : 1, partition = distributed ? worker_global_rank() : 0;
  std::vector<Evaluator> evaluators;
  for (const auto& n : nodes) evaluators.emplace_back(single(n));
  std::vector<MinibatchAggregate> sums(nodes.size());
  size_t mbs = 0;
  while (true) {
    io::Minibatch mb = source.next_minibatch(mb_size, partitions, partition);
    if (mb.empty() && !distributed) break;
    const VariableValues args = arguments_for(source, mb, inputs);
    size_t seen = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      evaluators[i].test_minibatch(args, {}, nullptr, distributed);
      sums[i].sum += evaluators[i].previous_test_minibatch().sum;
      sums[i].samples += evaluators[i].previous_test_minibatch().samples;
      seen += evaluators[i].previous_test_minibatch().samples;
    }
    ++mbs;
    if (distributed && seen == 0) break;
  }
  return {sums, mbs};
}

// The command with its cvReader block (looked up outwards, as every key) as its `reader`, which
// is what make_reader reads; null when there is no cvReader.
std::shared_ptr<const ConfigRecord> with_cv_reader(const std::shared_ptr<const ConfigRecord>& command) {
  for (auto r = command; r; r = r->parent())
    if (r->exists_here("cvReader")) {
      auto view = ConfigRecord::parse(std::string(), command->name() + "(cvReader)", command);
      view->insert("reader", r->raw("cvReader"));
      return view;
    }
  return nullptr;
}

// The top-level parallelTrain switch: CNTK starts its MPI wrapper for it, by default when the
// process is one of several workers.
bool parallel_enabled(const ConfigRecord& c) { return c.get_bool("parallelTrain", number_of_workers() > 1); }

// The model file CNTK writes after epoch `epoch` (0-based): modelPath.<epoch+1>, the last
// epoch's being modelPath itself; its trainer checkpoint is that name plus ".ckp".
std::string model_for_epoch(const std::string& model_path, long long epoch, long long max_epochs) {
  return epoch + 1 == max_epochs ? model_path : model_path + "." + std::to_string(epoch + 1);
}

// CNTK's DetermineStartEpoch (makeMode): training resumes after the last epoch whose model file
// exists and is not older than the previous epoch's; 0 when there is none.
long long first_epoch_to_train(const std::string& model_path, long long max_epochs) {
  for (long long e = max_epochs - 1; e >= 0; --e) {
    const fs::path file = model_for_epoch(model_path, e, max_epochs);
    if (!fs::exists(file)) continue;
    const fs::path previous = model_for_epoch(model_path, e - 1, max_epochs);
    if (e == 0 || !fs::exists(previous) || fs::last_write_time(file) >= fs::last_write_time(previous)) return e + 1;
  }
  return 0;
}

// CNTK's profiler keys: with profilerEnabled, a session writes into WorkDir/profiler (or
// profilerDirectory, a key of this implementation) and records from the second epoch trained
// on, as CNTK skipped the first for its start-up costs.
class ProfilerSession {
 public:
  explicit ProfilerSession(const ConfigRecord& c) {
    if (!c.get_bool("profilerEnabled", false)) return;
    const std::string dir = c.get("profilerDirectory", c.get("WorkDir", ".") + "/profiler");
    const long long bytes = c.get_int("profilerBufferSize", (long long)profiler::kDefaultBufferSize);
    if (bytes <= 0) throw ValueError("profilerBufferSize must be positive");
    profiler::start(dir, c.get_bool("profilerSyncGpu", true), size_t(bytes));
    running_ = true;
  }
  ~ProfilerSession() {
    if (!running_) return;
    try {  // an exception ended training: keep what was recorded
      profiler::stop();
    } catch (...) {
    }
  }
  void epoch_started(bool first) {
    if (running_ && !first) profiler::enable();
  }
  void epoch_ended() {
    if (running_) profiler::disable();
  }
  void finish() {
    if (!running_) return;
    running_ = false;
    for (const auto& file : profiler::stop()) Log::printf("Profiler: wrote %s\n", file.c_str());
  }

 private:
  bool running_ = false;
};

void train(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  const std::string model_path = c.get("modelPath");
  const DataType dtype = c.get("precision", "float") == "double" ? DataType::Double : DataType::Float;
  const bool parallel = parallel_enabled(c);
  const size_t workers = parallel ? number_of_workers() : 1, rank = parallel ? worker_global_rank() : 0;
  const SGDSettings sgd = read_sgd_block(*c.block("SGD"), dtype, parallel, workers);
  const long long max_epochs = sgd.max_epochs;
  const long long start_epoch = c.get_bool("makeMode", true) ? first_epoch_to_train(model_path, max_epochs) : 0;
  if (start_epoch == max_epochs) {
    Log::printf("CNTKCommandTrainInfo: %s : model '%s' exists, training skipped (makeMode)\n", ctx.command.c_str(),
                model_path.c_str());
    return;
  }
  const ParallelTraining& par = sgd.parallel;

  Network net = network_for(ctx);
  if (net.criteria.empty()) throw ValueError("the network of command '" + ctx.command + "' has no criterionNodes");
  const Variable criterion = net.criteria[0];
  // The first evaluation node is the trainer's; the others are computed in the same passes.
  FunctionPtr evaluation = net.evaluations.empty() ? nullptr : single(net.evaluations[0]);
  std::vector<FunctionPtr> more_evaluations;
  for (size_t k = 1; k < net.evaluations.size(); ++k) more_evaluations.push_back(single(net.evaluations[k]));
  const std::vector<Variable> inputs = leaf_inputs(net.model);

  Reader reader = make_reader(c, inputs, /*randomize_default=*/true, io::kInfinitelyRepeat);
  io::MinibatchSource& source = *reader.source;
  // epochSize 0 is one sweep; its minibatches end at the sweep's end, as CNTK's readers ended them.
  const size_t epoch_size = sgd.epoch_size ? sgd.epoch_size : reader.sweep_samples;

  // Resuming: the last epoch's model, and its checkpoint (learner state, reader position) where
  // it exists; without one the schedules start at the resumed epoch and the learners afresh.
  const std::string resume_from = start_epoch > 0 ? model_for_epoch(model_path, start_epoch - 1, max_epochs) : "";
  const bool has_checkpoint = !resume_from.empty() && fs::exists(resume_from + ".ckp");
  SGDSettings schedules = sgd;
  if (!resume_from.empty() && !has_checkpoint) {
    const auto skip = [&](std::vector<double>& v) {
      v.erase(v.begin(), v.begin() + std::min<ptrdiff_t>(start_epoch, ptrdiff_t(v.size()) - 1));
    };
    skip(schedules.lr_per_sample), skip(schedules.momentum_per_sample);
    schedules.parallel.start_epoch = size_t(std::max<long long>(0, (long long)par.start_epoch - start_epoch));
  }
  LearnerPtr learner = make_learner(schedules, net.model->parameters(), epoch_size);
  Trainer trainer(net.model, single(criterion), evaluation, {learner});
  trainer.set_additional_metrics(more_evaluations);
  size_t total_samples = 0;
  // CNTK's learning-rate adjustment state: the rate of epochs past the given ones under
  // AdjustAfterEpoch, the control criterion at the last check, and its mean since then.
  const LearningRateAdjustment& adjust = sgd.adjust;
  double adjusted_lr = for_epoch(sgd.lr_per_sample, size_t(start_epoch));
  double prev_criterion = std::numeric_limits<double>::infinity(), avg_criterion = prev_criterion;
  size_t epochs_not_counted = size_t(start_epoch) % adjust.interval;  // of a resumed interval
  bool lr_reduced = false, lr_restored = false;
  // The minibatch size autoAdjustMinibatch chose last (CNTK starts it at the first epoch's given size).
  size_t chosen_mb_size = size_t(for_epoch(sgd.minibatch_sizes, size_t(start_epoch)));
  // Restores the trainer, the reader's position and the adjustment state from `path`'s checkpoint.
  const auto restore_checkpoint = [&](const std::string& path) {
    const Dictionary state = restore_trainer_checkpoint(trainer, path);
    if (state.count("source")) source.restore_from_checkpoint(state.at("source").as_dict());
    if (state.count("totalSamplesSeen")) total_samples = size_t(state.at("totalSamplesSeen").as_int());
    if (state.count("learnRatePerSample")) {
      adjusted_lr = state.at("learnRatePerSample").as_double();
      lr_restored = true;
    }
    if (state.count("prevCriterion")) prev_criterion = state.at("prevCriterion").as_double();
    if (state.count("minibatchSize")) chosen_mb_size = size_t(state.at("minibatchSize").as_int());
  };
  if (!resume_from.empty()) {
    Log::printf("Starting from checkpoint. Loading network from '%s'.\n", resume_from.c_str());
    if (has_checkpoint) {
      restore_checkpoint(resume_from);
    } else {
      restore_function_values(net.model, resume_from);
      Log::printf("Warning: Checkpoint file is missing. Parameter-learning state (such as momentum) will be reset.\n");
    }
  } else if (!net.statistics.empty()) {
    precompute(c, net, inputs);
  }
  if (adjust.after_epoch && !lr_restored && sgd.given_learning_rates <= size_t(start_epoch))
    throw ValueError("AutoAdjust AdjustAfterEpoch resuming at epoch " + std::to_string(start_epoch + 1) +
                     " needs the previous epoch's checkpoint file or a learning rate given for that epoch");
  // The cross-validation data, evaluated after every epoch on the criterion and evaluation nodes.
  const auto cv_command = with_cv_reader(ctx.config);
  if (adjust.search_before && par.enabled())
    throw NotImplementedError(
        "AutoAdjust: autoAdjustLR = SearchBeforeEpoch under parallel training is not implemented yet");
  if (adjust.adjust_minibatch && par.enabled())
    throw NotImplementedError("AutoAdjust: autoAdjustMinibatch under parallel training is not implemented yet");
  EpochSearch search(trainer, learner, source, inputs, net.model, criterion, net.evaluations, sgd,
                     [&](long long epoch, const std::vector<MinibatchAggregate>& figures, double rate, size_t mb_size) {
                       Log::printf(" Finished Mini-Epoch[%lld]: ", epoch + 1);
                       log_criterion(node_name(criterion), figures[0].sum, figures[0].samples);
                       for (size_t k = 1; k < figures.size(); ++k)
                         log_criterion(node_name(net.evaluations[k - 1]), figures[k].sum, figures[k].samples);
                       std::fprintf(stderr, "learningRatePerSample = %.8g; minibatchSize = %zu\n", rate, mb_size);
                     });
  // The search starts above the largest of the last numPrevLearnRates rates it found.
  std::vector<double> recent_rates(adjust.num_prev_learn_rates, -1.0);
  if (lr_restored) recent_rates[size_t(start_epoch) % recent_rates.size()] = adjusted_lr;
  double lr_adjustment_factor = 1.0;  // the last search's rate over the rate before it
  const long long trace_level = c.get_int("traceLevel", 0);
  std::vector<Variable> cv_nodes{criterion};
  cv_nodes.insert(cv_nodes.end(), net.evaluations.begin(), net.evaluations.end());

  const auto distributed = std::dynamic_pointer_cast<DistributedLearner>(learner);
  const size_t mb_scale = distributed ? distributed->minibatch_size_scale_factor() : 1;
  const bool exact_exchange = par.gradient_bits >= (dtype == DataType::Double ? 64u : 32u);
  if (par.enabled()) {
    if (!par.distributed_reading_given)
      Log::printf("\"distributedMBReading\" is not explicitly specified, defaulting to 'true'.\n");
    if (!exact_exchange)
      std::fprintf(stderr, "Initializing dataParallelSGD for %zu-bit quantization.\n", par.gradient_bits);
  }
  ProfilerSession profiling(c);
  const std::string crit_name = node_name(criterion);
  std::vector<std::string> eval_names;
  for (const auto& e : net.evaluations) eval_names.push_back(node_name(e));
  // Sums over the workers of this worker's figures of each evaluation node after the first,
  // where the trainer leaves them local: with every minibatch under data-parallel training (all
  // workers train each one together), at the epoch's end where the figures stay local.
  auto summed_over_workers = [&](std::vector<MinibatchAggregate>& figures) {
    const auto comm = trainer.communicator();
    if (!comm || figures.empty()) return;
    std::vector<NDArrayView> values{NDArrayView(DataType::Double, NDShape({int64_t(2 * figures.size())}))};
    double* p = values[0].data<double>();
    for (size_t k = 0; k < figures.size(); ++k) p[2 * k] = figures[k].sum, p[2 * k + 1] = double(figures[k].samples);
    comm->aggregate_in_place(values);
    p = values[0].data<double>();
    for (size_t k = 0; k < figures.size(); ++k) figures[k] = {p[2 * k], size_t(std::llround(p[2 * k + 1]))};
  };
  size_t samples_per_epoch = 0;
  const fs::path model_dir = fs::path(model_path).parent_path();
  if (!model_dir.empty()) fs::create_directories(model_dir);
  bool data_left = true;
  // Writes epoch `epoch`'s model file and its checkpoint (the trainer's state, the reader's position
  // and the learning-rate adjustment's state).
  const auto save_epoch = [&](long long epoch) {
    const std::string path = model_for_epoch(model_path, epoch, max_epochs);
    Dictionary external;
    external["source"] = source.checkpoint_state();
    external["totalSamplesSeen"] = int64_t(total_samples);
    external["learnRatePerSample"] = adjusted_lr;
    external["prevCriterion"] = prev_criterion;
    external["minibatchSize"] = int64_t(chosen_mb_size);
    save_trainer_checkpoint(trainer, path, external);
    if (rank == 0) save_as_legacy_model(net.model, path);
  };
  const auto checkpoint_of = [&](long long epoch) { return model_for_epoch(model_path, epoch, max_epochs) + ".ckp"; };
  for (long long epoch = start_epoch; epoch < max_epochs && data_left; ++epoch) {
    // Under AutoAdjust the given rates serve their epochs, and the adjusted or searched rate those after.
    const bool automatic = adjust.after_epoch || adjust.search_before;
    const bool scheduled = !automatic || size_t(epoch) < sgd.given_learning_rates;
    double lr = scheduled ? for_epoch(sgd.lr_per_sample, size_t(epoch)) : adjusted_lr;
    const size_t given_mb_size = size_t(for_epoch(sgd.minibatch_sizes, size_t(epoch)));
    const bool search_lr = !scheduled && adjust.search_before;
    const bool search_mb = adjust.adjust_minibatch && size_t(epoch) >= sgd.minibatch_sizes.size();
    if (search_lr || search_mb) search.begin(epoch, epoch_size);
    if (search_lr) {
      const double found = search.learning_rate(
          given_mb_size, *std::max_element(recent_rates.begin(), recent_rates.end()), prev_criterion);
      lr_adjustment_factor = found / lr;
      lr = found;
      recent_rates[size_t(epoch) % recent_rates.size()] = lr;
    }
    adjusted_lr = lr;
    if ((automatic || sgd.min_learning_rate_given) && lr < sgd.min_learning_rate) {
      Log::printf(
          "Learn Rate Per Sample for Epoch[%lld] = %.8g is less than minLearningRatePerSample %.8g. Training "
          "complete.\n",
          epoch + 1, lr, sgd.min_learning_rate);
      if (automatic && rank == 0) save_as_legacy_model(net.model, model_path);
      break;
    }
    if (automatic) set_learning_rate(learner, lr);
    const double momentum = for_epoch(sgd.momentum_per_sample, size_t(epoch));
    size_t mb_size = given_mb_size;
    if (search_mb) {
      // CNTK's AdaptiveMinibatchSizing: a rate reduced from the first epoch's allows a larger least
      // size (by the square root of the reduction); a size chosen before bounds the search to half
      // and twice it, and the search runs every minibatchSizeTuningFrequency epochs.
      size_t smallest = given_mb_size, largest = adjust.minibatch_tuning_max;
      const double change =
          std::sqrt(for_epoch(sgd.lr_per_sample, size_t(epoch)) / sgd.lr_per_sample[0] * lr_adjustment_factor);
      if (change < 1) smallest = size_t(double(smallest) / change);
      if (epoch < 2 && chosen_mb_size != 0) {
        Log::printf(" Before Epoch[2], previous minibatchSize %zu is considered invalid -> resetting.\n",
                    chosen_mb_size);
        chosen_mb_size = 0;
      }
      const size_t frequency = adjust.minibatch_tuning_frequency;
      if (chosen_mb_size != 0 && size_t(epoch) + 1 > frequency && (size_t(epoch) + 1) % frequency != 0) {
        Log::printf(
            " AdaptiveMinibatchSearch: Search for a better minibatchSize in epoch %lld skipped, keeping minibatchSize "
            "of %zu\n",
            epoch + 1, chosen_mb_size);
        mb_size = chosen_mb_size;
      } else {
        if (chosen_mb_size != 0) {
          smallest = std::max(smallest, chosen_mb_size / 2);
          largest = std::min(largest, chosen_mb_size * 2);
        }
        mb_size = search.minibatch_size(lr, smallest, largest, trace_level > 0);
      }
      if (trace_level < 1 && mb_size != chosen_mb_size) Log::printf("Minibatch size adapted to %zu.\n", mb_size);
      chosen_mb_size = mb_size;
    }
    // Parallel epochs read this worker's part of each (global) minibatch.
    const bool parallel_epoch = par.enabled() && size_t(epoch) >= par.start_epoch;
    const size_t partitions = parallel_epoch ? workers : 1, partition = parallel_epoch ? rank : 0;
    // Block momentum and model averaging leave each minibatch's figures local: each worker trains its
    // share of the epoch, and the epoch's figures are summed over the workers at its end.
    const bool local_figures = parallel_epoch && par.method != ParallelTraining::Method::DataParallel && workers > 1;
    const size_t target = local_figures ? epoch_size / workers + (rank < epoch_size % workers ? 1 : 0) : epoch_size;
    set_dropout_rate(net.model, for_epoch(sgd.dropout_rates, size_t(epoch)));
    profiling.epoch_started(epoch == start_epoch);
    std::fprintf(stderr, "\n");
    Log::printf(
        "Starting Epoch %lld: learning rate per sample = %f  effective momentum = %f  momentum as time constant = %.1f "
        "samples\n",
        epoch + 1, lr, std::pow(momentum, double(mb_size)),
        momentum > 0 && momentum < 1 ? -1 / std::log(momentum) : 0.0);
    std::fprintf(stderr, "\n");
    Log::printf("Starting minibatch loop");
    if (parallel_epoch && par.method == ParallelTraining::Method::DataParallel)
      std::fprintf(stderr, ", DataParallelSGD training (myRank = %zu, numNodes = %zu, numGradientBits = %zu)", rank,
                   workers, par.gradient_bits);
    if (parallel_epoch && par.method != ParallelTraining::Method::DataParallel)
      std::fprintf(stderr, ", %s training (myRank = %zu, numNodes = %zu, blockSize = %zu)",
                   par.method == ParallelTraining::Method::BlockMomentum ? "BlockMomentumSGD" : "ModelAveragingSGD",
                   rank, workers, par.block_size);
    if (parallel_epoch && par.distributed_reading) std::fprintf(stderr, ", distributed reading is ENABLED");
    std::fprintf(stderr, ".\n");
    const auto epoch_start = Clock::now();
    auto logged_at = Clock::now();
    double crit_sum = 0, crit_logged = 0;
    size_t samples = 0, samples_logged = 0, mbs = 0, mbs_logged = 0;
    // The epoch and the minibatches are sized in the reader's samples, as in CNTK; the criterion
    // may count fewer (one label per query on a sequence axis of its own).
    size_t read = 0;
    // Each evaluation node's figures over the epoch, and where the last progress line left them.
    std::vector<MinibatchAggregate> evals(net.evaluations.size()), evals_logged(net.evaluations.size());
    while (true) {
      if (read >= target) break;
      // Data-parallel sample counts are over all workers, so every worker takes the same decisions.
      const size_t want = std::min(mb_size * mb_scale, (target - read) * (local_figures ? workers : 1));
      // Without distributed reading every worker reads the whole minibatch and keeps its share.
      const bool decimated = partitions > 1 && !par.distributed_reading;
      io::Minibatch mb = decimated ? decimate(source.next_minibatch(want), partitions, partition)
                                   : source.next_minibatch(want, partitions, partition);
      if (mb.empty() && partitions == 1) {
        data_left = false;
        break;
      }
      bool sweep_end = false;
      for (const auto& s : mb.streams) sweep_end |= s.sweep_end;
      trainer.train_minibatch(arguments_for(source, mb, inputs), sweep_end);  // an empty one still joins in
      if (trainer.previous_minibatch_loss().samples == 0) {                   // no worker had data
        data_left = false;
        break;
      }
      crit_sum += trainer.previous_minibatch_loss().sum;
      samples += trainer.previous_minibatch_loss().samples;
      // This worker's reader samples (its longest stream's), with the metrics after the first
      // summed over the workers where the minibatch was trained by all of them.
      std::vector<MinibatchAggregate> more = trainer.previous_minibatch_additional_metrics();
      size_t mb_read = 0;
      for (const auto& st : mb.streams) mb_read = std::max(mb_read, st.num_samples);
      more.push_back({0.0, mb_read});
      if (parallel_epoch && !local_figures) summed_over_workers(more);
      read += more.back().samples;
      more.pop_back();
      if (evaluation) {
        more.insert(more.begin(), trainer.previous_minibatch_evaluation());
        for (size_t k = 0; k < evals.size(); ++k) evals[k].sum += more[k].sum, evals[k].samples += more[k].samples;
      }
      ++mbs;
      if (sgd.show_every && mbs % sgd.show_every == 0) {
        const double t = seconds_since(logged_at);
        Log::printf(" Epoch[%2lld of %lld]-Minibatch[%4zu-%4zu", epoch + 1, max_epochs, mbs_logged + 1, mbs);
        if (epoch > start_epoch && samples_per_epoch) {  // CNTK shows progress once it knows an epoch's size
          const double mbs_per_epoch = double(samples_per_epoch) / double(mb_size);
          const int digits = std::max(int(std::ceil(std::log10(mbs_per_epoch / double(mbs - mbs_logged)))) - 2, 2);
          std::fprintf(stderr, ", %2.*f%%", digits, 100.0 * double(mbs) / mbs_per_epoch);
        }
        std::fprintf(stderr, "]: ");
        log_criterion(crit_name, crit_sum - crit_logged, samples - samples_logged);
        for (size_t k = 0; k < evals.size(); ++k)
          log_criterion(eval_names[k], evals[k].sum - evals_logged[k].sum, evals[k].samples - evals_logged[k].samples);
        std::fprintf(stderr, "time = %.4fs; samplesPerSecond = %.1f\n", t,
                     double(samples - samples_logged) / std::max(t, 1e-9));
        crit_logged = crit_sum, samples_logged = samples, evals_logged = evals;
        mbs_logged = mbs;
        logged_at = Clock::now();
      }
      if (parallel_epoch && par.sync_perf_stats && mbs % par.sync_perf_stats == 0 && trainer.communicator()) {
        auto& comm = *trainer.communicator();
        std::fprintf(stderr,
                     "Gradient aggregation: %llu bytes in %llu messages (%llu aggregations) since the last report\n",
                     (unsigned long long)comm.counters().bytes_sent, (unsigned long long)comm.counters().messages_sent,
                     (unsigned long long)comm.counters().aggregations);
        comm.reset_counters();
      }
    }
    profiling.epoch_ended();
    if (local_figures) {
      std::vector<MinibatchAggregate> figures = evals;
      figures.push_back({crit_sum, samples});
      summed_over_workers(figures);
      crit_sum = figures.back().sum, samples = figures.back().samples;
      figures.pop_back();
      evals = figures;
    }
    if (samples == 0) break;
    total_samples += samples;
    if (epoch == start_epoch) samples_per_epoch = epoch_size;
    Log::printf("Finished Epoch[%2lld of %lld]: [Training] ", epoch + 1, max_epochs);
    log_criterion(crit_name, crit_sum, samples);
    for (size_t k = 0; k < evals.size(); ++k) log_criterion(eval_names[k], evals[k].sum, evals[k].samples);
    std::fprintf(stderr, "totalSamplesSeen = %zu; learningRatePerSample = %.8g; epochTime=%.6gs\n", total_samples,
                 float(lr), seconds_since(epoch_start));
    // The criterion that controls the learning rate: the training criterion or the first
    // evaluation node (UseEvalCriterionControlLR), on the cross-validation data where it exists.
    double control = adjust.use_eval_criterion && !evals.empty() ? average(evals[0]) : crit_sum / double(samples);
    if (cv_command) {
      Reader cv = make_reader(*cv_command, inputs, /*randomize_default=*/false, 1);
      const auto scores = evaluate_nodes(*cv.source, cv_nodes, inputs, mb_size, parallel).first;
      Log::printf("Finished Epoch[%2lld of %lld]: [Validate] ", epoch + 1, max_epochs);
      for (size_t k = 0; k < scores.size(); ++k)
        log_criterion(node_name(cv_nodes[k]), scores[k].sum, scores[k].samples, k + 1 < scores.size());
      std::fprintf(stderr, "\n");
      if (adjust.use_cv_set) control = average(scores[adjust.use_eval_criterion && scores.size() > 1 ? 1 : 0]);
    }
    // CNTK's AdjustAfterEpoch: every learnRateAdjustInterval epochs their mean control criterion is
    // compared with the previous interval's; a worse one is undone (loadBestModel), and one that
    // improved too little (or too much) changes the rate.
    const size_t since_check = size_t(epoch) % adjust.interval + 1;
    const double weight = double(since_check) - 1 - double(epochs_not_counted);
    avg_criterion =
        std::isinf(avg_criterion) || weight <= 0 ? control : (weight * avg_criterion + control) / (weight + 1);
    const bool had_previous = !std::isinf(prev_criterion);
    bool rolled_back = false, finished = false;
    if (adjust.after_epoch && !scheduled && since_check == adjust.interval) {
      if (std::isnan(avg_criterion) || (had_previous && prev_criterion - avg_criterion < 0)) {
        if (adjust.load_best_model) {
          const std::string best = model_for_epoch(model_path, epoch - (long long)adjust.interval, max_epochs);
          Log::printf("Loading (rolling back to) previous model with best training-criterion value: %s.\n",
                      best.c_str());
          restore_checkpoint(best);
          rolled_back = true;
        }
      }
      const bool poor =
          std::isnan(avg_criterion) ||
          (had_previous && prev_criterion - avg_criterion <= adjust.reduce_if_improve_less_than * prev_criterion);
      if (adjust.continue_reduce) {
        // Once reduced, the rate goes down at every check; the second poor check ends training.
        if (poor && lr_reduced) {
          if (rank == 0) save_as_legacy_model(net.model, model_path);
          Log::printf("Finished training and saved final model\n\n");
          finished = true;
        }
        lr_reduced |= poor;
        if (!finished && lr_reduced) {
          adjusted_lr *= adjust.decrease_factor;
          Log::printf("learnRatePerSample reduced to %.8g\n", adjusted_lr);
        }
      } else if (poor) {
        adjusted_lr *= adjust.decrease_factor;
        Log::printf("learnRatePerSample reduced to %.8g\n", adjusted_lr);
      } else if (had_previous &&
                 prev_criterion - avg_criterion > adjust.increase_if_improve_more_than * prev_criterion) {
        adjusted_lr *= adjust.increase_factor;
        Log::printf("learnRatePerSample increased to %.8g\n", adjusted_lr);
      }
    } else if (std::isnan(avg_criterion)) {
      throw Error("The training criterion is not a number (NAN).");
    }
    if (finished) break;
    if (!rolled_back && since_check == adjust.interval) {
      prev_criterion = avg_criterion;
      epochs_not_counted = 0;
    }
    if (rolled_back) {
      // The epochs since the reloaded one are dropped, and training goes on after it with the new rate.
      if (auto comm = trainer.communicator()) comm->barrier();  // every worker has read the checkpoint
      const long long back_to = epoch - (long long)adjust.interval;
      for (long long e = epoch - 1; e > back_to && rank == 0; --e) {
        Log::printf("SGD: removing model and checkpoint files for epoch %lld after rollback to epoch %lld\n", e + 1,
                    back_to + 1);
        fs::remove(model_for_epoch(model_path, e, max_epochs));
        fs::remove(checkpoint_of(e));
      }
      epoch = back_to;
      data_left = true;  // the reader is back at that epoch's end
      Log::printf("SGD: revoke back to and update checkpoint file for epoch %lld\n", epoch + 1);
      save_epoch(epoch);
    } else {
      // As CNTK: every epoch's model file stays; its checkpoint (the trainer's state and the
      // reader's position; the model part is then replaced by the v1 model) replaces the previous
      // epoch's unless keepCheckPointFiles. With loadBestModel the checkpoint that a rollback
      // would return to stays until the next check.
      Log::printf("SGD: Saving checkpoint model '%s'\n", model_for_epoch(model_path, epoch, max_epochs).c_str());
      save_epoch(epoch);
      if (rank == 0 && !sgd.keep_checkpoint_files) {
        if (!(adjust.after_epoch && adjust.load_best_model)) {
          if (epoch > 0) fs::remove(checkpoint_of(epoch - 1));
        } else {
          if (since_check != 1) fs::remove(checkpoint_of(epoch - 1));
          if (since_check == adjust.interval && epoch >= (long long)adjust.interval)
            fs::remove(checkpoint_of(epoch - (long long)adjust.interval));
        }
      }
    }
    if (adjusted_lr < 1e-12)
      Log::printf("learnRate per sample is reduced to %.8g which is below 1e-12. stop training.\n", adjusted_lr);
  }
  if (rank == 0 && !fs::exists(model_path)) save_as_legacy_model(net.model, model_path);  // data ended early
  if (auto comm = trainer.communicator()) comm->barrier();  // the model is written before any worker reads it
  profiling.finish();
}

void test(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  FunctionPtr model = load_model(c);
  const std::vector<Variable> metrics = select_nodes(model, c, "evalNodeNames", true);
  if (metrics.empty()) throw ValueError("the model '" + c.get("modelPath") + "' has no criterion or evaluation node");
  const std::vector<Variable> inputs = leaf_inputs(model);
  Reader reader = make_reader(c, inputs, /*randomize_default=*/false, 1);
  io::MinibatchSource& source = *reader.source;
  const size_t mb_size = size_t(config_to_double(c.get_array("minibatchSize", {"40960"})[0], "minibatchSize"));
  const auto [sums, mbs] = evaluate_nodes(source, metrics, inputs, mb_size, parallel_enabled(c));
  Log::printf("Final Results: Minibatch[1-%zu]: ", mbs);
  for (size_t i = 0; i < metrics.size(); ++i) {
    log_criterion(node_name(metrics[i]), sums[i].sum, sums[i].samples);
    if (metrics[i].owner()->op_name() == "CrossEntropyWithSoftmax" && sums[i].samples)
      std::fprintf(stderr, "perplexity = %.8f; ", std::exp(average(sums[i])));
  }
  std::fprintf(stderr, "\n");
}

// Writes each output node's values to <outputPath>.<node name> (outputPath "-": stdout), one
// line per sample unless the format block says otherwise.
void write(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  if (parallel_enabled(c) && worker_global_rank() != 0) return;  // CNTK writes on the main worker only
  const WriteFormat format =
      c.exists("format") ? WriteFormat::read(
                               [f = c.block("format")](const std::string& key) {
                                 return f->exists_here(key) ? std::optional<std::string>(f->get(key)) : std::nullopt;
                               },
                               "write")
                         : WriteFormat();
  FunctionPtr model = load_model(c);
  const std::vector<Variable> outputs = select_nodes(model, c, "outputNodeNames", false);
  if (outputs.empty()) throw ValueError("the model '" + c.get("modelPath") + "' has no output node to write");
  const std::vector<Variable> inputs = leaf_inputs(model);
  Reader reader = make_reader(c, inputs, /*randomize_default=*/false, 1);
  io::MinibatchSource& source = *reader.source;
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
  auto put = [](std::FILE* f, const std::string& s) { std::fputs(s.c_str(), f); };
  for (size_t i = 0; i < outputs.size(); ++i)
    put(files[i], WriteFormat::processed(format.prologue, node_name(outputs[i]), 0));
  size_t minibatch = 0;
  while (true) {
    io::Minibatch mb = source.next_minibatch(10000);
    if (mb.empty()) break;
    const VariableValues args = arguments_for(source, mb, inputs);
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
    for (size_t i = 0; i < outputs.size(); ++i)
      format.print(files[i], outputs[i], values[i], node_name(outputs[i]), minibatch);
    ++minibatch;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    put(files[i], WriteFormat::processed(format.epilogue, node_name(outputs[i]), minibatch));
    if (files[i] != stdout && std::fclose(files[i]) != 0)
      throw IOError("cannot finish writing " + node_name(outputs[i]));
  }
}

// dumpNode (CNTK's DoDumpNodes): the node `nodeName` (all nodes by default, and when the model
// has no such node), or those whose names match `nodeNameRegex` as a whole, written as CNTK's
// DumpNodeInfo with printValues / printMetadata to outputFile (default modelPath.nodeName.txt).
void dump_node(const ActionContext& ctx) {
  const ConfigRecord& c = *ctx.config;
  if (parallel_enabled(c) && worker_global_rank() != 0) return;  // as write: the main worker only
  const std::string model_path = c.get("modelPath");
  std::ifstream in(model_path, std::ios::binary);
  if (!in) throw IOError("cannot read model file '" + model_path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!is_legacy_model(bytes)) throw NotImplementedError("dumpNode reads v1 model files only");
  const std::string node_name = c.get("nodeName", "__AllNodes__"), regex = c.get("nodeNameRegex", "");
  LegacyDumpOptions options;
  options.values = c.get_bool("printValues", true);
  options.metadata = c.get_bool("printMetadata", true);
  if (!options.values && !options.metadata)
    throw ValueError("dumpNode: printValues and printMetadata are both false, so there is nothing to dump");
  // A node is named as the file names it or as the engine does (files written from a graph
  // carry its uid in the name); names compare as the v1 network keeps them, case-insensitively.
  auto same = [](const std::string& a, const std::string& b) {
    return !v1::NoCaseLess()(a, b) && !v1::NoCaseLess()(b, a);
  };
  auto matches = [&](const std::string& file_name, const std::function<bool(const std::string&)>& test) {
    return test(file_name) || test(v1::uid_and_name(file_name).second);
  };
  if (!regex.empty()) {
    std::regex pattern;
    try {
      pattern = std::regex(regex);
    } catch (const std::regex_error& e) {
      throw ValueError("dumpNode: nodeNameRegex '" + regex + "' is not a regular expression (" + e.what() + ")");
    }
    options.select = [=](const std::string& n) {
      return matches(n, [&](const std::string& name) { return std::regex_match(name, pattern); });
    };
  } else {
    auto is_node = [=](const std::string& n) {
      return matches(n, [&](const std::string& name) { return same(name, node_name); });
    };
    const v1::Network net = v1::read_network(bytes, model_path);
    if (std::any_of(net.nodes.begin(), net.nodes.end(), [&](const auto& kv) { return is_node(kv.second.name); }))
      options.select = is_node;
    else if (node_name != "__AllNodes__")
      Log::printf("Warning: node name '%s' does not exist in the network. dumping all nodes instead.\n",
                  node_name.c_str());
  }
  const std::string out_path = c.get("outputFile", model_path + "." + node_name + ".txt");
  std::ofstream out(out_path);
  out << dump_legacy_model(bytes, model_path, options);
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
