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

class Communicator;
class DistributedLearner;

// Sum of a per-sample value over its valid entries, and how many there are.
struct MinibatchAggregate {
  double sum = 0.0;
  size_t samples = 0;
};

class Evaluator {
 public:
  explicit Evaluator(FunctionPtr evaluation_function);

  // The evaluation function's average over the samples of the minibatch; the
  // values of `outputs` (if any) are returned in `output_values`. `distributed`:
  // the sum and count over all workers (every worker must call it; an empty
  // minibatch contributes nothing).
  double test_minibatch(const VariableValues& arguments, const std::vector<Variable>& outputs = {},
                        std::vector<Value>* output_values = nullptr, bool distributed = false);
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
  // The evaluation function's average over the minibatch (no update); `distributed`
  // as for Evaluator::test_minibatch.
  double test_minibatch(const VariableValues& arguments, const std::vector<Variable>& outputs = {},
                        std::vector<Value>* output_values = nullptr, bool distributed = false);

  // Metrics beside the evaluation function, computed in the same forward pass of each trained
  // minibatch (CNTK's v1 SGD reported every evaluation node of a network). Their aggregates
  // over the last trained minibatch, in the order given, are this worker's own.
  void set_additional_metrics(std::vector<FunctionPtr> metrics);
  const std::vector<MinibatchAggregate>& previous_minibatch_additional_metrics() const { return prev_more_; }

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

  // With distributed learners (all of the Trainer's learners are then distributed):
  // their communicator, else null. Minibatches are then trained by every worker
  // together (an empty one too: a worker out of data still takes part), and the
  // loss, metric and sample counts of the last minibatch are those over all workers.
  std::shared_ptr<Communicator> communicator() const;
  // Averages the given loss and metric sums over the workers where the metric-aggregating
  // learner does not do so with every minibatch (block momentum).
  void aggregate_metrics_if_needed(double& loss, double& evaluation);

 private:
  FunctionPtr model_, loss_, eval_;
  Variable loss_count_var_, eval_count_var_;
  std::vector<LearnerPtr> learners_;
  std::vector<Variable> learner_params_;
  // What backward computes: the learners' parameters, then the loss's inputs declared
  // with needs_gradient (CNTK backpropagates into those too; their gradients are dropped).
  std::vector<Variable> backward_wrt_;
  std::vector<Variable> not_covered_;
  bool update_distributed(ParameterGradients& gradients, bool sweep_end, bool end_of_data);

  MinibatchAggregate prev_loss_, prev_eval_, prev_test_;
  std::vector<FunctionPtr> more_;
  std::vector<Variable> more_count_vars_;
  std::vector<MinibatchAggregate> prev_more_;
  // The distributed learners (same order as learners_), empty without them.
  std::vector<std::shared_ptr<DistributedLearner>> distributed_;
};

}  // namespace cntk
