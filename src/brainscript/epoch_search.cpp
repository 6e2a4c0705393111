// AutoAdjust's searches before an epoch (see epoch_search.h). The constants are CNTK's, its
// float ones (0.618f, 1/8/0.618f, 0.3f, sqrtf(2)) included, so that the searches take CNTK's steps.
#include "brainscript/epoch_search.h"

#include <algorithm>
#include <cmath>

#include "brainscript/command_line.h"
#include "brainscript/reader_config.h"
#include "cntk/distributed.h"

namespace cntk::brainscript {

void set_learning_rate(const LearnerPtr& learner, double lr_per_sample) {
  const LearningRateSchedule rate(lr_per_sample, 1);
  learner->reset_learning_rate(rate);
  if (auto d = std::dynamic_pointer_cast<DistributedLearner>(learner)) d->local_learner()->reset_learning_rate(rate);
}

void EpochSearch::begin(long long epoch, size_t epoch_size) {
  epoch_ = epoch, epoch_size_ = epoch_size;
  limit_ = std::min(size_t(for_epoch(sgd_.adjust.search_samples, size_t(epoch))), epoch_size);
  take_snapshot();
}

double EpochSearch::learning_rate(size_t mb_size, double largest_recent, double prev_criterion) {
  mb_size_ = mb_size;
  const double min_rate = sgd_.min_learning_rate * double(0.3f);
  double rate = largest_recent > 0 ? largest_recent / double(0.618f) / double(0.618f)
                                   : double(1.0f / 8.0f / 0.618f) / std::sqrt(double(mb_size));
  double base = trial(0);
  if (std::isinf(prev_criterion)) prev_criterion = base;
  // How far the trial's criterion stands for the epoch's: by its share of an explicit epochSize.
  const double ratio = sgd_.epoch_size ? std::pow(double(limit_) / double(epoch_size_), double(1.0f / 2)) : 0.3;
  base = std::max(ratio * prev_criterion + (1 - ratio) * base, base);
  double criterion;
  do {
    rate *= 0.618;
    criterion = trial(rate);
  } while (std::isnan(criterion) || (criterion > base && rate > min_rate));
  double best = rate;
  if (size_t(epoch_) < sgd_.adjust.num_best_search_epoch) {
    double left = 0.01 / double(mb_size), right = rate, right_criterion = criterion;
    double left_criterion = trial(left);
    while (right > left * 1.2) {
      if (right_criterion > left_criterion) {
        right *= 0.618;
        right_criterion = trial(right);
      } else {
        left /= 0.618;
        left_criterion = trial(left);
      }
    }
    best = left_criterion < right_criterion ? left : right;
  }
  Log::printf(" SearchForBestLearnRate Epoch[%lld]: Best learningRatePerSample = %.10g, baseCriterion=%.10g\n",
              epoch_ + 1, best, base);
  return best;
}

size_t EpochSearch::minibatch_size(double rate, size_t smallest, size_t largest, bool verbose) {
  if (smallest > largest) return largest;  // a reduced rate can raise the lower bound past it
  // CNTK rounded to 0 below 32; a trial needs samples
  const auto round64 = [](float v) { return std::max<size_t>(64, 64 * size_t((v + 32) / 64)); };
  Log::printf(" AdaptiveMinibatchSearch Epoch[%lld]: Evaluating minibatchSizes %zu..%zu\n", epoch_ + 1,
              round64(float(smallest)), round64(float(largest)));
  const double margin = 1.0 + double(sgd_.adjust.minibatch_error_margin) / 100.0;
  size_t good = 0;
  double base = 0, good_criterion = 0;
  for (float size = float(smallest); size <= float(largest); size *= std::sqrt(2.0f)) {
    mb_size_ = round64(size);
    const double criterion = trial(rate);
    if (good == 0) {
      base = good_criterion = criterion;
    } else if (!std::isnan(criterion) && criterion > base * margin) {
      break;
    } else {
      good_criterion = criterion;
    }
    good = mb_size_;
  }
  if (verbose)
    Log::printf(
        " AdaptiveMinibatchSearch Epoch[%lld]: Search successful. New minibatchSize is %zu. epochCriterion = %.8f "
        "vs baseCriterion = %.8f\n",
        epoch_ + 1, good, good_criterion, base);
  return good;
}

double EpochSearch::trial(double rate) {
  std::vector<MinibatchAggregate> totals(1 + evaluations_.size());  // the criterion, the evaluation nodes
  // Rate 0 evaluates the unchanged model, as CNTK skipped the updates below 0.01 *
  // minLearningRatePerSample; its criterion is the inference one here (dropout off), where CNTK
  // computed it in training mode.
  std::vector<Evaluator> evaluators;
  const bool training = rate > 0.01 * sgd_.min_learning_rate;
  if (training) {
    set_learning_rate(learner_, rate);
  } else {
    evaluators.emplace_back(Function::combine({criterion_}));
    for (const auto& e : evaluations_) evaluators.emplace_back(Function::combine({e}));
  }
  MinibatchAggregate& total = totals[0];
  while (total.samples < epoch_size_ && total.samples <= limit_) {
    io::Minibatch mb = source_.next_minibatch(std::min(mb_size_, epoch_size_ - total.samples));
    if (mb.empty()) break;
    const VariableValues args = arguments_for(source_, mb, inputs_);
    bool sweep_end = false;
    for (const auto& s : mb.streams) sweep_end |= s.sweep_end;
    std::vector<MinibatchAggregate> figures;
    if (training) {
      trainer_.train_minibatch(args, sweep_end);
      figures = {trainer_.previous_minibatch_loss()};
      if (!evaluations_.empty()) figures.push_back(trainer_.previous_minibatch_evaluation());
      for (const auto& m : trainer_.previous_minibatch_additional_metrics()) figures.push_back(m);
    } else {
      for (auto& e : evaluators) {
        e.test_minibatch(args);
        figures.push_back(e.previous_test_minibatch());
      }
    }
    for (size_t k = 0; k < totals.size() && k < figures.size(); ++k)
      totals[k].sum += figures[k].sum, totals[k].samples += figures[k].samples;
  }
  report_(epoch_, totals, rate, mb_size_);
  restore_snapshot();
  return total.samples ? total.sum / double(total.samples) : 0.0;
}

void EpochSearch::take_snapshot() {
  values_.clear();
  for (auto& v : state_variables()) values_.push_back(v.value().copy());
  learner_state_ = learner_->create_checkpoint();
  source_state_ = source_.checkpoint_state();
}

void EpochSearch::restore_snapshot() {
  auto variables = state_variables();
  for (size_t i = 0; i < variables.size(); ++i) variables[i].set_value(values_[i].copy());
  learner_->restore_from_checkpoint(learner_state_);
  source_.restore_from_checkpoint(source_state_);
}

std::vector<Variable> EpochSearch::state_variables() const {
  std::vector<Variable> out = model_->parameters();
  for (const auto& c : model_->constants()) out.push_back(c);
  return out;
}

}  // namespace cntk::brainscript
