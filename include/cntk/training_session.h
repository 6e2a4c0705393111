// TrainingSession: CNTK 2.7's training loop over a Trainer and a source of minibatches,
// with periodic checkpoints, progress summaries and cross-validation, restore from the last
// checkpoint, and a final test.
//
// After each trained minibatch the periodic actions run, in this order, whenever the units
// they count (samples, minibatches or sweeps, as the trainer's first learner counts them)
// enter a new period: checkpoint, progress summary, cross-validation. When training ends,
// each action whose last period was partial runs once more; then the test runs.
//
// A checkpoint is the Trainer's (save_trainer_checkpoint: the model file and `<file>.ckp`)
// with the training source's position under the external-state key
// "TrainingMinibatchSource", as CNTK writes it. The trainer and the sources must outlive
// the session. See src/learn/README.md.
#pragma once
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cntk/dictionary.h"
#include "cntk/schedule.h"
#include "cntk/trainer.h"

namespace cntk {

namespace io {
class MinibatchSource;
}

// What a frequency counts (CNTK's enumerator values).
enum class DataUnit : unsigned { Sweep = 0, Sample = 1, Minibatch = 2 };

// Minibatch sizes by the number of samples trained so far.
using MinibatchSizeSchedule = TrainingParameterSchedule<size_t>;

// A frequency of "never during training, once at its end".
inline constexpr size_t kAtTrainingEnd = std::numeric_limits<size_t>::max();
// A sample limit of "until the data ends".
inline constexpr size_t kAllSamples = std::numeric_limits<size_t>::max();

struct Frequency {
  size_t value = kAtTrainingEnd;  // 0: never
  DataUnit unit = DataUnit::Sample;
};

// One minibatch of model inputs; empty at the end of the data.
struct SourceMinibatch {
  VariableValues arguments;
  bool sweep_end = false;
  bool empty() const { return arguments.empty(); }
};

// Where a session reads its minibatches: a reader with the model's inputs mapped to its
// streams, or anything else that yields minibatches (the Python binding's sources).
class TrainingSource {
 public:
  virtual ~TrainingSource() = default;
  // About `max_samples` samples (the reader's rule), as partition `worker_rank` of
  // `num_workers`; empty when the data has ended (for this worker).
  virtual SourceMinibatch next_minibatch(size_t max_samples, size_t num_workers, size_t worker_rank) = 0;
  // Whether the position can be saved; only then are the two below called.
  virtual bool has_state() const { return false; }
  virtual Dictionary checkpoint_state() const { return {}; }
  virtual void restore_from_checkpoint(const Dictionary& /*state*/) {}
  // Whether reading with no sample limit never ends (neither max_samples nor max_sweeps set).
  virtual bool is_infinite() const { return false; }
};
using TrainingSourcePtr = std::shared_ptr<TrainingSource>;

// A reader (src/io/minibatch_source.h) as a session source: each (input, stream name) pair
// feeds the stream to the input. The reader's [sequences, steps, ...] data loses its step
// axis for an input without a sequence axis, and sparse data becomes dense for a dense input.
TrainingSourcePtr reader_source(std::shared_ptr<io::MinibatchSource> reader,
                                std::vector<std::pair<Variable, std::string>> inputs_to_streams);

// Receives what the session's trainer did; CNTK's progress writers sit behind it.
class TrainingProgress {
 public:
  virtual ~TrainingProgress() = default;
  // After each trained minibatch (Trainer::previous_minibatch_loss/evaluation).
  virtual void training_minibatch(const Trainer& /*trainer*/) {}
  // After each minibatch of cross-validation or test (Trainer::previous_test_minibatch).
  virtual void test_minibatch(const Trainer& /*trainer*/) {}
  // At the end of each progress period: the summary since the last one.
  virtual void training_summary(const Trainer& /*trainer*/) {}
  // After each cross-validation pass and the test.
  virtual void test_summary(const Trainer& /*trainer*/) {}
};
using TrainingProgressPtr = std::shared_ptr<TrainingProgress>;

// Prints CNTK's epoch and evaluation summaries:
//   Finished Epoch[1 of 5]: [Training] loss = 0.693147 * 400, metric = 50.00% * 400 0.012s (33333.3 samples/s);
//   Finished Evaluation [1]: Minibatch[1-4]: metric = 12.50% * 200;
class ProgressPrinter : public TrainingProgress {
 public:
  // `num_epochs` 0: the total is not printed. `tag` goes before "loss".
  explicit ProgressPrinter(std::FILE* out = stdout, size_t num_epochs = 0, std::string tag = "[Training] ");
  void training_minibatch(const Trainer& trainer) override;
  void test_minibatch(const Trainer& trainer) override;
  void training_summary(const Trainer& trainer) override;
  void test_summary(const Trainer& trainer) override;

