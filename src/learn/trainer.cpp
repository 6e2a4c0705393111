// Trainer and Evaluator over the executor's forward/backward.
#include "cntk/trainer.h"

#include "cntk/distributed.h"
#include "cntk/profiler.h"

#include <cmath>
#include <functional>
#include <limits>
#include <unordered_set>

namespace cntk {

namespace {

// The variable whose dynamic axes count the samples of a per-sample function:
// its output when it has dynamic axes, else (a loss already reduced over the
// batch) the first variable with dynamic axes found below it, as CNTK searches.
Variable sample_count_variable(const FunctionPtr& f, const char* what) {
  Variable out = f->output();
  if (!out.dynamic_axes().empty()) return out;
  std::unordered_set<Function*> seen;
  std::function<Variable(const FunctionPtr&)> search = [&](const FunctionPtr& fn) -> Variable {
    if (!fn || !seen.insert(fn.get()).second) return Variable();
    for (auto& o : fn->outputs())
      if (!o.dynamic_axes().empty()) return o;
    for (auto& in : fn->inputs()) {
      if (!in.dynamic_axes().empty()) return in;
      if (in.is_output()) {
        Variable v = search(in.owner());
        if (v.defined()) return v;
      }
    }
    return Variable();
  };
  Variable v = search(f->root_function());
  if (!v.defined())
    throw ValueError(std::string(what) + " " + out.str() +
                     " has no batch axis and nothing below it has one: the number of samples cannot be determined");
  return v;
}

// An evaluation function counts its samples as CNTK's Evaluator does: its own
// output when that has dynamic axes, else its root function's first input. A
// count variable without dynamic axes counts one sample, so a metric already
// averaged into a scalar (Keras' metrics, over state variables) is taken as is.
Variable evaluation_count_variable(const FunctionPtr& f) {
  Variable out = f->output();
  if (!out.dynamic_axes().empty()) return out;
  const auto& inputs = f->root_function()->inputs();
  if (!inputs.empty() && !inputs[0].dynamic_axes().empty()) return inputs[0];
  return out;  // counts 1, as the first input would, without computing it
}

// Which (batch, step) entries of a value are real samples, not sequence padding.
struct Layout {
  int64_t batch = 1, steps = 1, item = 1;
  const NDMask* mask = nullptr;
  bool valid(int64_t b, int64_t t) const { return !mask || mask->at(b, t) != MaskKind::Invalid; }
};

Layout layout_of(const Variable& v, const Value& value) {
  Layout l;
  const NDShape& s = value.shape();
  const size_t nd = v.dynamic_axes().size();
  if (s.rank() < nd) throw Error("value of " + v.str() + " has shape " + s.str() + ", too few axes");
  if (nd >= 1) l.batch = s[0];
  if (nd >= 2) l.steps = s[1];
  l.item = 1;
  for (size_t i = nd; i < s.rank(); ++i) l.item *= s[i];
  if (nd >= 2 && value.mask()) l.mask = value.mask().get();
  return l;
}

size_t sample_count(const Variable& v, const Value& value) {
  if (v.dynamic_axes().empty()) return 1;
  Layout l = layout_of(v, value);
  size_t n = 0;
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t t = 0; t < l.steps; ++t) n += l.valid(b, t);
  return n;
}

// Sum of all elements of the valid entries.
double valid_sum(const Variable& v, const Value& value) {
  NDArrayView d = value.data().to_dense();
  if (d.dtype() != DataType::Double) d = d.cast(DataType::Double);
  d = d.contiguous();
  const double* p = d.data<double>();
  Layout l = layout_of(v, value);
  double s = 0;
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t t = 0; t < l.steps; ++t) {
      if (!l.valid(b, t)) continue;
      const double* e = p + (b * l.steps + t) * l.item;
      for (int64_t k = 0; k < l.item; ++k) s += e[k];
    }
  return s;
}

// Ones over the valid entries, zeros over the padding.
Value root_gradient(const Variable& v, const Value& value) {
  NDArrayView g = NDArrayView::full(DataType::Double, value.shape(), 1.0);
  Layout l = layout_of(v, value);
  if (l.mask) {
    double* p = g.data<double>();
    for (int64_t b = 0; b < l.batch; ++b)
      for (int64_t t = 0; t < l.steps; ++t)
        if (!l.valid(b, t)) std::fill(p + (b * l.steps + t) * l.item, p + (b * l.steps + t + 1) * l.item, 0.0);
  }
  if (value.dtype() != DataType::Double) g = g.cast(value.dtype());
  return Value(g, value.mask());
}

void add_unique(std::vector<Variable>& vars, const Variable& v) {
  for (auto& x : vars)
    if (x == v) return;
  vars.push_back(v);
}

