// Distributed training over MPI, with CNTK 2.7's model: every worker (an MPI
// rank, started by `mpiexec -n N program`) runs its own Trainer on its own part
// of the data, and a distributed learner wraps the local learner to combine
// the workers' work:
//
//  - data-parallel: the gradients are summed over all workers before the local
//    learner's update, so every worker applies the same update; optionally the
//    gradients travel quantized to 1, 2, 4, 8 or 16 bits per value (CNTK's
//    1-bit SGD: per-column quantization with the quantization error carried
//    into the next minibatch);
//  - block momentum (BMUF): workers train locally for a block of samples, then
//    the models' changes are summed and filtered with a block-level momentum.
//
// A program started without mpiexec is a world of one worker (no MPI calls are
// made), so the same script runs alone or distributed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cntk/learner.h"

namespace cntk {

struct WorkerDescriptor {
  size_t global_rank = 0;
  std::string host_id;
  bool is_main() const { return global_rank == 0; }
};

// Traffic a communicator has sent (payload bytes handed to MPI by this worker).
struct CommunicationCounters {
  uint64_t bytes_sent = 0;
  uint64_t messages_sent = 0;
  uint64_t aggregations = 0;
  // Gradient exchanges (buckets) a data-parallel learner started while backward was still
  // computing other gradients.
  uint64_t overlapped_exchanges = 0;
};

class Communicator;
using CommunicatorPtr = std::shared_ptr<Communicator>;

class Communicator {
 public:
  virtual ~Communicator() = default;

  const std::vector<WorkerDescriptor>& workers() const { return workers_; }
  const WorkerDescriptor& current_worker() const { return workers_[rank_]; }
  size_t rank() const { return rank_; }
  size_t num_workers() const { return workers_.size(); }

  // Bits per gradient value this communicator aggregates with (32: exact sums).
  size_t num_quantization_bits() const { return bits_; }

  void barrier();
  // Sums each buffer (float32 or float64, dense) over all workers, in place. Every
  // worker gets bit-identical sums: each stripe is summed by one worker in rank order.
  void aggregate_in_place(std::vector<NDArrayView>& values);
  // The same with values quantized to num_quantization_bits() on the wire (CNTK's
  // 1-bit SGD): each value's quantization error stays in `residuals`, and the error
  // of quantizing this worker's summed stripe in `stripe_residuals`; both are added
  // to the next call's values (they start empty and are sized by the first call).
  void quantized_aggregate_in_place(std::vector<NDArrayView>& values, std::vector<NDArrayView>& residuals,
                                    std::vector<NDArrayView>& stripe_residuals);
  // Every worker's bytes, in rank order, on every worker.
  std::vector<std::string> all_gather(const std::string& bytes);

  const CommunicationCounters& counters() const { return counters_; }
  void reset_counters() { counters_ = {}; }
  void count_overlapped_exchange() { ++counters_.overlapped_exchanges; }

  // Ends MPI for the process (no communication after it); nothing without MPI.
  static void finalize();

 protected:
  Communicator(size_t bits, bool zero_threshold_for_1bit, bool quantize_self_stripe);
  std::vector<WorkerDescriptor> workers_;
  size_t rank_ = 0;
  size_t bits_ = 32;
  bool zero_threshold_for_1bit_ = true;
  bool quantize_self_stripe_ = true;
  CommunicationCounters counters_;