 private:
  std::FILE* out_;
  size_t num_epochs_;
  std::string tag_;
  MinibatchAggregate loss_, metric_, test_;
  bool has_metric_ = false;
  size_t epochs_ = 0, evaluations_ = 0, test_minibatches_ = 0;
  double epoch_start_;
};

struct CheckpointConfig {
  std::string filename;  // empty: no checkpoints
  Frequency frequency;   // kAtTrainingEnd: one checkpoint when training ends; 0: none
  bool restore = true;   // continue from the last checkpoint, if there is one
  // Keep each checkpoint as `filename` + its index (and the final state under `filename`).
  bool preserve_all = false;
};

struct CrossValidationConfig {
  TrainingSourcePtr source;  // null: only the callback runs (with zeros)
  Frequency frequency;       // kAtTrainingEnd: once, when training ends; 0: never
  // CNTK's C++ default (its Python API's is 32).
  MinibatchSizeSchedule minibatch_size{size_t(64)};
  size_t max_samples = kAllSamples;  // per pass
  // (index, average error, samples, minibatches) after each pass; false stops training.
  std::function<bool(size_t, double, size_t, size_t)> callback;
};

struct TestConfig {
  TrainingSourcePtr source;  // null: no test
  MinibatchSizeSchedule minibatch_size{size_t(64)};
};

class TrainingSession {
 public:
  // `max_samples` kAllSamples: until the training data ends. A progress frequency of 0
  // writes no summaries.
  TrainingSession(Trainer& trainer, TrainingSourcePtr source, MinibatchSizeSchedule minibatch_size,
                  size_t max_samples = kAllSamples, Frequency progress_frequency = {}, CheckpointConfig checkpoint = {},
                  CrossValidationConfig cross_validation = {}, TestConfig test = {},
                  std::vector<TrainingProgressPtr> progress = {});
  virtual ~TrainingSession() = default;
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  // Restores the last checkpoint (when configured), trains, then tests. If it throws, a
  // running profiler session writes its files first.
  void train();
  // Restores the trainer and the training source from `path` (its `.ckp` beside it) and
  // puts each periodic action in its period.
  void restore_from_checkpoint(const std::string& path);

  // The hooks CNTK lets a subclass override.
  virtual size_t minibatch_size() { return minibatch_size_[trainer_.total_number_of_samples_seen()]; }
  virtual void on_minibatch_start() {}
  virtual bool on_minibatch_end() { return true; }  // false stops training
  virtual void on_checkpoint_start(size_t /*index*/) {}
  virtual void on_checkpoint_end(size_t /*index*/) {}
  virtual void on_cross_validation_start(size_t /*index*/) {}
  // Calls the configuration's callback; false stops training.
  virtual bool on_cross_validation_end(size_t index, double average_error, size_t num_samples, size_t num_minibatches);

  Trainer& trainer() const { return trainer_; }

 private:
  struct PeriodicAction {
    Frequency frequency;
    bool (TrainingSession::*run)(size_t index);
    size_t index = 0;       // the period the counted units are in
    size_t last_count = 0;  // the units counted when it last ran
  };

  void run_training();
  size_t units_seen(DataUnit unit) const;
  SourceMinibatch next(TrainingSource& source, size_t size, bool distributed);
  void save_checkpoint(const std::string& path);
  std::string checkpoint_to_restore() const;
  bool checkpoint_action(size_t index);
  bool progress_action(size_t index);
  bool cross_validation_action(size_t index);
  // Tests on `source` until it ends or `max_samples` were read: (error sum, samples, minibatches).
  std::tuple<double, size_t, size_t> evaluate(TrainingSource& source, const MinibatchSizeSchedule& sizes,
                                              size_t max_samples);
  void test();

  Trainer& trainer_;
  TrainingSourcePtr source_;
  MinibatchSizeSchedule minibatch_size_;
  size_t max_samples_;
  CheckpointConfig checkpoint_;
  CrossValidationConfig cv_;
  TestConfig test_;
  std::vector<TrainingProgressPtr> progress_;
  std::vector<PeriodicAction> actions_;
  // Distributed learners (CNTK's rule): each worker reads its own partition once every
  // learner is distributed (after the longest warm start); block momentum reads `mb_scale_`
  // times the minibatch size; tests sum over all workers.
  size_t parallel_after_ = 0, rank_ = 0, workers_ = 1, mb_scale_ = 1;
};

}  // namespace cntk