size_t index_of(const std::vector<Variable>& vars, const Variable& v) {
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i] == v) return i;
  throw Error("internal: variable " + v.str() + " was not requested");
}

// The sum and sample count of a test minibatch over all workers.
void aggregate_test(Communicator& comm, MinibatchAggregate& agg) {
  NDArrayView v(DataType::Double, NDShape{2});
  v.data<double>()[0] = agg.sum;
  v.data<double>()[1] = double(agg.samples);
  std::vector<NDArrayView> vs{v};
  comm.aggregate_in_place(vs);
  agg.sum = vs[0].data<double>()[0];
  agg.samples = size_t(std::llround(vs[0].data<double>()[1]));
}

}  // namespace

// -------------------------------------------------------------------- Evaluator

Evaluator::Evaluator(FunctionPtr evaluation_function) : eval_fn_(std::move(evaluation_function)) {
  if (!eval_fn_) throw ValueError("Evaluator: no evaluation function");
  eval_count_var_ = evaluation_count_variable(eval_fn_);
}

namespace {

// One test pass (Evaluator's and Trainer's): `run` computes the metric (and its sample
// count, and the outputs asked for); returns the metric's sum and sample count, and the
// outputs' values where asked. Distributed tests sum over the workers.
MinibatchAggregate run_test(const FunctionPtr& run, const Variable& metric, const Variable& count_var,
                            const VariableValues& arguments, const std::vector<Variable>& outputs,
                            std::vector<Value>* output_values, const CommunicatorPtr& comm) {
  MinibatchAggregate result;
  if (comm && !outputs.empty())
    throw NotImplementedError(
        "test_minibatch: outputs are not returned in distributed evaluation (nor were they in CNTK)");
  if (!arguments.empty()) {
    std::vector<Variable> req{metric};
    add_unique(req, count_var);
    for (auto& o : outputs) add_unique(req, o);
    std::vector<Value> vals;
    forward(run, arguments, req, vals, false);
    result.sum = valid_sum(metric, vals[0]);
    result.samples = sample_count(count_var, vals[index_of(req, count_var)]);
    if (output_values) {
      output_values->clear();
      for (auto& o : outputs) output_values->push_back(vals[index_of(req, o)]);
    }
  }
  if (comm) aggregate_test(*comm, result);
  return result;
}

double average_or_nan(const MinibatchAggregate& a) {
  return a.samples == 0 ? std::numeric_limits<double>::quiet_NaN() : a.sum / double(a.samples);
}

}  // namespace

double Evaluator::test_minibatch(const VariableValues& arguments, const std::vector<Variable>& outputs,
                                 std::vector<Value>* output_values, bool distributed) {
  profiler::ScopedEvent phase(profiler::Phase::Evaluation);
  prev_test_ = {};  // (stays empty when the pass fails)
  prev_test_ = run_test(eval_fn_, eval_fn_->output(), eval_count_var_, arguments, outputs, output_values,
                        distributed ? mpi_communicator() : nullptr);
  return average_or_nan(prev_test_);
}

// ---------------------------------------------------------------------- Trainer

Trainer::Trainer(FunctionPtr model, FunctionPtr loss, FunctionPtr evaluation, std::vector<LearnerPtr> learners)
    : model_(std::move(model)), loss_(std::move(loss)), eval_(std::move(evaluation)), learners_(std::move(learners)) {
  if (!loss_) throw ValueError("Trainer: no loss function");
  if (learners_.empty()) throw ValueError("Trainer: needs at least one learner");
  loss_->output();  // ValueError unless the loss has a single output
  loss_count_var_ = sample_count_variable(loss_, "the loss function");
  if (eval_) eval_count_var_ = evaluation_count_variable(eval_);

  // Each parameter belongs to at most one learner, and to the model.
  std::vector<Variable> model_params;
  // The whole graphs count (a primitive function's own parameters are only its inputs).
  auto whole = [](const FunctionPtr& f) { return f->is_composite() ? f : Function::composite(f); };
  for (const FunctionPtr& f : {model_, loss_, eval_})
    if (f)
      for (auto& p : whole(f)->parameters()) add_unique(model_params, p);
  std::unordered_set<VariableImpl*> in_model, covered;
  for (auto& p : model_params) in_model.insert(p.get());
  for (size_t k = 0; k < learners_.size(); ++k) {
    if (!learners_[k]) throw ValueError("Trainer: learner " + std::to_string(k) + " is null");
    for (auto& p : learners_[k]->parameters()) {
      if (!covered.insert(p.get()).second)
        throw ValueError("Trainer: parameter " + p.str() + " is covered by two learners");
      if (!in_model.count(p.get()))
        throw ValueError("Trainer: the learner parameter " + p.str() +
                         " is not part of the model, the loss or the evaluation function");
      learner_params_.push_back(p);
    }
  }
  for (auto& p : model_params)
    if (!covered.count(p.get())) not_covered_.push_back(p);

  // Distributed learners: all or none, one warm-start length, one of them aggregating
  // the metrics (the only one is, implicitly), and no quantized exchange among several.
  for (auto& l : learners_)
    if (auto d = std::dynamic_pointer_cast<DistributedLearner>(l)) distributed_.push_back(d);
  if (!distributed_.empty()) {
    if (distributed_.size() != learners_.size())
      throw ValueError("Trainer: a non-distributed learner cannot be used together with distributed learners");
    for (auto& d : distributed_) {
      if (d->parallelization_after() != distributed_.front()->parallelization_after())
        throw ValueError("Trainer: all distributed learners need the same distributed_after");
      if (distributed_.size() > 1 && d->communicator()->num_quantization_bits() < 32)
        throw ValueError("Trainer: a quantized data-parallel learner cannot be combined with other learners");
    }
    if (distributed_.size() == 1) distributed_.front()->set_as_metric_aggregator();
  }
  backward_wrt_ = learner_params_;
  for (auto& a : whole(loss_)->arguments())
    if (a.is_input() && a.needs_gradient()) add_unique(backward_wrt_, a);
}

