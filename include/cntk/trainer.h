// Trainer and Evaluator: run minibatches through a model, its loss and an
// evaluation metric, and (Trainer) update the parameters with learners.
//
// The loss and the metric are per sample; the Trainer sums them over the
// samples of a minibatch (padding of sequences excluded), backpropagates from
// the loss with a root gradient of ones, and hands each learner the gradients of
// its parameters summed over the minibatch. The sample count of a minibatch is
// the number of entries along the loss's dynamic axes (batch entries; tokens of
// sequences).
#pragma once
#include <memory>
#include <vector>

#include "cntk/evaluation.h"
#include "cntk/learner.h"

namespace cntk {

// Sum of a per-sample value over its valid entries, and how many there are.
struct MinibatchAggregate {
  double sum = 0.0;
  size_t samples = 0;
};

class Evaluator {
 public:
  explicit Evaluator(FunctionPtr evaluation_function);

  // The evaluation function's average over the samples of the minibatch; the
  // values of `outputs` (if any) are returned in `output_values`.
  double test_minibatch(const VariableValues& arguments, const std::vector<Variable>& outputs = {},
                        std::vector<Value>* output_values = nullptr);
  // Sum and sample count of the last test minibatch (0 samples for empty arguments).
  const MinibatchAggregate& previous_test_minibatch() const { return prev_test_; }

  const FunctionPtr& evaluation_function() const { return eval_fn_; }

 protected:
  Evaluator() = default;
  FunctionPtr eval_fn_;
  Variable eval_count_var_;
  MinibatchAggregate prev_test_;
};

class Trainer {
 public:
  // `model` may be null; `evaluation` may be null. Several learners may share the
  // work, each over its own parameters: a parameter in two learners, or a learner
  // parameter that is not part of the model, is a ValueError.
  Trainer(FunctionPtr model, FunctionPtr loss, FunctionPtr evaluation, std::vector<LearnerPtr> learners);

  // Forward (training mode), backward from the loss, learner updates. Returns
  // false when every learner has stopped learning, or for empty arguments.
  bool train_minibatch(const VariableValues& arguments, bool sweep_end = false);
  bool train_minibatch(const VariableValues& arguments, bool sweep_end, const std::vector<Variable>& outputs,
                       std::vector<Value>& output_values);
  // The evaluation function's average over the minibatch (no update).
  double test_minibatch(const VariableValues& arguments, const std::vector<Variable>& outputs = {},
                        std::vector<Value>* output_values = nullptr);

  // Averages per sample over the last trained minibatch; ValueError before the first one.
  double previous_minibatch_loss_average() const;
  double previous_minibatch_evaluation_average() const;
  size_t previous_minibatch_sample_count() const { return prev_loss_.samples; }
  const MinibatchAggregate& previous_minibatch_loss() const { return prev_loss_; }
  const MinibatchAggregate& previous_minibatch_evaluation() const { return prev_eval_; }
  const MinibatchAggregate& previous_test_minibatch() const { return prev_test_; }
  // Samples seen by the first learner (CNTK's metric-aggregating learner).
  size_t total_number_of_samples_seen() const;

  const FunctionPtr& model() const { return model_; }
  const FunctionPtr& loss_function() const { return loss_; }
  const FunctionPtr& evaluation_function() const { return eval_; }
  const std::vector<LearnerPtr>& parameter_learners() const { return learners_; }
  // Model parameters no learner updates (they stay as they are).
  const std::vector<Variable>& parameters_not_covered() const { return not_covered_; }

 private:
  FunctionPtr model_, loss_, eval_;
  Variable loss_count_var_, eval_count_var_;
  std::vector<LearnerPtr> learners_;
  std::vector<Variable> learner_params_;
  // What backward computes: the learners' parameters, then the loss's inputs declared
  // with needs_gradient (CNTK backpropagates into those too; their gradients are dropped).
  std::vector<Variable> backward_wrt_;
  std::vector<Variable> not_covered_;
  MinibatchAggregate prev_loss_, prev_eval_, prev_test_;
};

}  // namespace cntk
