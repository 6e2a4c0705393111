// Learners: update a set of parameters from their gradients, as CNTK's
// learners do (SGD, momentum SGD, Nesterov, AdaGrad, AdaDelta, FSAdaGrad, Adam,
// Adamax, RMSProp, and a learner whose update is a graph).
//
// Gradients are sums over the samples of a minibatch (what the Trainer hands
// over). A learning-rate schedule with reference minibatch size 0 means "per
// minibatch": the update uses lr / n times the summed gradient of n samples;
// reference size N means lr / N per sample. Momentum m with reference size N
// becomes m ** (n / N) for a minibatch of n samples.
#pragma once
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cntk/dictionary.h"
#include "cntk/function.h"
#include "cntk/schedule.h"
#include "cntk/variable.h"

namespace cntk {

// Options shared by all standard learners (CNTK's AdditionalLearningOptions).
struct AdditionalLearningOptions {
  double l1_regularization_weight = 0.0;  // per sample
  double l2_regularization_weight = 0.0;  // per sample
  TrainingParameterSchedule<double> gaussian_noise_injection_std_dev = 0.0;
  double gradient_clipping_threshold_per_sample = std::numeric_limits<double>::infinity();
  bool gradient_clipping_with_truncation = true;
  // The learner's reference minibatch size. Unset: gradients are used as summed.
  // Set to 0 (kIgnoredMinibatchSize): the learner works on mean gradients
  // (CNTK's "compatible mode", the deprecated use_mean_gradient=True).
  std::optional<size_t> minibatch_size;
};

// Whether momentum is unit-gain (scales the gradient by 1 - momentum) by default.
bool default_unit_gain_value();
void set_default_unit_gain_value(bool value);

// A parameter and its gradient (same shape and type; summed over the minibatch).
using ParameterGradients = std::vector<std::pair<Variable, NDArrayView>>;

class Learner;
using LearnerPtr = std::shared_ptr<Learner>;

class Learner {
 public:
  virtual ~Learner() = default;

  // Updates the parameters from their gradients over a minibatch of `sample_count`
  // samples. Returns false when learning has stopped (the learning rate is 0).
  // The gradients may be modified in place.
  virtual bool update(ParameterGradients& gradients, size_t sample_count, bool sweep_end = false) = 0;

  const std::vector<Variable>& parameters() const { return parameters_; }

  // The current value of the learning-rate schedule (as given, not per sample).
  double learning_rate() const { return current(lr_schedule_); }
  const LearningRateSchedule& learning_rate_schedule() const { return lr_schedule_; }
  void set_learning_rate_schedule(const LearningRateSchedule& s) { lr_schedule_ = s; }
  // Replaces the schedule; the new one starts counting from the current position.
  void reset_learning_rate(const LearningRateSchedule& schedule);
  virtual void reset_smoothed_gradients() {}

  size_t total_number_of_samples_seen() const { return sample_count_; }
  size_t total_number_of_minibatches_seen() const { return minibatch_count_; }
  size_t total_number_of_sweeps_seen() const { return sweep_count_; }

  const AdditionalLearningOptions& options() const { return options_; }
  std::optional<size_t> minibatch_size() const { return options_.minibatch_size; }
  void set_minibatch_size(std::optional<size_t> n) { options_.minibatch_size = n; }
  // True when the learner works on mean gradients (reference minibatch size set to 0).
  bool is_compatible_mode() const { return options_.minibatch_size && *options_.minibatch_size == 0; }
  static bool is_compatible_mode(const TrainingParameterSchedule<double>& s) {
    return s.minibatch_size() == TrainingParameterSchedule<double>::kIgnoredMinibatchSize;
  }

  // The learning rate applied to one sample's gradient for a minibatch of n samples
  // (to the mean gradient in compatible mode).
  double learning_rate_for(size_t minibatch_size) const;

  // The learner's state (counts, schedule, smoothed gradients) under CNTK's
  // checkpoint keys, and its restoration (parameters are matched by position).
  virtual Dictionary create_checkpoint() const;
  virtual void restore_from_checkpoint(const Dictionary& checkpoint);

