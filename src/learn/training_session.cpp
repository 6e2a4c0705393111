// TrainingSession (include/cntk/training_session.h): CNTK 2.7's training loop, with the
// periodic actions, checkpoint restore, cross-validation and test of its TrainingSession.
#include "cntk/training_session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "cntk/distributed.h"
#include "cntk/profiler.h"
#include "cntk/serialize.h"
#include "io/minibatch_source.h"

namespace cntk {

namespace {

// The key of the training source's position in a checkpoint's external state (CNTK's).
constexpr const char* kSourceKey = "TrainingMinibatchSource";

// Whether reading `source` up to `max_samples` never ends (CNTK's check: only an unlimited
// sample count over an unlimited source).
bool reads_forever(const TrainingSource& source, size_t max_samples) {
  return max_samples >= size_t(std::numeric_limits<int64_t>::max()) && source.is_infinite();
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class ReaderSource : public TrainingSource {
 public:
  ReaderSource(std::shared_ptr<io::MinibatchSource> reader, std::vector<std::pair<Variable, std::string>> inputs)
      : reader_(std::move(reader)) {
    if (!reader_) throw ValueError("reader_source: the reader must not be null");
    for (auto& [var, name] : inputs) {
      const auto& streams = reader_->streams();
      size_t i = 0;
      while (i < streams.size() && streams[i].name != name) ++i;
      if (i == streams.size()) throw ValueError("reader_source: the reader has no stream named '" + name + "'");
      inputs_.push_back({std::move(var), i});
    }
  }

  SourceMinibatch next_minibatch(size_t max_samples, size_t num_workers, size_t worker_rank) override {
    SourceMinibatch out;
    if (max_samples == 0) return out;
    io::Minibatch mb = reader_->next_minibatch(max_samples, num_workers, worker_rank);
    if (mb.empty()) return out;
    for (const auto& [var, stream] : inputs_) {
      const io::StreamMinibatch& s = mb.streams[stream];
      out.sweep_end = out.sweep_end || s.sweep_end;
      if (s.num_sequences == 0) return {};  // this partition got no data
      Value v = s.data;
      if (var.dynamic_axes().size() < 2 && v.mask()) v = io::drop_sequence_axis(v);
      if (v.is_sparse() && !var.is_sparse()) v = Value(v.data().to_dense(), v.mask());
      out.arguments.emplace_back(var, std::move(v));
    }
    return out;
  }
  bool has_state() const override { return true; }
  Dictionary checkpoint_state() const override { return reader_->checkpoint_state(); }
  void restore_from_checkpoint(const Dictionary& state) override { reader_->restore_from_checkpoint(state); }
  bool is_infinite() const override { return reader_->is_infinite(); }

 private:
  std::shared_ptr<io::MinibatchSource> reader_;
  std::vector<std::pair<Variable, size_t>> inputs_;
};

}  // namespace

TrainingSourcePtr reader_source(std::shared_ptr<io::MinibatchSource> reader,
                                std::vector<std::pair<Variable, std::string>> inputs_to_streams) {
  return std::make_shared<ReaderSource>(std::move(reader), std::move(inputs_to_streams));
}

// ---- ProgressPrinter ----

ProgressPrinter::ProgressPrinter(std::FILE* out, size_t num_epochs, std::string tag)
    : out_(out), num_epochs_(num_epochs), tag_(std::move(tag)), epoch_start_(seconds_now()) {}

void ProgressPrinter::training_minibatch(const Trainer& trainer) {
  const MinibatchAggregate& loss = trainer.previous_minibatch_loss();
  if (loss.samples == 0) return;
  loss_.sum += loss.sum;
  loss_.samples += loss.samples;
  has_metric_ = trainer.evaluation_function() != nullptr;
  if (has_metric_) metric_.sum += trainer.previous_minibatch_evaluation().sum;
}

void ProgressPrinter::test_minibatch(const Trainer& trainer) {
  const MinibatchAggregate& t = trainer.previous_test_minibatch();
  if (t.samples == 0) return;
  test_.sum += t.sum;
  test_.samples += t.samples;
  ++test_minibatches_;
}

void ProgressPrinter::training_summary(const Trainer&) {
  if (loss_.samples == 0) return;
  const double now = seconds_now(), seconds = now - epoch_start_;
  const double n = double(loss_.samples);
  std::string epoch = std::to_string(++epochs_);
  if (num_epochs_) epoch += " of " + std::to_string(num_epochs_);
  std::fprintf(out_, "Finished Epoch[%s]: %sloss = %.6f * %zu", epoch.c_str(), tag_.c_str(), loss_.sum / n,
               loss_.samples);
  if (has_metric_) std::fprintf(out_, ", metric = %.2f%% * %zu", 100.0 * metric_.sum / n, loss_.samples);
  std::fprintf(out_, " %.3fs (%5.1f samples/s);\n", seconds, seconds > 0 ? n / seconds : 0.0);
  std::fflush(out_);
  loss_ = metric_ = {};
  epoch_start_ = now;
}

void ProgressPrinter::test_summary(const Trainer&) {
  if (test_minibatches_ == 0) return;
  std::fprintf(out_, "Finished Evaluation [%zu]: Minibatch[1-%zu]: metric = %.2f%% * %zu;\n", ++evaluations_,
               test_minibatches_, 100.0 * test_.sum / double(test_.samples), test_.samples);
  std::fflush(out_);
  test_ = {};
  test_minibatches_ = 0;
}

// ---- TrainingSession ----

TrainingSession::TrainingSession(Trainer& trainer, TrainingSourcePtr source, MinibatchSizeSchedule minibatch_size,
                                 size_t max_samples, Frequency progress_frequency, CheckpointConfig checkpoint,
                                 CrossValidationConfig cross_validation, TestConfig test,
                                 std::vector<TrainingProgressPtr> progress)
    : trainer_(trainer),
      source_(std::move(source)),
      minibatch_size_(std::move(minibatch_size)),
      max_samples_(max_samples),
      checkpoint_(std::move(checkpoint)),
      cv_(std::move(cross_validation)),
      test_(std::move(test)),
      progress_(std::move(progress)) {
  if (!source_) throw ValueError("Training minibatch source must not be None.");
  if (max_samples_ == 0) throw ValueError("TrainingSession: max_samples must not be zero");
  if (checkpoint_.filename.empty()) {
    if (checkpoint_.frequency.value != 0 && checkpoint_.frequency.value != kAtTrainingEnd)
      throw ValueError("Checkpoint frequency cannot be specified without checkpoint_filename");
    if (checkpoint_.preserve_all) throw ValueError("CheckpointConfig: preserve_all needs a checkpoint file name");
    checkpoint_.frequency.value = 0;
  }
  if (!cv_.source && !cv_.callback) {
    if (cv_.frequency.value != 0 && cv_.frequency.value != kAtTrainingEnd)
      throw ValueError("Either minibatch_source of callback should be specified.");
    cv_.frequency.value = 0;
  }
  for (const LearnerPtr& learner : trainer_.parameter_learners())
    if (auto d = std::dynamic_pointer_cast<DistributedLearner>(learner)) {
      parallel_after_ = std::max(parallel_after_, d->parallelization_after());
      rank_ = d->communicator()->rank();
      workers_ = d->communicator()->num_workers();
      mb_scale_ = d->minibatch_size_scale_factor();
    }
  if (checkpoint_.frequency.value) actions_.push_back({checkpoint_.frequency, &TrainingSession::checkpoint_action});
  if (progress_frequency.value) actions_.push_back({progress_frequency, &TrainingSession::progress_action});
  if (cv_.frequency.value) actions_.push_back({cv_.frequency, &TrainingSession::cross_validation_action});
}

size_t TrainingSession::units_seen(DataUnit unit) const {
  if (unit == DataUnit::Sample) return trainer_.total_number_of_samples_seen();
  const Learner& first = *trainer_.parameter_learners().front();
  return unit == DataUnit::Minibatch ? first.total_number_of_minibatches_seen() : first.total_number_of_sweeps_seen();
}

SourceMinibatch TrainingSession::next(TrainingSource& source, size_t size, bool distributed) {
  if (size == 0) return {};
  profiler::ScopedEvent event(profiler::Phase::ReadMinibatch);
  return distributed ? source.next_minibatch(size, workers_, rank_) : source.next_minibatch(size, 1, 0);
}

void TrainingSession::save_checkpoint(const std::string& path) {
  Dictionary external;
  if (source_->has_state()) external[kSourceKey] = source_->checkpoint_state();
  save_trainer_checkpoint(trainer_, path, external);
}

bool TrainingSession::checkpoint_action(size_t index) {
  on_checkpoint_start(index);
  save_checkpoint(checkpoint_.filename + (checkpoint_.preserve_all ? std::to_string(index) : ""));
  // As CNTK does, profiling is enabled after each checkpoint (the first period is not
  // profiled); without a started profiler session this does nothing.
  profiler::enable();
  on_checkpoint_end(index);
  return true;
}

bool TrainingSession::progress_action(size_t) {
  for (const auto& p : progress_) p->training_summary(trainer_);
  return true;
}

std::string TrainingSession::checkpoint_to_restore() const {
  namespace fs = std::filesystem;
  const fs::path name(checkpoint_.filename);
  if (fs::exists(name)) return checkpoint_.filename;
  // Else the <filename>N with the largest N that has its .ckp (preserve_all).
  fs::path folder = name.parent_path();
  const std::string base = name.filename().string();
  if (!folder.empty() && !fs::is_directory(folder)) fs::create_directories(folder);
  std::string best;
  long long best_n = -1;
  for (const auto& entry : fs::directory_iterator(folder.empty() ? fs::path(".") : folder)) {
    const std::string f = entry.path().filename().string();
    if (f.size() <= base.size() || f.compare(0, base.size(), base) != 0) continue;
    const std::string suffix = f.substr(base.size());
    if (suffix.find_first_not_of("0123456789") != std::string::npos || suffix.size() > 18) continue;
    const fs::path candidate = folder / f;
    if (!fs::exists(candidate.string() + ".ckp")) continue;
    const long long n = std::stoll(suffix);
    if (n > best_n) best = candidate.string(), best_n = n;
  }
  return best;
}

void TrainingSession::restore_from_checkpoint(const std::string& path) {
  Dictionary state = restore_trainer_checkpoint(trainer_, path);
  auto it = state.find(kSourceKey);
  if (it != state.end() && source_->has_state() && it->second.is<std::shared_ptr<Dictionary>>())
    source_->restore_from_checkpoint(it->second.as_dict());
  for (PeriodicAction& a : actions_) {
    const size_t count = units_seen(a.frequency.unit);
    a.index = count / a.frequency.value;
    a.last_count = count - count % a.frequency.value;
  }
}

void TrainingSession::train() {
  try {
    run_training();
  } catch (...) {
    profiler::flush_after_error();
    throw;
  }
}

void TrainingSession::run_training() {
  if (checkpoint_.restore && !checkpoint_.filename.empty()) {
    const std::string path = checkpoint_to_restore();
    if (!path.empty()) restore_from_checkpoint(path);
  }
  const size_t restored = trainer_.total_number_of_samples_seen();
  if (reads_forever(*source_, max_samples_))
    throw ValueError("Train minibatch source must have a limited number of samples or sweeps.");

  bool early_exit = false, should_train = true;
  while (should_train) {
    const size_t seen = trainer_.total_number_of_samples_seen();
    const size_t left = early_exit || max_samples_ <= seen ? 0 : max_samples_ - seen;
    const bool distributed = workers_ > 1 && seen >= parallel_after_;
    const size_t size = left == 0 ? 0 : std::min(minibatch_size() * (distributed ? mb_scale_ : 1), left);
    SourceMinibatch mb = next(*source_, size, distributed);
    on_minibatch_start();
    // An empty minibatch ends training; a worker out of data still trains it, since the
    // others may not be.
    if (!mb.empty() || workers_ > 1) {
      should_train = trainer_.train_minibatch(mb.arguments, mb.sweep_end);
      for (const auto& p : progress_) p->training_minibatch(trainer_);
    } else {
      should_train = false;
    }
    early_exit |= !on_minibatch_end();
    for (PeriodicAction& a : actions_) {
      const size_t count = units_seen(a.frequency.unit);
      const size_t index = count / a.frequency.value;
      if (index != a.index) {
        early_exit |= !(this->*a.run)(a.index);
        a.index = index;
        a.last_count = count;
      }
    }
  }
  if (restored != trainer_.total_number_of_samples_seen()) {
    // The last, partial period of each action.
    for (PeriodicAction& a : actions_) {
      const size_t count = units_seen(a.frequency.unit);
      if (count % a.frequency.value != 0 && count != a.last_count) (this->*a.run)(a.index);
    }
  }
  // With preserve_all the numbered files hold the checkpoints; the final state also goes
  // under the plain name.
  if (checkpoint_.frequency.value && checkpoint_.preserve_all && !std::filesystem::exists(checkpoint_.filename))
    save_checkpoint(checkpoint_.filename);
  test();
}

std::tuple<double, size_t, size_t> TrainingSession::evaluate(TrainingSource& source, const MinibatchSizeSchedule& sizes,
                                                             size_t max_samples) {
  double error_sum = 0.0;
  size_t total = 0, minibatches = 0;
  const bool distributed = workers_ > 1;
  while (true) {
    SourceMinibatch mb = next(source, std::min(sizes[total], max_samples - total), distributed);
    if (mb.empty() && !distributed) break;
    trainer_.test_minibatch(mb.arguments, {}, nullptr, distributed);
    for (const auto& p : progress_) p->test_minibatch(trainer_);
    const MinibatchAggregate& prev = trainer_.previous_test_minibatch();
    if (distributed && prev.samples == 0) break;  // every worker is out of data
    error_sum += prev.sum;
    total += prev.samples;
    ++minibatches;
  }
  return {error_sum, total, minibatches};
}

bool TrainingSession::cross_validation_action(size_t index) {
  // CNTK 2.7 declares OnCrossValidationStart but never calls it; it is called here.
  on_cross_validation_start(index);
  // The training source's position is kept across cross-validation (CNTK does so that
  // truncated sequences start anew), and each pass reads the validation data from the
  // same position.
  Dictionary training_position;
  if (source_->has_state()) training_position = source_->checkpoint_state();
  bool result;
  if (cv_.source) {
    if (reads_forever(*cv_.source, cv_.max_samples))
      throw ValueError("Cross validation minibatch source must have a limited number of samples or sweeps.");
    Dictionary position;
    if (cv_.source->has_state()) position = cv_.source->checkpoint_state();
    auto [error_sum, total, minibatches] = evaluate(*cv_.source, cv_.minibatch_size, cv_.max_samples);
    if (cv_.source->has_state()) cv_.source->restore_from_checkpoint(position);
    for (const auto& p : progress_) p->test_summary(trainer_);
    result = on_cross_validation_end(index, total ? error_sum / double(total) : 0.0, total, minibatches);
  } else {
    result = on_cross_validation_end(index, 0.0, 0, 0);
  }
  if (source_->has_state()) source_->restore_from_checkpoint(training_position);
  return result;
}

bool TrainingSession::on_cross_validation_end(size_t index, double average_error, size_t num_samples,
                                              size_t num_minibatches) {
  return cv_.callback ? cv_.callback(index, average_error, num_samples, num_minibatches) : true;
}

void TrainingSession::test() {
  if (!test_.source) return;
  if (reads_forever(*test_.source, kAllSamples))
    throw ValueError("Test minibatch source must have a limited number of samples or sweeps.");
  evaluate(*test_.source, test_.minibatch_size, kAllSamples);
  for (const auto& p : progress_) p->test_summary(trainer_);
}

}  // namespace cntk
