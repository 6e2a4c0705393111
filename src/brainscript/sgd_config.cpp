// The SGD block and its learner (see sgd_config.h).
#include "brainscript/sgd_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace cntk::brainscript {

namespace {

std::vector<double> numbers(const std::vector<std::string>& items, const std::string& what) {
  std::vector<double> out;
  for (const auto& s : items) out.push_back(config_to_double(s, what));
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return s;
}

// CNTK's conversion of a block momentum per block of `block_size` samples to a time constant.
double block_momentum_time_constant(double momentum, size_t block_size) {
  if (momentum <= 0 || momentum >= 1) throw ValueError("blockMomentumPerSync must be in (0, 1)");
  return -double(block_size) / std::log(momentum);
}

ParallelTraining read_parallel_block(const ConfigRecord& p, DataType dtype, size_t workers) {
  ParallelTraining out;
  const std::string method = lower(p.get("parallelizationMethod", "none"));
  if (method == "dataparallelsgd")
    out.method = ParallelTraining::Method::DataParallel;
  else if (method == "blockmomentumsgd")
    out.method = ParallelTraining::Method::BlockMomentum;
  else if (method == "modelaveragingsgd")
    out.method = ParallelTraining::Method::ModelAveraging;
  else if (method == "dataparallelasgd")
    throw NotImplementedError("parallelizationMethod '" + p.get("parallelizationMethod") +
                              "' is not implemented yet; DataParallelSGD, BlockMomentumSGD and ModelAveragingSGD are");
  else if (method != "none" && !method.empty())
    throw ValueError(p.name() +
                     ": parallelizationMethod must be none, DataParallelSGD, ModelAveragingSGD, "
                     "BlockMomentumSGD or DataParallelASGD, not '" +
                     p.get("parallelizationMethod") + "'");
  const long long start = p.get_int("parallelizationStartEpoch", 1);
  if (start < 1) throw ValueError(p.name() + ": parallelizationStartEpoch must be 1 or more");
  out.start_epoch = size_t(start - 1);
  out.distributed_reading_given = p.exists_here("distributedMBReading");
  // CNTK's default for readers of its second generation, which all readers here are.
  out.distributed_reading = p.get_bool("distributedMBReading", true);
  out.sync_perf_stats = size_t(std::max(0LL, p.get_int("syncPerfStats", 0)));
  if (p.get_bool("useFp16AllReduce", false))
    throw NotImplementedError("useFp16AllReduce is not implemented yet (the exchange is float32/float64 or quantized)");

  const size_t exact_bits = dtype == DataType::Double ? 64 : 32;
  out.gradient_bits = exact_bits;
  if (p.exists_here("DataParallelSGD")) {
    auto d = p.block("DataParallelSGD");
    std::set<double> bits;
    for (double b : numbers(d->get_array("gradientBits", {std::to_string(exact_bits)}), "gradientBits")) {
      if (b < 1 || b > double(exact_bits) || b != std::floor(b))
        throw ValueError(d->name() + ": gradientBits must be an integer from 1 to " + std::to_string(exact_bits));
      bits.insert(b);
    }
    if (bits.size() > 1) throw NotImplementedError("gradientBits that change between epochs are not implemented yet");
    out.gradient_bits = size_t(*bits.begin());
    if (out.gradient_bits < exact_bits && !std::set<size_t>{1, 2, 4, 8, 16}.count(out.gradient_bits))
      throw NotImplementedError("gradientBits = " + std::to_string(out.gradient_bits) +
                                " is not implemented; 1, 2, 4, 8, 16 and " + std::to_string(exact_bits) + " are");
    out.zero_threshold_for_1bit = d->get_bool("useZeroThresholdFor1BitQuantization", true);
    if (d->get_bool("useBufferedAsyncGradientAggregation", false))
      throw NotImplementedError("useBufferedAsyncGradientAggregation is not implemented yet");
  }
  // The block of BlockMomentumSGD and ModelAveragingSGD (CNTK's defaults: 120000 and 40000
  // samples per worker; syncPeriod and syncFrequencyInFrames are its older per-worker names).
  const auto block_size = [workers](const ConfigRecord& b, size_t per_worker_default) {
    if (b.exists_here("blockSize") && b.exists_here("blockSizePerWorker"))
      throw ValueError(b.name() + ": give blockSize or blockSizePerWorker, not both");
    size_t size = per_worker_default * workers;
    if (b.exists_here("blockSizePerWorker"))
      size = size_t(b.get_int("blockSizePerWorker", 0)) * workers;
    else if (b.exists_here("blockSize"))
      size = size_t(b.get_int("blockSize", 0));
    else if (b.exists_here("syncPeriod"))
      size = size_t(b.get_int("syncPeriod", 0)) * workers;
    else if (b.exists_here("syncFrequencyInFrames"))
      size = size_t(b.get_int("syncFrequencyInFrames", 0)) * workers;
    if (size == 0) throw ValueError(b.name() + ": the block size must be positive");
    return size;
  };
  if (p.exists_here("ModelAveragingSGD")) out.block_size = block_size(*p.block("ModelAveragingSGD"), 40000);
  if (p.exists_here("BlockMomentumSGD")) {
    auto b = p.block("BlockMomentumSGD");
    out.block_size = block_size(*b, 120000);
    out.reset_sgd_momentum = b->get_bool("resetSGDMomentum", true);
    out.use_nesterov_momentum = b->get_bool("useNesterovMomentum", true);
    out.block_learning_rate = b->get_double("blockLearningRate", 1.0);
    if (b->exists_here("blockMomentumAsTimeConstant") && b->exists_here("blockMomentumPerSync"))
      throw ValueError(b->name() + ": give blockMomentumAsTimeConstant or blockMomentumPerSync, not both");
    if (b->exists_here("blockMomentumAsTimeConstant"))
      out.block_momentum_as_time_constant = b->get_double("blockMomentumAsTimeConstant");
    else if (b->exists_here("blockMomentumPerSync"))
      out.block_momentum_as_time_constant =
          block_momentum_time_constant(b->get_double("blockMomentumPerSync"), out.block_size);
  }
  if (out.block_size == 0)  // without the method's block: its default
    out.block_size = (out.method == ParallelTraining::Method::ModelAveraging ? 40000 : 120000) * workers;
  return out;
}

LearningRateAdjustment read_adjust_block(const ConfigRecord& a, const std::vector<double>& minibatch_sizes) {
  LearningRateAdjustment out;
  const std::string kind = lower(a.get("autoAdjustLR", "none"));  // with CNTK's older spellings
  if (kind == "adjustafterepoch" || kind == "afterepoch" || kind == "after")
    out.after_epoch = true;
  else if (kind == "searchbeforeepoch" || kind == "beforeepoch" || kind == "before")
    out.search_before = true;
  else if (kind != "none" && kind != "false")
    throw ValueError(a.name() + ": autoAdjustLR must be None, SearchBeforeEpoch or AdjustAfterEpoch, not '" +
                     a.get("autoAdjustLR") + "'");
  out.adjust_minibatch = a.get_bool("autoAdjustMinibatch", false);
  out.minibatch_tuning_frequency = size_t(std::max(1LL, a.get_int("minibatchSizeTuningFrequency", 1)));
  out.minibatch_tuning_max = size_t(std::max(1LL, a.get_int("minibatchSizeTuningMax", 1048576)));
  out.minibatch_error_margin = size_t(std::max(0LL, a.get_int("minibatchSearchCriterionErrorMargin", 1)));
  out.reduce_if_improve_less_than = a.get_double("reduceLearnRateIfImproveLessThan", out.reduce_if_improve_less_than);
  out.decrease_factor = a.get_double("learnRateDecreaseFactor", out.decrease_factor);
  out.increase_if_improve_more_than =
      a.get_double("increaseLearnRateIfImproveMoreThan", out.increase_if_improve_more_than);
  out.increase_factor = a.get_double("learnRateIncreaseFactor", out.increase_factor);
  out.continue_reduce = a.get_bool("continueReduce", false);
  out.load_best_model = a.get_bool("loadBestModel", true);
  out.interval = size_t(std::max(1LL, a.get_int("learnRateAdjustInterval", 1)));  // as CNTK: at least 1
  out.use_cv_set = a.get_bool("UseCVSetControlLRIfCVExists", true);
  out.use_eval_criterion = a.get_bool("UseEvalCriterionControlLR", false);
  out.num_prev_learn_rates = size_t(std::max(1LL, a.get_int("numPrevLearnRates", 5)));
  out.num_best_search_epoch = size_t(std::max(0LL, a.get_int("numBestSearchEpoch", 1)));
  // Samples per trial: numSamples4Search, or its older form in minibatches of each epoch's size;
  // 500 minibatches by default.
  if (a.exists("numMiniBatch4LRSearch")) {
    const auto counts = numbers(a.get_array("numMiniBatch4LRSearch"), "numMiniBatch4LRSearch");
    for (size_t i = 0; i < counts.size(); ++i) out.search_samples.push_back(counts[i] * for_epoch(minibatch_sizes, i));
  } else if (a.exists("numSamples4Search")) {
    out.search_samples = numbers(a.get_array("numSamples4Search"), "numSamples4Search");
  } else {
    for (double mb : minibatch_sizes) out.search_samples.push_back(mb * 500);
  }
  return out;
}

}  // namespace

