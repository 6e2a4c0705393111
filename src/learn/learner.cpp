// Learner base: schedules, sample counting, learning rate per minibatch size;
// the universal (graph) learner and the callback learner.
#include <atomic>
#include <unordered_set>

#include "cntk/evaluation.h"
#include "cntk/learner.h"

namespace cntk {

namespace {
std::atomic<bool> g_default_unit_gain{true};
}

bool default_unit_gain_value() { return g_default_unit_gain; }
void set_default_unit_gain_value(bool value) { g_default_unit_gain = value; }

MomentumSchedule momentum_as_time_constant_schedule(double time_constant) {
  return MomentumSchedule(momentum_from_time_constant(time_constant), 1);
}

MomentumSchedule momentum_as_time_constant_schedule(const std::vector<double>& time_constants, size_t epoch_size) {
  MomentumSchedule s(time_constants, epoch_size, 1);
  s.transform(momentum_from_time_constant);
  return s;
}

MomentumSchedule momentum_as_time_constant_schedule(const std::vector<std::pair<size_t, double>>& time_constants,
                                                    size_t epoch_size) {
  MomentumSchedule s(time_constants, epoch_size, 1);
  s.transform(momentum_from_time_constant);
  return s;
}

MomentumSchedule default_variance_momentum() { return momentum_as_time_constant_schedule(2 * 3600 * 100); }

Learner::Learner(std::vector<Variable> parameters, LearningRateSchedule lr, AdditionalLearningOptions options)
    : parameters_(std::move(parameters)), lr_schedule_(std::move(lr)), options_(std::move(options)) {
  if (parameters_.empty()) throw ValueError("a learner needs at least one parameter");
  std::unordered_set<VariableImpl*> seen;
  for (auto& p : parameters_) {
    if (!p.defined() || !p.is_parameter())
      throw ValueError("learners update parameters only; " + p.str() + " is not a parameter");
    if (!seen.insert(p.get()).second) throw ValueError("the learner's parameters contain " + p.str() + " twice");
  }
}

double Learner::learning_rate_for(size_t minibatch_size) const {
  const double lr = learning_rate();
  const double n = double(minibatch_size);
  if (is_compatible_mode(lr_schedule_))
    // Per minibatch: applied to the mean gradient, i.e. lr / n on the summed one.
    return is_compatible_mode() ? lr : lr / n;
  const double ref = double(lr_schedule_.minibatch_size());
  return is_compatible_mode() ? lr * n / ref : lr / ref;
}

void Learner::reset_learning_rate(const LearningRateSchedule& schedule) {
  // The new schedule starts at the current count. As in CNTK, the learner keeps
  // its schedule's reference minibatch size: only the values and the epoch size change.
  const size_t offset = schedule.is_sweep_based() ? sweep_count_ : sample_count_;
  auto& entries = lr_schedule_.mutable_entries();
  entries.clear();
  lr_schedule_.set_epoch_size(schedule.epoch_size());
  for (auto& [k, v] : schedule.entries()) entries[offset + k] = v;
}

void Learner::report(const TrainingParameterSchedule<double>& s, const std::string& name) const {
  const double value = current(s);
  auto it = reported_.find(name);
  if (it != reported_.end() && it->second == value) return;
  reported_[name] = value;
  if (reporters_.empty()) return;
  const std::string label = is_compatible_mode(s) ? name + " per minibatch"
                                                  : name + " per " + std::to_string(s.minibatch_size()) + " samples";
  for (auto& r : reporters_) r(label, value);
}

// ------------------------------------------------------------------ checkpoints

Dictionary schedule_to_dictionary(const TrainingParameterSchedule<double>& s) {
  Dictionary entries;
  for (auto& [count, value] : s.entries()) entries[std::to_string(count)] = DictValue(value);
  Dictionary d;
  d["version"] = DictValue(int64_t(2));
  d["type"] = DictValue("TrainingParameterSchedule");
  d["epoch_size"] = DictValue(s.epoch_size());
  d["ref_mb_size"] = DictValue(s.minibatch_size());
  d["schedule"] = DictValue(std::move(entries));
  return d;
}

TrainingParameterSchedule<double> schedule_from_dictionary(const Dictionary& d) {
  auto get = [&](const char* key) -> const DictValue& {
    auto it = d.find(key);
    if (it == d.end())
      throw ValueError(std::string("training parameter schedule: the dictionary has no '") + key + "'");
    return it->second;
  };
  // Version 1 schedules (CNTK 2.0) have a unit instead: 0 = per sample (reference size 1), 1 = per minibatch.
  auto unit = d.find("unit");
  size_t ref = d.count("ref_mb_size") || unit == d.end() ? size_t(get("ref_mb_size").as_int())
                                                         : (unit->second.as_int() == 0 ? 1 : 0);
  TrainingParameterSchedule<double> s(0.0, ref);
  s.set_epoch_size(size_t(get("epoch_size").as_int()));
  auto& entries = s.mutable_entries();
  entries.clear();
  for (auto& [count, value] : get("schedule").as_dict()) entries[std::stoull(count)] = value.as_double();
  if (entries.empty()) throw ValueError("training parameter schedule: the schedule is empty");
  return s;
}

Dictionary Learner::create_checkpoint() const {
  Dictionary d;
  d["version"] = DictValue(int64_t(3));
  d["type"] = DictValue("Learner");
  d["sample_count"] = DictValue(sample_count_);
  d["minibatchCount"] = DictValue(minibatch_count_);
  d["sweepCount"] = DictValue(sweep_count_);
  d["learnig_rate_schedule"] = DictValue(schedule_to_dictionary(lr_schedule_));  // CNTK's spelling of the key
  return d;
}

void Learner::restore_from_checkpoint(const Dictionary& d) {
  auto get = [&](const char* key) -> const DictValue& {
    auto it = d.find(key);
    if (it == d.end()) throw ValueError(std::string("learner checkpoint: no '") + key + "' in the checkpoint");
    return it->second;
  };
  sample_count_ = size_t(get("sample_count").as_int());
  minibatch_count_ = size_t(get("minibatchCount").as_int());
  auto sweeps = d.find("sweepCount");
  sweep_count_ = sweeps == d.end() ? 0 : size_t(sweeps->second.as_int());
  lr_schedule_ = schedule_from_dictionary(get("learnig_rate_schedule").as_dict());
}

NDArrayView& Learner::find_gradient(ParameterGradients& g, const Variable& p) {
  for (auto& [var, grad] : g)
    if (var == p) return grad;
  throw ValueError("learner update: no gradient was given for " + p.str());
}

// ------------------------------------------------------------- universal learner

namespace {

class UniversalLearner : public Learner {
 public:
  UniversalLearner(const std::vector<Variable>& parameters, const std::vector<Variable>& gradients, FunctionPtr update)
      : Learner(parameters, LearningRateSchedule(1.0), {}), gradients_(gradients), update_(std::move(update)) {
    if (!update_) throw ValueError("universal learner: no update function");
    if (gradients_.size() != parameters_.size())
      throw ValueError("universal learner: " + std::to_string(parameters_.size()) + " parameters but " +
                       std::to_string(gradients_.size()) + " gradients");
    auto inputs = update_->inputs();
    auto contains = [&](const Variable& v) {
      for (auto& i : inputs)
        if (i == v) return true;
      return false;
    };
    for (size_t i = 0; i < parameters_.size(); ++i) {
      if (!gradients_[i].is_constant())
        throw ValueError("universal learner: the gradient stand-in for " + parameters_[i].str() +
                         " must be a constant");
      if (gradients_[i].shape() != parameters_[i].shape())
        throw ValueError("universal learner: gradient stand-in " + gradients_[i].str() + " does not match " +
                         parameters_[i].str());
      if (!contains(parameters_[i]))
        throw ValueError("universal learner: the update function does not use the parameter " + parameters_[i].str());
    }
    if (!update_->arguments().empty())
      throw ValueError("universal learner: the update function has inputs (" + update_->arguments()[0].str() +
                       ", ...); it may only use parameters, constants and the gradients");
  }