  friend CommunicatorPtr mpi_communicator();
  friend CommunicatorPtr quantized_mpi_communicator(bool, bool, size_t);
};

// The world of all workers (CNTK's MPICommunicator()).
CommunicatorPtr mpi_communicator();
// A communicator whose gradient aggregation quantizes to `bits` (1, 2, 4, 8, 16)
// bits per value, as CNTK's QuantizedMPICommunicator; 1-bit thresholds at zero
// when `zero_threshold_for_1bit`, and the worker's own stripe is quantized too
// when `use_quantization_for_self_stripe` (CNTK's Python API sets both).
CommunicatorPtr quantized_mpi_communicator(bool zero_threshold_for_1bit, bool use_quantization_for_self_stripe,
                                           size_t bits);
// Rank and size of the world (0 and 1 without mpiexec).
size_t worker_global_rank();
size_t number_of_workers();

// What the Trainer tells a distributed learner about a minibatch: the local
// counts and sums on entry, the counts and sums over all workers on return
// (as far as the learner aggregates them).
struct MinibatchInfo {
  bool at_end_of_data = false;
  bool at_end_of_sweep = false;
  size_t number_of_samples = 0;
  double training_loss = 0;   // sum over the samples
  double eval_criterion = 0;  // sum over the samples
  bool empty() const { return number_of_samples == 0; }
};

class DistributedLearner : public Learner {
 public:
  // The Trainer's entry point. Gradients of a worker without data are empty
  // views; they count as zeros.
  virtual bool update(ParameterGradients& gradients, MinibatchInfo& info) = 0;
  // A distributed learner used as a plain learner (outside a Trainer).
  bool update(ParameterGradients& gradients, size_t sample_count, bool sweep_end = false) override;

  const CommunicatorPtr& communicator() const { return communicator_; }
  const LearnerPtr& local_learner() const { return learner_; }
  size_t parallelization_after() const { return distribute_after_; }
  // How many times the local minibatch size a training session reads (BMUF: the workers).
  virtual size_t minibatch_size_scale_factor() const { return 1; }

  bool is_metric_aggregator() const { return metric_aggregator_; }
  void set_as_metric_aggregator() { metric_aggregator_ = true; }
  // Averages the loss and metric sums of the last minibatch over the workers,
  // where the learner does not aggregate them with every update (BMUF).
  virtual void aggregate_metrics_if_needed(double& /*loss*/, double& /*eval*/) {}

  // Exchange overlapped with backward. A learner that takes early gradients is told
  // begin_gradients() before backward, then gradient_ready(i, g) for each of its
  // parameters (index into parameters()) as soon as backward has finished that
  // gradient, and may start exchanging them at once; update() then finishes the
  // exchange. Trainers that do not call these still just call update().
  virtual bool takes_early_gradients() const { return false; }
  virtual void begin_gradients() {}
  virtual void gradient_ready(size_t /*index*/, const NDArrayView& /*gradient*/) {}

  void reset_smoothed_gradients() override { learner_->reset_smoothed_gradients(); }
  Dictionary create_checkpoint() const override;
  void restore_from_checkpoint(const Dictionary& checkpoint) override;

 protected:
  DistributedLearner(CommunicatorPtr communicator, LearnerPtr learner, size_t distribute_after);
  // Zeros for the gradients a worker without data did not compute.
  void fill_missing_gradients(ParameterGradients& gradients) const;

  CommunicatorPtr communicator_;
  LearnerPtr learner_;
  size_t distribute_after_;
  bool metric_aggregator_ = false;
};
using DistributedLearnerPtr = std::shared_ptr<DistributedLearner>;

// Gradients (and the loss, metric and sample count) summed over all workers
// once `distribute_after` samples have been seen; exact with a 32-bit
// communicator, quantized with error feedback with a quantized one.
DistributedLearnerPtr data_parallel_distributed_learner(CommunicatorPtr communicator, LearnerPtr learner,
                                                        size_t distribute_after = 0,
                                                        bool use_async_buffered_parameter_update = false);

// Block momentum (BMUF, Chen and Huo 2016). `block_momentum_as_time_constant` < 0
// takes CNTK's default, a block momentum of 1 - 1/workers.
DistributedLearnerPtr block_momentum_distributed_learner(CommunicatorPtr communicator, LearnerPtr learner,
                                                         size_t distribute_after, size_t block_size,
                                                         double block_momentum_as_time_constant = -1,
                                                         bool use_nesterov_momentum = true,
                                                         bool reset_sgd_momentum_after_aggregation = true,
                                                         double block_learning_rate = 1.0);

}  // namespace cntk