SGDSettings read_sgd_block(const ConfigRecord& sgd, DataType dtype, bool parallel, size_t workers) {
  SGDSettings s;
  s.max_epochs = sgd.get_int("maxEpochs", -1);
  if (s.max_epochs <= 0) throw ValueError(sgd.name() + ": maxEpochs must be given and positive");
  s.epoch_size = size_t(sgd.get_int("epochSize", 0));
  s.minibatch_sizes = numbers(sgd.get_array("minibatchSize", {"256"}), "minibatchSize");
  for (double mb : s.minibatch_sizes)
    if (mb < 1) throw ValueError(sgd.name() + ": minibatchSize must be positive");

  s.update = lower(sgd.get("gradUpdateType", "None"));
  if (s.update.empty() || s.update == "normal" || s.update == "simple") s.update = "none";  // CNTK's older names
  if (sgd.get_bool("useAdagrad", false)) s.update = "adagrad";                              // ditto
  if (!std::set<std::string>{"none", "adagrad", "rmsprop", "fsadagrad", "adam"}.count(s.update))
    throw ValueError(sgd.name() + ": gradUpdateType must be None, AdaGrad, RmsProp, FSAdaGrad or Adam, not '" +
                     sgd.get("gradUpdateType") + "'");
  s.dropout_rates = numbers(sgd.get_array("dropoutRate", {"0"}), "dropoutRate");
  for (double r : s.dropout_rates)
    if (r < 0 || r >= 1) throw ValueError(sgd.name() + ": dropoutRate must be >= 0 and < 1");

  if (sgd.exists_here("AutoAdjust")) s.adjust = read_adjust_block(*sgd.block("AutoAdjust"), s.minibatch_sizes);
  const bool per_sample = sgd.exists("learningRatesPerSample"), per_mb = sgd.exists("learningRatesPerMB");
  if (per_sample && per_mb)
    throw ValueError(sgd.name() + ": give learningRatesPerSample or learningRatesPerMB, not both");
  if (per_sample) {
    s.lr_per_sample = numbers(sgd.get_array("learningRatesPerSample"), "learningRatesPerSample");
  } else if (per_mb) {
    const auto values = numbers(sgd.get_array("learningRatesPerMB"), "learningRatesPerMB");
    for (size_t i = 0; i < values.size(); ++i) s.lr_per_sample.push_back(values[i] / for_epoch(s.minibatch_sizes, i));
  } else if (!s.adjust.search_before) {  // a search finds the rates
    throw ValueError(sgd.name() + ": learningRatesPerSample or learningRatesPerMB must be given");
  }
  s.given_learning_rates = s.lr_per_sample.size();
  if (s.lr_per_sample.empty()) s.lr_per_sample.push_back(0.5 / s.minibatch_sizes[0]);
  s.min_learning_rate_given = sgd.exists("minLearningRatePerSample");
  s.min_learning_rate = sgd.get_double("minLearningRatePerSample", s.min_learning_rate);

  // Momentum as a per-sample value per epoch (CNTK's momentumPerSample; momentumPerMB is per
  // that epoch's minibatch size; the default is 0.9 per minibatch).
  const int momentum_keys = int(sgd.exists("momentumPerSample")) + int(sgd.exists("momentumPerMB")) +
                            int(sgd.exists("momentumAsTimeConstant"));
  if (momentum_keys > 1)
    throw ValueError(sgd.name() + ": give one of momentumPerSample, momentumPerMB and momentumAsTimeConstant");
  if (sgd.exists("momentumPerSample")) {
    s.momentum_per_sample = numbers(sgd.get_array("momentumPerSample"), "momentumPerSample");
  } else if (sgd.exists("momentumAsTimeConstant")) {
    for (double tc : numbers(sgd.get_array("momentumAsTimeConstant"), "momentumAsTimeConstant"))
      s.momentum_per_sample.push_back(tc == 0 ? 0 : std::exp(-1 / tc));
  } else {
    const auto per_mb_values = numbers(sgd.get_array("momentumPerMB", {"0.9"}), "momentumPerMB");
    for (size_t i = 0; i < per_mb_values.size(); ++i)
      s.momentum_per_sample.push_back(std::pow(per_mb_values[i], 1.0 / for_epoch(s.minibatch_sizes, i)));
  }
  for (double m : s.momentum_per_sample)
    if (m < 0 || m >= 1) throw ValueError(sgd.name() + ": momentum must be in [0, 1)");
  if (sgd.get_bool("useNAG", false)) s.update = s.update == "none" ? "nesterov" : s.update;

  s.options.l1_regularization_weight = sgd.get_double("L1RegWeight", 0);
  s.options.l2_regularization_weight = sgd.get_double("L2RegWeight", 0);
  s.options.gradient_clipping_threshold_per_sample =
      sgd.get_double("clippingThresholdPerSample", std::numeric_limits<double>::infinity());
  s.options.gradient_clipping_with_truncation = sgd.get_bool("gradientClippingWithTruncation", true);
  s.options.gaussian_noise_injection_std_dev = sgd.get_double("gaussianNoiseInjectStd", 0);
  s.ave_multiplier = sgd.get_bool("normWithAveMultiplier", true);
  s.rms_gamma = sgd.get_double("rms_gamma", s.rms_gamma);
  s.rms_inc = sgd.get_double("rms_wgt_inc", s.rms_inc);
  s.rms_dec = sgd.get_double("rms_wgt_dec", s.rms_dec);
  s.rms_max = sgd.get_double("rms_wgt_max", s.rms_max);
  s.rms_min = sgd.get_double("rms_wgt_min", s.rms_min);
  s.variance_time_constant = sgd.get_double("varianceTimeConstant", s.variance_time_constant);
  s.adam_mean_momentum = sgd.get_double("adam_meanMomentum", s.adam_mean_momentum);
  s.adam_var_momentum = sgd.get_double("adam_varMomentum", s.adam_var_momentum);
  s.adam_epsilon = sgd.get_double("adam_epsilon", s.adam_epsilon);
  s.show_every = size_t(sgd.get_int("numMBsToShowResult", 10));
  s.keep_checkpoint_files = sgd.get_bool("keepCheckPointFiles", false);

  if (sgd.exists_here("ParallelTrain")) {
    if (parallel)
      s.parallel = read_parallel_block(*sgd.block("ParallelTrain"), dtype, workers);
    else
      std::fprintf(stderr, "parallelTrain option is not enabled. ParallelTrain config will be ignored.\n");
  }
  return s;
}