void Trainer::set_additional_metrics(std::vector<FunctionPtr> metrics) {
  more_count_vars_.clear();
  for (const auto& m : metrics) {
    if (!m) throw ValueError("Trainer: an additional metric is null");
    m->output();  // ValueError unless it has a single output
    more_count_vars_.push_back(evaluation_count_variable(m));
  }
  more_ = std::move(metrics);
  prev_more_.assign(more_.size(), {});
}

bool Trainer::train_minibatch(const VariableValues& arguments, bool sweep_end) {
  std::vector<Value> unused;
  return train_minibatch(arguments, sweep_end, {}, unused);
}

// A function-try-block: the profile is written when a minibatch raises, so a failing run still leaves it.
bool Trainer::train_minibatch(const VariableValues& arguments, bool sweep_end, const std::vector<Variable>& outputs,
                              std::vector<Value>& output_values) try {
  profiler::ScopedEvent whole(profiler::Phase::Minibatch);
  prev_loss_ = {};
  prev_eval_ = {};
  prev_more_.assign(more_.size(), {});
  output_values.clear();
  if (arguments.empty()) {
    if (distributed_.empty()) return false;  // nothing to train with (end of the local data)
    // Out of local data: this worker still takes part in the others' aggregation.
    ParameterGradients none;
    for (auto& p : learner_params_) none.emplace_back(p, NDArrayView());
    return update_distributed(none, sweep_end, true);
  }

  const Variable loss_out = loss_->output();
  std::vector<Variable> req{loss_out};
  add_unique(req, loss_count_var_);
  if (eval_) {
    add_unique(req, eval_->output());
    add_unique(req, eval_count_var_);
  }
  for (size_t k = 0; k < more_.size(); ++k) {
    add_unique(req, more_[k]->output());
    add_unique(req, more_count_vars_[k]);
  }
  for (auto& o : outputs) add_unique(req, o);

  std::vector<Value> vals;
  // The executor computes any variable reachable from the requested outputs, so
  // the loss function serves as the graph of every run (and holds the plans).
  BackPropStatePtr state;
  {
    profiler::ScopedEvent phase(profiler::Phase::Forward);
    state = forward(loss_, arguments, req, vals, true);
  }
  const Value& loss_value = vals[0];
  prev_loss_.sum = valid_sum(loss_out, loss_value);
  prev_loss_.samples = sample_count(loss_count_var_, vals[index_of(req, loss_count_var_)]);
  if (eval_) {
    prev_eval_.sum = valid_sum(eval_->output(), vals[index_of(req, eval_->output())]);
    prev_eval_.samples = sample_count(eval_count_var_, vals[index_of(req, eval_count_var_)]);
  }
  for (size_t k = 0; k < more_.size(); ++k) {
    prev_more_[k].sum = valid_sum(more_[k]->output(), vals[index_of(req, more_[k]->output())]);
    prev_more_[k].samples = sample_count(more_count_vars_[k], vals[index_of(req, more_count_vars_[k])]);
  }
  for (auto& o : outputs) output_values.push_back(vals[index_of(req, o)]);

  // Gradients of the loss summed over the minibatch: seed every valid entry with 1.
  std::vector<Value> grads;
  {
    profiler::ScopedEvent phase(profiler::Phase::Backward);
    // One data-parallel learner starts exchanging gradients as backward finishes them.
    GradientReadyFn early;
    if (distributed_.size() == 1 && distributed_.front()->takes_early_gradients()) {
      DistributedLearner& d = *distributed_.front();
      d.begin_gradients();
      early = [&d, n = learner_params_.size()](size_t i, const NDArrayView& g) {
        if (i < n) d.gradient_ready(i, g);
      };
    }
    backward(state, {{loss_out, root_gradient(loss_out, loss_value)}}, backward_wrt_, grads, early);
    state.reset();
  }
  profiler::ScopedEvent update_phase(profiler::Phase::ParameterUpdate);

  if (!distributed_.empty()) {
    ParameterGradients all;
    for (size_t i = 0; i < learner_params_.size(); ++i) all.emplace_back(learner_params_[i], grads[i].data());
    return update_distributed(all, sweep_end, false);
  }
  bool updated = false;
  size_t next = 0;
  for (auto& learner : learners_) {
    ParameterGradients mine;
    for (auto& p : learner->parameters()) {
      mine.emplace_back(p, grads[next].data());
      ++next;
    }
    updated = learner->update(mine, prev_loss_.samples, sweep_end) || updated;
  }
  return updated;
} catch (...) {
  profiler::flush_after_error();
  throw;
}