  // Receives hyper-parameter values ("Learning rate per minibatch", "Momentum per
  // 10 samples", ...) whenever they change, as CNTK's learners write them to
  // progress writers.
  using ProgressReporter = std::function<void(const std::string& name, double value)>;
  void add_progress_reporter(ProgressReporter r) { reporters_.push_back(std::move(r)); }

 protected:
  Learner(std::vector<Variable> parameters, LearningRateSchedule lr, AdditionalLearningOptions options);

  template <class T>
  T current(const TrainingParameterSchedule<T>& s) const {
    return s[s.is_sweep_based() ? sweep_count_ : sample_count_];
  }
  void record_update(size_t sample_count, bool sweep_end) {
    sample_count_ += sample_count;
    ++minibatch_count_;
    if (sweep_end) ++sweep_count_;
  }
  // The gradient of parameter `p` in `g`; ValueError when it is missing.
  static NDArrayView& find_gradient(ParameterGradients& g, const Variable& p);

  // Reports the schedule's current value under `name` when it changed.
  void report(const TrainingParameterSchedule<double>& s, const std::string& name) const;

  std::vector<Variable> parameters_;
  LearningRateSchedule lr_schedule_;
  AdditionalLearningOptions options_;
  size_t sample_count_ = 0, minibatch_count_ = 0, sweep_count_ = 0;

 private:
  std::vector<ProgressReporter> reporters_;
  mutable std::map<std::string, double> reported_;
};

// A schedule as a Dictionary (CNTK's keys: epoch_size, ref_mb_size, schedule) and back.
Dictionary schedule_to_dictionary(const TrainingParameterSchedule<double>& s);
TrainingParameterSchedule<double> schedule_from_dictionary(const Dictionary& d);

// Standard learners: vanilla SGD.
LearnerPtr sgd_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                       const AdditionalLearningOptions& options = {});
LearnerPtr momentum_sgd_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                                const MomentumSchedule& momentum, bool unit_gain = default_unit_gain_value(),
                                const AdditionalLearningOptions& options = {});
LearnerPtr nesterov_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                            const MomentumSchedule& momentum, bool unit_gain = default_unit_gain_value(),
                            const AdditionalLearningOptions& options = {});
LearnerPtr adagrad_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                           bool need_ave_multiplier = true, const AdditionalLearningOptions& options = {});
LearnerPtr adadelta_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr, double rho = 0.95,
                            double epsilon = 1e-8, const AdditionalLearningOptions& options = {});
// CNTK's default variance momentum: a per-sample time constant of 2 * 3600 * 100 samples.
MomentumSchedule default_variance_momentum();
LearnerPtr fsadagrad_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                             const MomentumSchedule& momentum, bool unit_gain = default_unit_gain_value(),
                             const MomentumSchedule& variance_momentum = default_variance_momentum(),
                             const AdditionalLearningOptions& options = {});
LearnerPtr adam_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                        const MomentumSchedule& momentum, bool unit_gain = default_unit_gain_value(),
                        const MomentumSchedule& variance_momentum = default_variance_momentum(), double epsilon = 1e-8,
                        bool adamax = false, const AdditionalLearningOptions& options = {});
LearnerPtr rmsprop_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr, double gamma,
                           double inc, double dec, double max, double min, bool need_ave_multiplier = true,
                           const AdditionalLearningOptions& options = {});

// A learner whose update is a graph: each update writes the gradients into the
// `gradients` constants (one per parameter, same order) and evaluates `update`,
// whose assign operations change the parameters.
LearnerPtr universal_learner(const std::vector<Variable>& parameters, const std::vector<Variable>& gradients,
                             const FunctionPtr& update);

// A learner whose update is a caller-supplied function (Python's UserLearner).
// The function returns false when learning has stopped.
using LearnerUpdateFunction = std::function<bool(ParameterGradients&, size_t sample_count, bool sweep_end)>;
LearnerPtr callback_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                            LearnerUpdateFunction update);

}  // namespace cntk
