// The C API's training: schedules, learners, the Trainer, and CTF minibatch sources.
#include <cmath>
#include <limits>

#include "capi_internal.h"
#include "cntk/serialize.h"
#include "io/ctf_deserializer.h"
#include "io/minibatch_source.h"

using namespace cntk;
using namespace cntk::capi;

struct cntk_minibatch_source {
  std::unique_ptr<io::MinibatchSource> source;
};
struct cntk_minibatch {
  io::Minibatch batch;
};

namespace {

TrainingParameterSchedule<double> schedule_of(const double* values, const size_t* counts, size_t count,
                                              size_t epoch_size, size_t minibatch_size) {
  if (!count) throw ValueError("training parameter schedule: the schedule is empty");
  need(values, "values");
  std::vector<std::pair<size_t, double>> pairs;
  for (size_t i = 0; i < count; ++i) pairs.emplace_back(counts ? counts[i] : 1, values[i]);
  return TrainingParameterSchedule<double>(pairs, epoch_size, minibatch_size);
}

AdditionalLearningOptions options_of(const cntk_learner_options* o) {
  AdditionalLearningOptions out;
  if (!o) return out;
  if (o->struct_size < sizeof(cntk_learner_options))
    throw ValueError("cntk_learner_options: struct_size " + std::to_string(o->struct_size) + " is smaller than " +
                     std::to_string(sizeof(cntk_learner_options)));
  out.l1_regularization_weight = o->l1_regularization_weight;
  out.l2_regularization_weight = o->l2_regularization_weight;
  if (o->gradient_clipping_threshold_per_sample > 0)
    out.gradient_clipping_threshold_per_sample = o->gradient_clipping_threshold_per_sample;
  out.gradient_clipping_with_truncation = o->gradient_clipping_with_truncation != 0;
  if (o->has_minibatch_size) out.minibatch_size = o->minibatch_size;
  return out;
}

const io::StreamMinibatch& stream_of(const cntk_minibatch* m, size_t index) {
  need(m, "minibatch");
  if (index >= m->batch.streams.size())
    throw OutOfRange("minibatch stream " + std::to_string(index) + " of " + std::to_string(m->batch.streams.size()));
  return m->batch.streams[index];
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------ schedules

cntk_status cntk_schedule_create(const double* values, const size_t* counts, size_t count, size_t epoch_size,
                                 size_t minibatch_size, cntk_schedule** out) {
  return guard([&] {
    need(out, "out");
    *out = new cntk_schedule{schedule_of(values, counts, count, epoch_size, minibatch_size)};
  });
}

cntk_status cntk_schedule_momentum_as_time_constant(const double* time_constants, const size_t* counts, size_t count,
                                                    size_t epoch_size, cntk_schedule** out) {
  return guard([&] {
    need(out, "out");
    need(time_constants, "time_constants");
    std::vector<std::pair<size_t, double>> pairs;
    for (size_t i = 0; i < count; ++i) pairs.emplace_back(counts ? counts[i] : 1, time_constants[i]);
    *out = new cntk_schedule{momentum_as_time_constant_schedule(pairs, epoch_size)};
  });
}

void cntk_schedule_release(cntk_schedule* s) { delete s; }

cntk_status cntk_schedule_value_at(const cntk_schedule* s, size_t count, double* out) {
  return guard([&] { *need(out, "out") = need(s, "schedule")->schedule[count]; });
}

cntk_status cntk_schedule_info(const cntk_schedule* s, size_t* epoch_size, size_t* minibatch_size) {
  return guard([&] {
    need(s, "schedule");
    if (epoch_size) *epoch_size = s->schedule.epoch_size();
    if (minibatch_size) *minibatch_size = s->schedule.minibatch_size();
  });
}

// ------------------------------------------------------------------ learners

cntk_status cntk_learner_create(const char* kind, const cntk_variable* const* parameters, size_t num_parameters,
                                const cntk_schedule* learning_rate, const cntk_schedule* momentum,
                                const cntk_schedule* variance_momentum, const cntk_dict* extra,
                                const cntk_learner_options* options, cntk_learner** out) {
  return guard([&] {
    need(out, "out");
    const std::string k = need(kind, "kind");
    std::vector<Variable> params = variables_arg(parameters, num_parameters, "parameter");
    const LearningRateSchedule& lr = need(learning_rate, "learning rate schedule")->schedule;
    AdditionalLearningOptions opts = options_of(options);
    const Dictionary none;
    const Dictionary& x = extra ? extra->dict : none;
    const bool unit_gain = attr_bool(x, "unitGain", default_unit_gain_value());
    auto mom = [&]() -> const MomentumSchedule& {
      return need(momentum, ("learner '" + k + "': momentum schedule").c_str())->schedule;
    };
    const MomentumSchedule var_mom = variance_momentum ? variance_momentum->schedule : default_variance_momentum();
    LearnerPtr l;
    if (k == "sgd")
      l = sgd_learner(params, lr, opts);
    else if (k == "momentum_sgd")
      l = momentum_sgd_learner(params, lr, mom(), unit_gain, opts);
    else if (k == "nesterov")
      l = nesterov_learner(params, lr, mom(), unit_gain, opts);
    else if (k == "adagrad")
      l = adagrad_learner(params, lr, attr_bool(x, "needAveMultiplier", true), opts);
    else if (k == "adadelta")
      l = adadelta_learner(params, lr, attr_double(x, "rho", 0.95), attr_double(x, "epsilon", 1e-8), opts);
    else if (k == "fsadagrad")
      l = fsadagrad_learner(params, lr, mom(), unit_gain, var_mom, opts);
    else if (k == "adam" || k == "adamax")
      l = adam_learner(params, lr, mom(), unit_gain, var_mom, attr_double(x, "epsilon", 1e-8), k == "adamax", opts);
    else if (k == "rmsprop")
      l = rmsprop_learner(params, lr, attr_double(x, "gamma", 0.95), attr_double(x, "inc", 1.2),
                          attr_double(x, "dec", 0.7), attr_double(x, "max", 10.0), attr_double(x, "min", 1e-3),
                          attr_bool(x, "needAveMultiplier", true), opts);
    else
      throw ValueError("unknown learner kind '" + k + "'");
    *out = new cntk_learner{std::move(l)};
  });
}

void cntk_learner_release(cntk_learner* l) { delete l; }

cntk_status cntk_learner_learning_rate(const cntk_learner* l, double* out) {
  return guard([&] { *need(out, "out") = need(l, "learner")->learner->learning_rate(); });
}

cntk_status cntk_learner_reset_learning_rate(cntk_learner* l, const cntk_schedule* s) {
  return guard([&] { need(l, "learner")->learner->reset_learning_rate(need(s, "schedule")->schedule); });
}

cntk_status cntk_learner_parameters(const cntk_learner* l, cntk_variable** out, size_t capacity, size_t* count) {
  return guard([&] { write_variables(need(l, "learner")->learner->parameters(), out, capacity, count); });
}

cntk_status cntk_learner_samples_seen(const cntk_learner* l, size_t* out) {
  return guard([&] { *need(out, "out") = need(l, "learner")->learner->total_number_of_samples_seen(); });
}

// ------------------------------------------------------------------ Trainer

cntk_status cntk_trainer_create(const cntk_function* model, const cntk_function* loss, const cntk_function* evaluation,
                                const cntk_learner* const* learners, size_t num_learners, cntk_trainer** out) {
  return guard([&] {
    need(out, "out");
    need(loss, "loss function");
    if (num_learners) need(learners, "learners");
    std::vector<LearnerPtr> ls;
    for (size_t i = 0; i < num_learners; ++i) ls.push_back(need(learners[i], "learner")->learner);
    *out = new cntk_trainer{std::make_unique<Trainer>(model ? model->fn : nullptr, loss->fn,
                                                      evaluation ? evaluation->fn : nullptr, std::move(ls))};
  });
}

void cntk_trainer_release(cntk_trainer* t) { delete t; }

cntk_status cntk_trainer_train_minibatch(cntk_trainer* t, const cntk_variable* const* arguments,
                                         const cntk_value* const* values, size_t count, int sweep_end, int* updated) {
  return guard([&] {
    need(t, "trainer");
    bool u = t->trainer->train_minibatch(bindings_arg(arguments, values, count), sweep_end != 0);
    if (updated) *updated = u;
  });
}

cntk_status cntk_trainer_test_minibatch(cntk_trainer* t, const cntk_variable* const* arguments,
                                        const cntk_value* const* values, size_t count, double* average) {
  return guard([&] {
    need(t, "trainer");
    need(average, "average");
    *average = t->trainer->test_minibatch(bindings_arg(arguments, values, count));
  });
}

cntk_status cntk_trainer_previous_minibatch_loss_average(const cntk_trainer* t, double* out) {
  return guard([&] { *need(out, "out") = need(t, "trainer")->trainer->previous_minibatch_loss_average(); });
}

cntk_status cntk_trainer_previous_minibatch_evaluation_average(const cntk_trainer* t, double* out) {
  return guard([&] { *need(out, "out") = need(t, "trainer")->trainer->previous_minibatch_evaluation_average(); });
}

cntk_status cntk_trainer_previous_minibatch_sample_count(const cntk_trainer* t, size_t* out) {
  return guard([&] { *need(out, "out") = need(t, "trainer")->trainer->previous_minibatch_sample_count(); });
}

cntk_status cntk_trainer_total_samples_seen(const cntk_trainer* t, size_t* out) {
  return guard([&] { *need(out, "out") = need(t, "trainer")->trainer->total_number_of_samples_seen(); });
}

cntk_status cntk_trainer_function(const cntk_trainer* t, int which, cntk_function** out) {
  return guard([&] {
    need(out, "out");
    const Trainer& tr = *need(t, "trainer")->trainer;
    FunctionPtr f;
    switch (which) {
      case 0: f = tr.model(); break;
      case 1: f = tr.loss_function(); break;
      case 2: f = tr.evaluation_function(); break;
      default: throw ValueError("unknown trainer function " + std::to_string(which));
    }
    *out = f ? new cntk_function{f} : nullptr;
  });
}

cntk_status cntk_trainer_save_checkpoint(const cntk_trainer* t, const char* path) {
  return guard([&] { save_trainer_checkpoint(*need(t, "trainer")->trainer, need(path, "path")); });
}

cntk_status cntk_trainer_restore_checkpoint(cntk_trainer* t, const char* path) {
  return guard([&] { restore_trainer_checkpoint(*need(t, "trainer")->trainer, need(path, "path")); });
}

// ------------------------------------------------------------------ MinibatchSource

namespace {

std::shared_ptr<io::CTFDeserializer> ctf_deserializer(const char* path, const cntk_stream_config* streams,
                                                      size_t num_streams) {
  std::string file = need(path, "path");
  if (!num_streams) throw ValueError("CTF deserializer '" + file + "': no streams configured");
  need(streams, "streams");
  std::vector<io::CTFStreamDef> defs;
  for (size_t i = 0; i < num_streams; ++i) {
    const cntk_stream_config& s = streams[i];
    io::CTFStreamDef d;
    d.name = need(s.name, "stream name");
    d.alias = s.alias ? s.alias : d.name;
    if (s.dim == 0) throw ValueError("stream '" + d.name + "': the dimension must be positive");
    d.shape = NDShape{int64_t(s.dim)};
    d.sparse = s.is_sparse != 0;
    defs.push_back(std::move(d));
  }
  return std::make_shared<io::CTFDeserializer>(file, std::move(defs));
}

}  // namespace

cntk_status cntk_minibatch_source_ctf(const char* path, const cntk_stream_config* streams, size_t num_streams,
                                      uint64_t max_samples, int randomize, size_t randomization_window_in_chunks,
                                      uint64_t seed, cntk_minibatch_source** out) {
  return guard([&] {
    need(out, "out");
    io::MinibatchSourceConfig c;
    c.deserializers.push_back(ctf_deserializer(path, streams, num_streams));
    // CNTK's TextFormatMinibatchSource counts epochs in samples; a full data sweep is one sweep.
    if (max_samples == io::kFullDataSweep)
      c.max_sweeps = 1;
    else
      c.max_samples = max_samples;
    c.randomize = randomize != 0;
    c.randomization_window_in_chunks = randomization_window_in_chunks;
    c.randomization_seed = seed;
    *out = new cntk_minibatch_source{std::make_unique<io::MinibatchSource>(std::move(c))};
  });
}

cntk_status cntk_minibatch_source_create_ctf(const char* const* paths, const cntk_stream_config* const* streams,
                                             const size_t* num_streams, size_t num_files,
                                             const cntk_minibatch_source_config* config, cntk_minibatch_source** out) {
  return guard([&] {
    need(out, "out");
    need(config, "config");
    if (config->struct_size < sizeof(cntk_minibatch_source_config))
      throw ValueError("cntk_minibatch_source_config: struct_size " + std::to_string(config->struct_size) +
                       " is smaller than " + std::to_string(sizeof(cntk_minibatch_source_config)));
    if (!num_files) throw ValueError("MinibatchSourceConfig: no deserializers");
    need(paths, "paths");
    need(streams, "streams");
    need(num_streams, "num_streams");
    io::MinibatchSourceConfig c;
    for (size_t i = 0; i < num_files; ++i)
      c.deserializers.push_back(ctf_deserializer(paths[i], streams[i], num_streams[i]));
    c.max_samples = config->max_samples ? config->max_samples : io::kInfinitelyRepeat;
    c.max_sweeps = config->max_sweeps ? config->max_sweeps : io::kInfinitelyRepeat;
    c.randomize = config->randomize != 0;
    if (config->randomization_window_in_chunks)
      c.randomization_window_in_chunks = config->randomization_window_in_chunks;
    c.randomization_window_in_samples = config->randomization_window_in_samples;
    c.randomization_seed = config->randomization_seed;
    c.frame_mode = config->frame_mode != 0;
    c.truncation_length = config->truncation_length;
    *out = new cntk_minibatch_source{std::make_unique<io::MinibatchSource>(std::move(c))};
  });
}

void cntk_minibatch_source_release(cntk_minibatch_source* s) { delete s; }

cntk_status cntk_minibatch_source_num_streams(const cntk_minibatch_source* s, size_t* out) {
  return guard([&] { *need(out, "out") = need(s, "minibatch source")->source->streams().size(); });
}

cntk_status cntk_minibatch_source_stream(const cntk_minibatch_source* s, size_t index, char* name, size_t name_capacity,
                                         size_t* name_length, cntk_dtype* dtype, size_t* dim, int* is_sparse) {
  return guard([&] {
    const auto& streams = need(s, "minibatch source")->source->streams();
    if (index >= streams.size())
      throw OutOfRange("stream " + std::to_string(index) + " of " + std::to_string(streams.size()));
    const io::StreamInfo& info = streams[index];
    write_string(info.name, name, name_capacity, name_length);
    if (dtype) *dtype = cntk_dtype(int(info.dtype));
    if (dim) *dim = info.dim();
    if (is_sparse) *is_sparse = info.sparse;
  });
}

cntk_status cntk_minibatch_source_next(cntk_minibatch_source* s, size_t size_in_samples, size_t num_partitions,
                                       size_t partition_index, cntk_minibatch** out) {
  return guard([&] {
    need(out, "out");
    need(s, "minibatch source");
    if (size_in_samples == 0) throw ValueError("GetNextMinibatch: the minibatch size must be positive");
    if (num_partitions == 0 || partition_index >= num_partitions)
      throw ValueError("GetNextMinibatch: partition " + std::to_string(partition_index) + " of " +
                       std::to_string(num_partitions));
    io::Minibatch mb = s->source->next_minibatch(size_in_samples, num_partitions, partition_index);
    *out = mb.empty() ? nullptr : new cntk_minibatch{std::move(mb)};
  });
}

cntk_status cntk_minibatch_source_mean_inv_stddev(cntk_minibatch_source* s, const size_t* stream_indices, size_t count,
                                                  cntk_ndarray** means, cntk_ndarray** inv_stddevs) {
  return guard([&] {
    need(s, "minibatch source");
    need(means, "means");
    need(inv_stddevs, "inv_stddevs");
    if (!count) return;
    need(stream_indices, "stream_indices");
    const auto& streams = s->source->streams();
    struct Moments {
      size_t stream, dim;
      std::vector<double> sum, sum_sq;
      size_t n = 0;
    };
    std::vector<Moments> acc;
    size_t bytes_per_sample = 0;
    for (size_t i = 0; i < count; ++i) {
      if (stream_indices[i] >= streams.size())
        throw OutOfRange("stream " + std::to_string(stream_indices[i]) + " of " + std::to_string(streams.size()));
      const size_t dim = streams[stream_indices[i]].dim();
      acc.push_back({stream_indices[i], dim, std::vector<double>(dim), std::vector<double>(dim)});
      bytes_per_sample += dim * sizeof(float);
    }
    // Minibatches of up to 128 MB, read to the end of the data (or of one sweep of a repeating source).
    const size_t mb_size = std::max<size_t>(1, (size_t(1) << 27) / bytes_per_sample);
    for (bool end = false; !end;) {
      io::Minibatch mb = s->source->next_minibatch(mb_size);
      if (mb.empty()) break;
      for (Moments& m : acc) {
        const io::StreamMinibatch& st = mb.streams[m.stream];
        end |= st.sweep_end;
        if (!st.data.is_valid()) continue;
        for (const NDArrayView& seq : st.data.unpack(1)) {
          NDArrayView d = seq.cast(DataType::Double);
          const double* p = d.data<double>();
          const size_t samples = size_t(d.numel()) / m.dim;
          for (size_t i = 0; i < samples; ++i)
            for (size_t k = 0; k < m.dim; ++k) {
              m.sum[k] += p[i * m.dim + k];
              m.sum_sq[k] += p[i * m.dim + k] * p[i * m.dim + k];
            }
          m.n += samples;
        }
      }
    }
    std::vector<std::unique_ptr<cntk_ndarray>> mean_out, inv_out;
    for (const Moments& m : acc) {
      const io::StreamInfo& info = streams[m.stream];
      if (!m.n) throw ValueError("ComputeInputPerDimMeansAndInvStdDevs: stream '" + info.name + "' has no samples");
      NDArrayView mean(DataType::Double, info.sample_shape), inv(DataType::Double, info.sample_shape);
      for (size_t k = 0; k < m.dim; ++k) {
        const double mu = m.sum[k] / double(m.n), var = std::max(0.0, m.sum_sq[k] / double(m.n) - mu * mu);
        mean.data<double>()[k] = mu;
        inv.data<double>()[k] = 1.0 / std::sqrt(std::max(var, 1e-10));  // CNTK floors the variance at 1e-10
      }
      mean_out.push_back(std::make_unique<cntk_ndarray>(cntk_ndarray{mean.cast(info.dtype)}));
      inv_out.push_back(std::make_unique<cntk_ndarray>(cntk_ndarray{inv.cast(info.dtype)}));
    }
    for (size_t i = 0; i < count; ++i) {
      means[i] = mean_out[i].release();
      inv_stddevs[i] = inv_out[i].release();
    }
  });
}

void cntk_minibatch_release(cntk_minibatch* m) { delete m; }

cntk_status cntk_minibatch_stream(const cntk_minibatch* m, size_t index, cntk_value** value, size_t* num_sequences,
                                  size_t* num_samples, int* sweep_end) {
  return guard([&] {
    const io::StreamMinibatch& st = stream_of(m, index);
    if (value) *value = st.data.is_valid() ? new cntk_value{st.data} : nullptr;
    if (num_sequences) *num_sequences = st.num_sequences;
    if (num_samples) *num_samples = st.num_samples;
    if (sweep_end) *sweep_end = st.sweep_end;
  });
}

}  // extern "C"
