// The SGD block of a train command (CNTK's SGDParams) with its parallelTrain block, read into
// settings, and the engine learner they describe.
#pragma once
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "brainscript/config.h"
#include "cntk/distributed.h"
#include "cntk/learner.h"

namespace cntk::brainscript {

// SGD's `ParallelTrain` block (read only when the command line enabled parallel training).
struct ParallelTraining {
  enum class Method { None, DataParallel, BlockMomentum, ModelAveraging };
  Method method = Method::None;
  size_t start_epoch = 0;  // 0-based: the first epoch trained in parallel
  bool distributed_reading = true;
  bool distributed_reading_given = false;
  size_t gradient_bits = 32;  // 32 (64 for double precision): exact sums
  bool zero_threshold_for_1bit = true;
  size_t block_size = 0;                        // BlockMomentumSGD, ModelAveragingSGD: samples over all workers
  double block_momentum_as_time_constant = -1;  // < 0: CNTK's default, 1 - 1/workers per block
  bool use_nesterov_momentum = true, reset_sgd_momentum = true;
  double block_learning_rate = 1.0;
  size_t sync_perf_stats = 0;  // report aggregation traffic every N minibatches (0: never)
  bool enabled() const { return method != Method::None; }
};

// SGD's `AutoAdjust` block: CNTK's learning-rate adaptation after each epoch (AdjustAfterEpoch)
// from the training criterion, or the cross-validation criterion when a cvReader is given; or
// its search for a rate before each epoch (SearchBeforeEpoch), for epochs past the given rates.
struct LearningRateAdjustment {
  bool after_epoch = false;            // autoAdjustLR = AdjustAfterEpoch
  bool search_before = false;          // autoAdjustLR = SearchBeforeEpoch
  size_t num_prev_learn_rates = 5;     // the search starts above the largest of the last ones
  size_t num_best_search_epoch = 1;    // epochs whose search ends with a bracketing search
  std::vector<double> search_samples;  // per epoch: samples a trial trains on (numSamples4Search)
  // autoAdjustMinibatch: the size of epochs past the given sizes is searched.
  bool adjust_minibatch = false;
  size_t minibatch_tuning_frequency = 1, minibatch_tuning_max = 1048576;
  size_t minibatch_error_margin = 1;  // percent over the first trial's criterion a larger size may be
  double reduce_if_improve_less_than = 0, decrease_factor = 0.618;
  double increase_if_improve_more_than = std::numeric_limits<double>::infinity(), increase_factor = 1.382;
  bool continue_reduce = false;     // once reduced, reduce at every check; stop at the second poor one
  bool load_best_model = true;      // a worse epoch is undone: its predecessor's model and state are reloaded
  size_t interval = 1;              // learnRateAdjustInterval: epochs whose mean criterion is compared
  bool use_cv_set = true;           // UseCVSetControlLRIfCVExists
  bool use_eval_criterion = false;  // UseEvalCriterionControlLR: the first evaluation node decides
};

// A per-epoch value: epoch i takes entry i, the last entry holds from then on.
template <typename T>
T for_epoch(const std::vector<T>& values, size_t epoch) {
  return values[std::min(epoch, values.size() - 1)];
}

struct SGDSettings {
  long long max_epochs = 0;
  size_t epoch_size = 0;  // samples; 0: one sweep of the data
  // Per-epoch values (the last one holds on).
  std::vector<double> minibatch_sizes, lr_per_sample, momentum_per_sample, dropout_rates;
  // How many epochs have a rate given (AutoAdjust sets those after); lr_per_sample holds CNTK's
  // placeholder 0.5 / minibatchSize when a search finds every rate.
  size_t given_learning_rates = 0;
  std::string update = "none";  // gradUpdateType, lower case
  bool ave_multiplier = true;   // normWithAveMultiplier (AdaGrad, RmsProp)
  double rms_gamma = 0.99, rms_inc = 1.2, rms_dec = 0.75, rms_max = 10.0, rms_min = 0.1;
  double variance_time_constant = 2 * 3600 * 100;  // FSAdaGrad
  double adam_mean_momentum = 0.9, adam_var_momentum = 0.999, adam_epsilon = 1e-8;
  AdditionalLearningOptions options;
  size_t show_every = 10;  // numMBsToShowResult
  bool keep_checkpoint_files = false;
  // minLearningRatePerSample: training ends at an epoch whose rate is below it. CNTK applied its
  // default to given rates too, so that a rate of 0 ended training at once; here a given schedule
  // is followed unless the key is set or AutoAdjust computes the rate (a rate of 0 then evaluates
  // the criterion without training, which configs and tests rely on).
  double min_learning_rate = 1e-9;
  bool min_learning_rate_given = false;
  LearningRateAdjustment adjust;
  ParallelTraining parallel;
};

// Reads the block. `parallel`: the top-level parallelTrain switch (CNTK's MPI wrapper exists);
// without it a ParallelTrain block is ignored with CNTK's message. `workers` sizes the block
// momentum defaults.
SGDSettings read_sgd_block(const ConfigRecord& sgd, DataType dtype, bool parallel, size_t workers);

// The learner of `parameters` for these settings, its schedules stepping every `epoch_size`
// samples; a distributed learner around it when training is parallel.
LearnerPtr make_learner(const SGDSettings& s, const std::vector<Variable>& parameters, size_t epoch_size);

}  // namespace cntk::brainscript
