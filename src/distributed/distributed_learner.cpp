// Distributed learners: data-parallel (exact or quantized) and block momentum.
// Semantics follow CNTK 2.7's DataParallelDistributedLearner,
// QuantizedDataParallelDistributedLearner and BlockMomentumDistributedLearner.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <numeric>

#include "cntk/distributed.h"

namespace cntk {

// ------------------------------------------------------------ DistributedLearner

namespace {
const Learner& local(const LearnerPtr& l) {
  if (!l) throw ValueError("distributed learner: the local learner must not be None");
  return *l;
}
}  // namespace

DistributedLearner::DistributedLearner(CommunicatorPtr communicator, LearnerPtr learner, size_t distribute_after)
    : Learner(local(learner).parameters(), learner->learning_rate_schedule(), learner->options()),
      communicator_(std::move(communicator)),
      learner_(std::move(learner)),
      distribute_after_(distribute_after) {
  if (!communicator_) throw ValueError("distributed learner: the communicator must not be None");
  if (std::dynamic_pointer_cast<DistributedLearner>(learner_))
    throw ValueError("distributed learner: the local learner is already a distributed learner");
}

bool DistributedLearner::update(ParameterGradients& gradients, size_t sample_count, bool sweep_end) {
  MinibatchInfo info;
  info.at_end_of_sweep = sweep_end;
  info.number_of_samples = sample_count;
  return update(gradients, info);
}

void DistributedLearner::fill_missing_gradients(ParameterGradients& gradients) const {
  for (auto& [p, g] : gradients)
    if (!g.defined()) g = NDArrayView::zeros(p.dtype(), p.shape());
}

Dictionary DistributedLearner::create_checkpoint() const {
  Dictionary d;
  d["localLearners"] = DictValue(learner_->create_checkpoint());
  d["totalNumberOfSamplesSeen"] = DictValue(sample_count_);
  return d;
}

void DistributedLearner::restore_from_checkpoint(const Dictionary& checkpoint) {
  auto get = [&](const char* key) -> const DictValue& {
    auto it = checkpoint.find(key);
    if (it == checkpoint.end())
      throw ValueError(std::string("distributed learner checkpoint: no '") + key + "' in the checkpoint");
    return it->second;
  };
  learner_->restore_from_checkpoint(get("localLearners").as_dict());
  sample_count_ = size_t(get("totalNumberOfSamplesSeen").as_int());
}

namespace {

// The loss, metric and sample count of a minibatch summed over the workers.
void aggregate_header(Communicator& comm, MinibatchInfo& info) {
  NDArrayView header(DataType::Double, NDShape{3});
  double* h = header.data<double>();
  h[0] = info.eval_criterion;
  h[1] = info.training_loss;
  h[2] = double(info.number_of_samples);
  std::vector<NDArrayView> v{header};
  comm.aggregate_in_place(v);
  const double* s = v[0].data<double>();
  info.eval_criterion = s[0];
  info.training_loss = s[1];
  info.number_of_samples = size_t(std::llround(s[2]));
}

// ------------------------------------------------------------------ data-parallel

// Runs exchanges one at a time, in the order they are submitted, on a thread of its own
// (MPI is started with MPI_THREAD_SERIALIZED: the learner's own thread makes no MPI call
// while an exchange may be running, see DataParallelLearner::update).
class ExchangeThread {
 public:
  ~ExchangeThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
      tasks_.push_back(std::move(task));
      ++pending_;
    }
    work_.notify_one();
  }
  // Until every submitted exchange has run; rethrows the first one's error.
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, nothing left
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      std::exception_ptr failed;
      try {
        task();
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      if (failed && !error_) error_ = failed;
      if (--pending_ == 0) done_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_, done_;
  std::deque<std::function<void()>> tasks_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// Gradients travel in buckets of about this many elements (a bucket holds whole
// parameters), in one fixed order that every worker knows: the parameters' order, which
// (a walk from the outputs towards the inputs) is roughly the order in which backward
// finishes their gradients. A bucket's exchange starts
// as soon as all its gradients are final, while backward goes on with the rest.
// Sums do not depend on the bucketing (each element is summed on its own, and 1-bit
// SGD quantizes each parameter's columns on their own).
constexpr size_t kBucketElements = size_t(1) << 18;

class DataParallelLearner final : public DistributedLearner {
 public:
  DataParallelLearner(CommunicatorPtr c, LearnerPtr l, size_t after)
      : DistributedLearner(std::move(c), std::move(l), after) {
    const auto& params = parameters();
    bucket_of_.resize(params.size());
    size_t filled = kBucketElements;
    for (size_t i = 0; i < params.size(); ++i) {
      if (filled >= kBucketElements) {
        buckets_.emplace_back();
        filled = 0;
      }
      buckets_.back().push_back(i);
      bucket_of_[i] = buckets_.size() - 1;
      // (A shape still to be inferred counts as one element: the split only has to be
      // the same on every worker.)
      const NDShape& shape = params[i].shape();
      filled += shape.is_known() ? size_t(std::max<int64_t>(shape.total_size(), 1)) : 1;
    }
    residuals_.resize(buckets_.size());
    stripe_residuals_.resize(buckets_.size());
    begin_gradients();
  }

  bool takes_early_gradients() const override { return true; }

  void begin_gradients() override {
    // A pass that failed after starting exchanges leaves them to finish first.
    try {
      exchange_.wait();
    } catch (...) {
    }
    values_.assign(parameters().size(), NDArrayView());
    ready_in_bucket_.assign(buckets_.size(), 0);
    next_bucket_ = 0;
    ready_ = 0;
    in_backward_ = true;
  }

  void gradient_ready(size_t index, const NDArrayView& gradient) override {
    if (!exchanges() || index >= values_.size() || values_[index].defined()) return;
    values_[index] = gradient;
    ++ready_in_bucket_[bucket_of_[index]];
    ++ready_;
    // Buckets start in their fixed order, each once all its gradients are in.
    while (next_bucket_ < buckets_.size() && ready_in_bucket_[next_bucket_] == buckets_[next_bucket_].size()) {
      // Overlapped: started while backward still computes other gradients.
      if (in_backward_ && ready_ < values_.size()) communicator_->count_overlapped_exchange();
      exchange_.submit([this, b = next_bucket_++] { exchange_bucket(b); });
    }
  }

  bool update(ParameterGradients& gradients, MinibatchInfo& info) override {
    in_backward_ = false;
    if (exchanges()) {
      fill_missing_gradients(gradients);
      for (size_t i = 0; i < gradients.size(); ++i) gradient_ready(i, gradients[i].second);
      exchange_.wait();
      for (size_t i = 0; i < gradients.size(); ++i) gradients[i].second = values_[i];
      // After the gradients, on every worker: the learner's thread is MPI's only user now.
      aggregate_header(*communicator_, info);
    }
    begin_gradients();
    if (info.empty()) return false;  // no worker had data: nothing to count or apply
    record_update(info.number_of_samples, info.at_end_of_sweep);
    return learner_->update(gradients, info.number_of_samples, info.at_end_of_sweep);
  }

  Dictionary create_checkpoint() const override {
    // Residuals are not saved, so they restart from zero here too: the state after a
    // checkpoint is the state a restore gives (CNTK does the same).
    for (auto* buckets : {&residuals_, &stripe_residuals_})
      for (auto& list : *buckets)
        for (auto& r : list)
          if (r.defined()) r.fill(0.0);
    return DistributedLearner::create_checkpoint();
  }

 private:
  // Whether this minibatch's gradients are summed: the same answer on every worker.
  // The exact learner skips a world of one (nothing to sum); the quantized one goes
  // through its communicator, which leaves the values as they are there (as CNTK).
  bool exchanges() const {
    return sample_count_ >= distribute_after_ &&
           (communicator_->num_quantization_bits() < 32 || communicator_->num_workers() > 1);
  }

  // Runs on the exchange thread; touches only bucket b's values and residuals.
  void exchange_bucket(size_t b) {
    std::vector<NDArrayView> values;
    for (size_t i : buckets_[b]) values.push_back(values_[i].to_dense());
    if (communicator_->num_quantization_bits() < 32)
      communicator_->quantized_aggregate_in_place(values, residuals_[b], stripe_residuals_[b]);
    else
      communicator_->aggregate_in_place(values);
    for (size_t k = 0; k < values.size(); ++k) values_[buckets_[b][k]] = values[k];
  }

  std::vector<std::vector<size_t>> buckets_;  // parameter indices
  std::vector<size_t> bucket_of_;
  // This minibatch: the gradients handed in (replaced by their sums), per bucket how
  // many are in, and the next bucket to start.
  std::vector<NDArrayView> values_;
  std::vector<size_t> ready_in_bucket_;
  size_t next_bucket_ = 0, ready_ = 0;
  bool in_backward_ = false;
  mutable std::vector<std::vector<NDArrayView>> residuals_, stripe_residuals_;  // per bucket
  ExchangeThread exchange_;  // last: joined before the state its exchanges use goes
};

// ------------------------------------------------------------------ block momentum

class BlockMomentumLearner final : public DistributedLearner {
 public:
  BlockMomentumLearner(CommunicatorPtr c, LearnerPtr l, size_t after, size_t block_size, double time_constant,
                       bool nesterov, bool reset_sgd_momentum, double block_lr)
      : DistributedLearner(std::move(c), std::move(l), after),
        nesterov_(nesterov),
        reset_sgd_momentum_(reset_sgd_momentum),
        block_lr_(block_lr),
        sync_period_(block_size / communicator_->num_workers()) {
    const size_t workers = communicator_->num_workers();
    if (sync_period_ == 0)
      throw ValueError("block_momentum_distributed_learner: block_size " + std::to_string(block_size) +
                       " is smaller than the number of workers (" + std::to_string(workers) + ")");
    if (time_constant < 0) {
      // CNTK's default: block momentum 1 - 1/workers over one block.
      const double bm = 1.0 - 1.0 / double(workers);
      if (bm >= 1.0 || bm < 0.0) throw ValueError("block momentum must be in [0, 1)");
      time_constant = bm == 0.0 ? 0.0 : -double(block_size) / std::log(bm);
      if (!std::isfinite(time_constant)) time_constant = 0.0;
    }
    time_constant_per_worker_ = time_constant / double(workers);
    for (auto& p : parameters_) {
      smoothed_.push_back(NDArrayView::zeros(p.dtype(), p.shape()));
      prev_.push_back(p.value().to_dense().contiguous().copy());
    }
  }

  size_t minibatch_size_scale_factor() const override { return communicator_->num_workers(); }

  bool update(ParameterGradients& gradients, MinibatchInfo& info) override {
    if (!prev_initialized_) {
      reset_previous();
      prev_initialized_ = true;
    }
    // Local step first, so that the block update leaves every worker with the same model.
    if (!info.empty()) learner_->update(gradients, info.number_of_samples, info.at_end_of_sweep);
    if (info.at_end_of_data) end_of_data_ = true;
    local_samples_ += info.number_of_samples;
    sample_count_ += info.number_of_samples;
    if (distribute_after_ > sample_count_) return !end_of_data_;
    if (!end_of_data_) {
      in_block_ += info.number_of_samples;
      if (in_block_ < sync_period_) return true;
      if (synchronize(Action::Aggregate) != Action::Aggregate) throw Error("block momentum: unexpected action");
      aggregate();
      return true;
    }
    return shutdown();
  }

  void aggregate_metrics_if_needed(double& loss, double& eval) override {
    if (communicator_->num_workers() == 1) return;
    Action a;
    while ((a = synchronize(Action::AggregateMetrics)) != Action::AggregateMetrics) {
      if (a == Action::Aggregate)
        aggregate();
      else if (a == Action::Checkpoint || a == Action::Shutdown)
        return;  // a checkpoint is requested from outside later; workers that shut down cannot sync
    }
    // The averages over the workers (CNTK sums in float32 and divides by the workers).
    NDArrayView v(DataType::Float, NDShape{2});
    v.data<float>()[0] = float(loss);
    v.data<float>()[1] = float(eval);
    std::vector<NDArrayView> vs{v};
    communicator_->aggregate_in_place(vs);
    const float n = float(communicator_->num_workers());
    loss = double(vs[0].data<float>()[0] / n);
    eval = double(vs[0].data<float>()[1] / n);
  }

  Dictionary create_checkpoint() const override {
    auto* self = const_cast<BlockMomentumLearner*>(this);
    // Other workers may be aggregating: let them finish first.
    Action a;
    while ((a = self->synchronize(Action::Checkpoint)) != Action::Checkpoint) {
      if (a == Action::Wait) continue;
      if (a != Action::Aggregate) throw Error("block momentum: unexpected action during a checkpoint");
      self->aggregate();
    }
    // Always aggregate before saving: the previous model and the block position need no saving.
    self->synchronize(Action::Aggregate);
    self->aggregate();
    Dictionary d;
    d["base"] = DictValue(DistributedLearner::create_checkpoint());
    d["localTotalNumSamplesSeen"] = DictValue(local_samples_);
    DictValue::List sg;
    for (auto& s : smoothed_) sg.push_back(DictValue(s.copy()));
    d["blockLevelSmoothedGradient"] = DictValue(sg);
    return d;
  }

  void restore_from_checkpoint(const Dictionary& checkpoint) override {
    auto get = [&](const char* key) -> const DictValue& {
      auto it = checkpoint.find(key);
      if (it == checkpoint.end())
        throw ValueError(std::string("block momentum checkpoint: no '") + key + "' in the checkpoint");
      return it->second;
    };
    DistributedLearner::restore_from_checkpoint(get("base").as_dict());
    local_samples_ = size_t(get("localTotalNumSamplesSeen").as_int());
    const auto& sg = get("blockLevelSmoothedGradient").as_list();
    if (sg.size() != smoothed_.size())
      throw ValueError("block momentum checkpoint: " + std::to_string(sg.size()) + " smoothed gradients for " +
                       std::to_string(smoothed_.size()) + " parameters");
    for (size_t i = 0; i < sg.size(); ++i) smoothed_[i].copy_from(sg[i].as_array());
    prev_initialized_ = false;
  }

 private:
  // The workers agree on what to do next (CNTK's priorities: aggregation first,
  // then checkpoint, then shutdown, metrics aggregation last).
  enum class Action { Wait = 0, Aggregate = 1, AggregateMetrics = 2, Checkpoint = 3, Shutdown = 4 };

  Action synchronize(Action self) {
    double mine[2] = {double(int(self)), double(local_samples_)};
    auto all = communicator_->all_gather(std::string(reinterpret_cast<const char*>(mine), sizeof mine));
    std::vector<Action> actions;
    size_t total = 0;
    for (auto& b : all) {
      double d[2];
      std::memcpy(d, b.data(), sizeof d);
      actions.push_back(Action(int(d[0])));
      total += size_t(d[1]);
    }
    sample_count_ = total;
    auto all_are = [&](Action x) {
      return std::all_of(actions.begin(), actions.end(), [x](Action a) { return a == x; });
    };
    auto any_is = [&](Action x) {
      return std::any_of(actions.begin(), actions.end(), [x](Action a) { return a == x; });
    };
    if (all_are(Action::AggregateMetrics)) return Action::AggregateMetrics;
    if (all_are(Action::Shutdown)) return Action::Shutdown;
    if (all_are(Action::Checkpoint)) return Action::Checkpoint;
    if (!any_is(Action::Aggregate) && !any_is(Action::Wait)) {
      const bool ckpt = any_is(Action::Checkpoint), shut = any_is(Action::Shutdown),
                 metrics = any_is(Action::AggregateMetrics);
      if (self == Action::Shutdown) return ckpt ? Action::Checkpoint : metrics ? Action::Wait : Action::Shutdown;
      if (self == Action::Checkpoint) return shut || metrics ? Action::Wait : Action::Checkpoint;
      if (self == Action::AggregateMetrics) return shut ? Action::Shutdown : Action::Checkpoint;
    }
    return Action::Aggregate;
  }

  bool shutdown() {
    Action a;
    while ((a = synchronize(Action::Shutdown)) != Action::Shutdown) {
      if (a == Action::Aggregate)
        aggregate();
      else if (a == Action::Checkpoint)
        return true;  // the checkpoint is still to be called from outside
      else if (a != Action::Wait)
        throw Error("block momentum: unexpected action during shutdown");
    }
    aggregate();  // the last synchronization
    return false;
  }

  void reset_previous() {
    for (size_t i = 0; i < parameters_.size(); ++i) prev_[i].copy_from(parameters_[i].value());
  }

  void aggregate() {
    const double bm = time_constant_per_worker_ == 0 ? 0.0 : std::exp(-double(in_block_) / time_constant_per_worker_);
    std::vector<NDArrayView> block(parameters_.size());
    for (size_t i = 0; i < parameters_.size(); ++i) {
      NDArrayView w = parameters_[i].value().to_dense().contiguous();
      block[i] = NDArrayView(w.dtype(), w.shape());
      if (w.dtype() == DataType::Float)
        block_gradient<float>(prev_[i], w, block[i]);
      else
        block_gradient<double>(prev_[i], w, block[i]);
    }
    communicator_->aggregate_in_place(block);
    for (size_t i = 0; i < parameters_.size(); ++i) {
      NDArrayView w(prev_[i].dtype(), prev_[i].shape());
      if (w.dtype() == DataType::Float)
        block_update<float>(i, block[i], bm, w);
      else
        block_update<double>(i, block[i], bm, w);
      parameters_[i].set_value(w);
      prev_[i].copy_from(w);
    }
    in_block_ = 0;
    if (reset_sgd_momentum_) learner_->reset_smoothed_gradients();
  }

  template <class T>
  static void block_gradient(const NDArrayView& prev, const NDArrayView& w, NDArrayView& out) {
    const T* a = prev.data<T>();
    const T* b = w.data<T>();
    T* o = out.data<T>();
    for (int64_t k = 0; k < out.numel(); ++k) o[k] = a[k] - b[k];
  }

  // smoothed = bm * smoothed + (1 - bm) * block_lr * block; w = prev - smoothed
  // (Nesterov: w -= bm * smoothed).
  template <class T>
  void block_update(size_t i, const NDArrayView& block, double bm, NDArrayView& w) {
    const T* g = block.data<T>();
    const T* prev = prev_[i].data<T>();
    T* s = smoothed_[i].data<T>();
    T* o = w.data<T>();
    const T gain = T((1 - bm) * block_lr_), m = T(bm);
    for (int64_t k = 0; k < w.numel(); ++k) {
      s[k] = gain * g[k] + m * s[k];
      o[k] = prev[k] - s[k];
      if (nesterov_) o[k] = o[k] + T(-bm) * s[k];
    }
  }

  const bool nesterov_, reset_sgd_momentum_;
  const double block_lr_;
  double time_constant_per_worker_ = 0;
  const size_t sync_period_;
  size_t in_block_ = 0, local_samples_ = 0;
  std::vector<NDArrayView> prev_, smoothed_;
  bool prev_initialized_ = false, end_of_data_ = false;
};

}  // namespace

DistributedLearnerPtr data_parallel_distributed_learner(CommunicatorPtr communicator, LearnerPtr learner,
                                                        size_t distribute_after,
                                                        bool use_async_buffered_parameter_update) {
  if (use_async_buffered_parameter_update)
    throw NotImplementedError(
        "data_parallel_distributed_learner: asynchronous buffered parameter updates are not "
        "supported (CNTK 2.7 did not support them either)");
  return std::make_shared<DataParallelLearner>(std::move(communicator), std::move(learner), distribute_after);
}

DistributedLearnerPtr block_momentum_distributed_learner(CommunicatorPtr communicator, LearnerPtr learner,
                                                         size_t distribute_after, size_t block_size,
                                                         double block_momentum_as_time_constant,
                                                         bool use_nesterov_momentum,
                                                         bool reset_sgd_momentum_after_aggregation,
                                                         double block_learning_rate) {
  if (!communicator) throw ValueError("block_momentum_distributed_learner: the communicator must not be None");
  if (communicator->num_quantization_bits() < 32)
    throw ValueError("block_momentum_distributed_learner: block momentum exchanges models unquantized");
  return std::make_shared<BlockMomentumLearner>(std::move(communicator), std::move(learner), distribute_after,
                                                block_size, block_momentum_as_time_constant, use_nesterov_momentum,
                                                reset_sgd_momentum_after_aggregation, block_learning_rate);
}

}  // namespace cntk