  bool update(ParameterGradients& gradients, size_t sample_count, bool sweep_end) override {
    report(lr_schedule_, "Learning rate");
    if (sample_count == 0) throw ValueError("learner update: the minibatch is empty (0 samples)");
    for (size_t i = 0; i < parameters_.size(); ++i) {
      NDArrayView g = find_gradient(gradients, parameters_[i]).to_dense();
      if (g.dtype() != gradients_[i].dtype()) g = g.cast(gradients_[i].dtype());
      gradients_[i].set_value(g);
    }
    std::vector<Value> outs;
    forward(update_, {}, update_->outputs(), outs, false);
    for (auto& p : parameters_) ++p.impl()->value_version;
    record_update(sample_count, sweep_end);
    return true;
  }

 private:
  std::vector<Variable> gradients_;
  FunctionPtr update_;
};

// --------------------------------------------------------------- callback learner

class CallbackLearner : public Learner {
 public:
  CallbackLearner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr, LearnerUpdateFunction f)
      : Learner(parameters, lr, {}), f_(std::move(f)) {
    if (!f_) throw ValueError("user learner: no update function");
  }

  bool update(ParameterGradients& gradients, size_t sample_count, bool sweep_end) override {
    ParameterGradients mine;
    for (auto& p : parameters_) mine.emplace_back(p, find_gradient(gradients, p));
    bool result = f_(mine, sample_count, sweep_end);
    for (auto& p : parameters_) ++p.impl()->value_version;
    record_update(sample_count, sweep_end);
    return result;
  }

 private:
  LearnerUpdateFunction f_;
};

}  // namespace

LearnerPtr universal_learner(const std::vector<Variable>& parameters, const std::vector<Variable>& gradients,
                             const FunctionPtr& update) {
  return std::make_shared<UniversalLearner>(parameters, gradients, update);
}

LearnerPtr callback_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                            LearnerUpdateFunction update) {
  return std::make_shared<CallbackLearner>(parameters, lr, std::move(update));
}

}  // namespace cntk