double Trainer::test_minibatch(const VariableValues& arguments, const std::vector<Variable>& outputs,
                               std::vector<Value>* output_values, bool distributed) {
  if (!eval_) throw ValueError("Trainer.test_minibatch: the Trainer has no evaluation function (criterion metric)");
  profiler::ScopedEvent phase(profiler::Phase::Evaluation);
  prev_test_ = {};  // (stays empty when the pass fails)
  CommunicatorPtr comm;
  if (distributed) comm = communicator() ? communicator() : mpi_communicator();
  prev_test_ = run_test(loss_, eval_->output(), eval_count_var_, arguments, outputs, output_values, comm);
  return average_or_nan(prev_test_);
}

// CNTK's Learners::Update over distributed learners: the metric aggregator's view of
// the minibatch (sums over the workers) becomes the Trainer's.
bool Trainer::update_distributed(ParameterGradients& all, bool sweep_end, bool end_of_data) {
  MinibatchInfo info;
  info.at_end_of_data = end_of_data;
  info.at_end_of_sweep = sweep_end;
  info.number_of_samples = prev_loss_.samples;
  info.training_loss = prev_loss_.sum;
  info.eval_criterion = prev_eval_.sum;
  const MinibatchInfo local = info;
  bool updated = false, aggregator_seen = false;
  MinibatchInfo result = info;
  size_t next = 0;
  for (auto& d : distributed_) {
    ParameterGradients mine(all.begin() + ptrdiff_t(next), all.begin() + ptrdiff_t(next + d->parameters().size()));
    next += d->parameters().size();
    MinibatchInfo i = local;
    updated = d->update(mine, i) || updated;
    if (d->is_metric_aggregator() && !aggregator_seen) {
      aggregator_seen = true;
      result = i;
    }
  }
  if (!aggregator_seen)
    throw ValueError(
        "Trainer: none of the distributed learners is marked as the metric aggregator "
        "(set_as_metric_aggregator)");
  prev_loss_.samples = result.number_of_samples;
  prev_loss_.sum = result.training_loss;
  prev_eval_.sum = result.eval_criterion;
  prev_eval_.samples = result.number_of_samples;
  return updated;
}

std::shared_ptr<Communicator> Trainer::communicator() const {
  return distributed_.empty() ? nullptr : distributed_.front()->communicator();
}

void Trainer::aggregate_metrics_if_needed(double& loss, double& evaluation) {
  for (auto& d : distributed_)
    if (d->is_metric_aggregator()) return d->aggregate_metrics_if_needed(loss, evaluation);
}

double Trainer::previous_minibatch_loss_average() const {
  if (prev_loss_.samples == 0)
    throw ValueError("there was no preceding call to train_minibatch, or the minibatch was empty");
  return prev_loss_.sum / double(prev_loss_.samples);
}

double Trainer::previous_minibatch_evaluation_average() const {
  if (!eval_) throw ValueError("the Trainer has no evaluation function (criterion metric)");
  if (prev_loss_.samples == 0)
    throw ValueError("there was no preceding call to train_minibatch, or the minibatch was empty");
  // As in CNTK: per sample of the loss (the minibatch's sample count).
  return prev_eval_.sum / double(prev_loss_.samples);
}

size_t Trainer::total_number_of_samples_seen() const { return learners_.front()->total_number_of_samples_seen(); }

}  // namespace cntk