LearnerPtr make_learner(const SGDSettings& s, const std::vector<Variable>& parameters, size_t epoch_size) {
  epoch_size = std::max<size_t>(epoch_size, 1);
  // CNTK's v1 updates are the engine's learners with a per-sample learning rate and unit-gain
  // momentum; AdaGrad and RmsProp take no momentum, Adam its own (per minibatch, as CNTK's
  // BrainScript Adam applied adam_meanMomentum and adam_varMomentum).
  const LearningRateSchedule lr(s.lr_per_sample, epoch_size, 1);
  const MomentumSchedule momentum(s.momentum_per_sample, epoch_size, 1);
  LearnerPtr learner;
  if (s.update == "adagrad") {
    learner = adagrad_learner(parameters, lr, s.ave_multiplier, s.options);
  } else if (s.update == "rmsprop") {
    learner = rmsprop_learner(parameters, lr, s.rms_gamma, s.rms_inc, s.rms_dec, s.rms_max, s.rms_min, s.ave_multiplier,
                              s.options);
  } else if (s.update == "fsadagrad") {
    learner = fsadagrad_learner(parameters, lr, momentum, /*unit_gain=*/true,
                                momentum_as_time_constant_schedule(s.variance_time_constant), s.options);
  } else if (s.update == "adam") {
    learner = adam_learner(parameters, lr, MomentumSchedule(s.adam_mean_momentum), /*unit_gain=*/true,
                           MomentumSchedule(s.adam_var_momentum), s.adam_epsilon, /*adamax=*/false, s.options);
  } else if (s.update == "nesterov") {
    learner = nesterov_learner(parameters, lr, momentum, /*unit_gain=*/true, s.options);
  } else {
    learner = momentum_sgd_learner(parameters, lr, momentum, /*unit_gain=*/true, s.options);
  }
  const ParallelTraining& p = s.parallel;
  if (!p.enabled()) return learner;
  const size_t distribute_after = p.start_epoch * epoch_size;
  if (p.method == ParallelTraining::Method::BlockMomentum)
    return block_momentum_distributed_learner(mpi_communicator(), learner, distribute_after, p.block_size,
                                              p.block_momentum_as_time_constant, p.use_nesterov_momentum,
                                              p.reset_sgd_momentum, p.block_learning_rate);
  if (p.method == ParallelTraining::Method::ModelAveraging) {
    // Averaging the workers' models every block is block momentum 0 with a block learning rate
    // of 1/workers (CNTK weighted each model by its samples, which are equal shares here).
    auto communicator = mpi_communicator();
    return block_momentum_distributed_learner(communicator, learner, distribute_after, p.block_size,
                                              /*block_momentum_as_time_constant=*/0.0, /*use_nesterov_momentum=*/false,
                                              /*reset_sgd_momentum_after_aggregation=*/false,
                                              1.0 / double(communicator->num_workers()));
  }
  const bool exact = p.gradient_bits >= 32;
  auto communicator = exact ? mpi_communicator()
                            : quantized_mpi_communicator(p.zero_threshold_for_1bit,
                                                         /*use_quantization_for_self_stripe=*/true, p.gradient_bits);
  return data_parallel_distributed_learner(communicator, learner, distribute_after);
}

}  // namespace cntk::brainscript
