// AutoAdjust's searches before an epoch: trial trainings ("mini-epochs") from the epoch's start,
// each undone afterwards, pick its learning rate (SearchBeforeEpoch, CNTK's SearchForBestLearnRate)
// and its minibatch size (autoAdjustMinibatch, CNTK's AdaptiveMinibatchSizing).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "brainscript/sgd_config.h"
#include "cntk/trainer.h"
#include "io/minibatch_source.h"

namespace cntk::brainscript {

// Replaces the learner's rate from now on by a constant per-sample rate (AutoAdjust's rate); a
// distributed learner's local learner too.
void set_learning_rate(const LearnerPtr& learner, double lr_per_sample);

class EpochSearch {
 public:
  // Told each trial's epoch (0-based), figures (the criterion's, then each evaluation node's),
  // rate and minibatch size (CNTK logged these as "Finished Mini-Epoch" lines).
  using Report =
      std::function<void(long long epoch, const std::vector<MinibatchAggregate>& figures, double rate, size_t mb_size)>;

  EpochSearch(Trainer& trainer, const LearnerPtr& learner, io::MinibatchSource& source,
              const std::vector<Variable>& inputs, const FunctionPtr& model, const Variable& criterion,
              const std::vector<Variable>& evaluations, const SGDSettings& sgd, Report report)
      : trainer_(trainer),
        learner_(learner),
        source_(source),
        inputs_(inputs),
        model_(model),
        criterion_(criterion),
        evaluations_(evaluations),
        sgd_(sgd),
        report_(std::move(report)) {}

  // Starts the searches of epoch `epoch` (0-based) of `epoch_size` samples from the current state.
  void begin(long long epoch, size_t epoch_size);

  // The epoch's rate in minibatches of `mb_size`: from a start rate (above the largest recent one
  // when there is one) down by 0.618 until a trial's criterion is no worse than the unchanged
  // model's, blended with `prev_criterion` (the last epoch's); in the first numBestSearchEpoch
  // epochs a bracketing search between 0.01 / mb_size and that rate follows.
  double learning_rate(size_t mb_size, double largest_recent, double prev_criterion);

  // The epoch's minibatch size at rate `rate`: trials from `smallest` up by sqrt(2) (rounded to
  // multiples of 64) while their criterion stays within minibatchSearchCriterionErrorMargin
  // percent of the first's and the size within `largest`; the last such size.
  size_t minibatch_size(double rate, size_t smallest, size_t largest, bool verbose);

 private:
  // Trains from the epoch's start at `rate` per sample until more than the search's samples (or
  // the epoch) are read, as CNTK's mini-epochs stop; rate 0 only evaluates. Returns the
  // criterion's average and restores the state before it.
  double trial(double rate);

  // What a trial changes: parameter and constant values (batch-normalization statistics), the
  // learner's state and the reader's position.
  void take_snapshot();
  void restore_snapshot();
  std::vector<Variable> state_variables() const;

  Trainer& trainer_;
  LearnerPtr learner_;
  io::MinibatchSource& source_;
  const std::vector<Variable>& inputs_;
  FunctionPtr model_;
  Variable criterion_;
  std::vector<Variable> evaluations_;
  const SGDSettings& sgd_;
  Report report_;
  long long epoch_ = 0;
  size_t epoch_size_ = 0, mb_size_ = 0, limit_ = 0;
  std::vector<NDArrayView> values_;
  Dictionary learner_state_, source_state_;
};

}  // namespace cntk::brainscript
