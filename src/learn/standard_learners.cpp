// The standard learners. Each update follows CNTK's LearnerBase::Update: skip
// when the learning rate is 0; per parameter, pre-process the summed gradient
// (mean in compatible mode, clipping, L2), apply the learner's rule, then
// post-process the parameter (Gaussian noise, L1 proximal step).
#include <cmath>
#include <cstring>

#include "cntk/learner.h"
#include "cntk/random.h"
#include "core/rng.h"
#include "learn/update_kernels.h"

namespace cntk {

namespace {

class StandardLearner : public Learner {
 public:
  bool update(ParameterGradients& gradients, size_t n, bool sweep_end) final {
    report(lr_schedule_, "Learning rate");
    if (learning_rate_for(n) == 0.0) return false;
    if (n == 0) throw ValueError("learner update: the minibatch is empty (0 samples)");
    on_minibatch(n);
    for (size_t i = 0; i < parameters_.size(); ++i) {
      const Variable& p = parameters_[i];
      NDArrayView& w = writable_value(p);
      // A sparse gradient stays sparse where the rule reads it as it is (no clipping or
      // L2 term needs it dense first): the update then reads no zeros.
      const bool keep_sparse = reads_sparse_gradients() && !clips_or_regularizes();
      NDArrayView g = prepared_gradient(find_gradient(gradients, p), p, keep_sparse);
      CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
        T* wd = w.data<T>();
        const double gs = g.is_sparse() ? mean_factor<T>(n) : preprocess<T>(wd, g.data<T>(), w.numel(), n);
        apply(i, w, g, n, gs);
        postprocess<T>(wd, w.numel(), n);
      });
      ++p.impl()->value_version;
    }
    record_update(n, sweep_end);
    return true;
  }

  void reset_smoothed_gradients() override {
    for (auto& bufs : state_)
      for (auto& b : bufs) b.fill(0.0);
  }

  // Smoothed gradients are stored as CNTK lays them out: a parameter's k buffers
  // side by side as one [k * cols, rows] array (NumPy order; rows is the last axis),
  // the parameter's own shape when k is 1, and a scalar 0 when k is 0.
  Dictionary create_checkpoint() const override {
    Dictionary d = Learner::create_checkpoint();
    d["noise_injection_seed"] = DictValue(int64_t(noise_seed_));
    d["master_parameter_updated"] = DictValue(false);
    DictValue::List smoothed;
    for (size_t i = 0; i < parameters_.size(); ++i) smoothed.emplace_back(packed_state(i));
    d["smoothed_gradients"] = DictValue(std::move(smoothed));
    save_extra(d);
    return d;
  }

  void restore_from_checkpoint(const Dictionary& d) override {
    auto it = d.find("smoothed_gradients");
    DictValue::List by_uid;  // version 1 checkpoints (CNTK 2.0) key each state by its parameter's uid
    if (it == d.end() && d.count("version") && d.at("version").as_int() < 2) {
      for (auto& p : parameters_) {
        auto s = d.find(p.uid());
        if (s == d.end()) throw ValueError("learner checkpoint: no state for " + p.str() + " (uid " + p.uid() + ")");
        by_uid.push_back(s->second);
      }
    } else if (it == d.end()) {
      throw ValueError("learner checkpoint: no 'smoothed_gradients' in the checkpoint");
    }
    const auto& smoothed = it == d.end() ? by_uid : it->second.as_list();
    if (smoothed.size() != parameters_.size())
      throw ValueError("learner checkpoint: it holds state for " + std::to_string(smoothed.size()) +
                       " parameters, the learner has " + std::to_string(parameters_.size()));
    for (size_t i = 0; i < parameters_.size(); ++i) {
      NDArrayView want = packed_state(i);
      const NDArrayView& got = smoothed[i].as_array();
      if (got.dtype() != want.dtype() || got.shape() != want.shape())
        throw ValueError("learner checkpoint: the state of " + parameters_[i].str() + " has shape " +
                         got.shape().str() + " (" + to_string(got.dtype()) + "), expected " + want.shape().str() +
                         " (" + to_string(want.dtype()) + ")");
    }
    Learner::restore_from_checkpoint(d);
    auto seed = d.find("noise_injection_seed");
    if (seed != d.end()) noise_seed_ = uint64_t(seed->second.as_int());
    for (size_t i = 0; i < parameters_.size(); ++i) {
      const NDArrayView src = smoothed[i].as_array().contiguous();
      const size_t bytes = size_t(parameters_[i].shape().total_size()) * element_size(src.dtype());
      for (size_t k = 0; k < state_[i].size(); ++k)
        std::memcpy(state_[i][k].raw_data(), static_cast<const char*>(src.raw_data()) + k * bytes, bytes);
    }
    load_extra(d);
  }

 protected:
  StandardLearner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                  const AdditionalLearningOptions& options, size_t state_buffers)
      : Learner(parameters, lr, options), noise_seed_(next_random_seed()) {
    for (auto& p : parameters_) {
      DataType t = p.dtype();
      if (t != DataType::Float && t != DataType::Double)
        throw NotImplementedError("learners update float32 and float64 parameters; " + p.str() + " is " + to_string(t));
      if (p.value().shape().has_inferred() || !p.value().shape().is_known())
        throw ValueError("learner: " + p.str() + " has dimensions that are not known yet");
      std::vector<NDArrayView> bufs;
      for (size_t k = 0; k < state_buffers; ++k) bufs.push_back(NDArrayView::zeros(t, p.shape()));
      state_.push_back(std::move(bufs));
    }
  }

  // The learner's rule for parameter i: w is contiguous and writable, g contiguous and
  // writable when dense, sparse only where reads_sparse_gradients(); the gradient to
  // apply is g * gs (the mean, folded into the rule's one pass).
  virtual void apply(size_t i, NDArrayView& w, NDArrayView& g, size_t n, double gs) = 0;
  // Whether the rule reads a sparse gradient as it is (rules that write the gradient
  // back for a second pass take it dense).
  virtual bool reads_sparse_gradients() const { return true; }

  // The gradient as the update kernels read it.
  template <class T>
  static learn::Gradient<T> gradient_of(const NDArrayView& g) {
    learn::Gradient<T> out;
    if (g.is_sparse()) {
      out.sparse = &g.sparse_data();
      out.row_len = g.rank() ? g.shape()[g.rank() - 1] : 1;
    } else {
      out.dense = g.data<T>();
    }
    return out;
  }
  // Once per minibatch, before the parameters are updated.
  virtual void on_minibatch(size_t n) {}

  // Momentum for a minibatch of n samples: m ** (n / N) for reference size N.
  double momentum_for(const MomentumSchedule& s, size_t n) const {
    const double m = current(s);
    if (is_compatible_mode(s)) return m;
    return std::pow(m, double(n) / double(s.minibatch_size()));
  }

  template <class T>
  T* state(size_t i, size_t k) {
    return state_[i][k].data<T>();
  }

  // Learner-specific scalars in checkpoints.
  virtual void save_extra(Dictionary&) const {}
  virtual void load_extra(const Dictionary&) {}
  static double get_double(const Dictionary& d, const char* key) {
    auto it = d.find(key);
    if (it == d.end()) throw ValueError(std::string("learner checkpoint: no '") + key + "' in the checkpoint");
    return it->second.as_double();
  }

  std::vector<std::vector<NDArrayView>> state_;

 private:
  NDArrayView packed_state(size_t i) const {
    const Variable& p = parameters_[i];
    const size_t k = state_[i].size();
    if (k == 0) return NDArrayView::zeros(p.dtype(), NDShape{});
    if (k == 1) return state_[i][0].copy();
    const int64_t numel = p.shape().total_size();
    const int64_t rows = p.shape().rank() ? p.shape()[p.shape().rank() - 1] : 1;
    const int64_t cols = rows ? numel / rows : 0;
    NDArrayView out(p.dtype(), NDShape{int64_t(k) * cols, rows});
    const size_t bytes = size_t(numel) * element_size(p.dtype());
    for (size_t j = 0; j < k; ++j)
      std::memcpy(static_cast<char*>(out.raw_data()) + j * bytes, state_[i][j].raw_data(), bytes);
    return out;
  }

  // The parameter's value as a contiguous buffer the learner may write.
  static NDArrayView& writable_value(const Variable& p) {
    p.value();  // initializes a deferred parameter
    NDArrayView& v = p.impl()->value;
    if (v.is_read_only() || !v.is_contiguous() || v.is_sparse()) {
      NDArrayView c = v.to_dense().contiguous().copy();
      c.set_read_only(false);
      v = c;
    }
    return v;
  }

  static NDArrayView prepared_gradient(NDArrayView g, const Variable& p, bool keep_sparse) {
    if (g.is_sparse() && keep_sparse && g.dtype() == p.dtype() && g.shape() == p.shape()) return g;
    if (g.is_sparse()) g = g.to_dense();
    if (g.dtype() != p.dtype()) g = g.cast(p.dtype());
    if (g.shape() != p.shape()) {
      if (g.numel() != p.shape().total_size())
        throw ValueError("learner update: the gradient of " + p.str() + " has shape " + g.shape().str());
      g = g.contiguous().reshape(p.shape());
    }
    if (!g.is_contiguous() || g.is_read_only()) g = g.copy();
    return g;
  }

  // Mean gradient in compatible mode, gradient clipping, L2 regularization. Returns
  // the factor still to be applied to g: the mean's 1/n when nothing else reads the
  // gradient first (the rule then scales it in its own pass), else 1.
  template <class T>
  double preprocess(T* w, T* g, int64_t count, size_t n) {
    if (!clips_or_regularizes()) return mean_factor<T>(n);
    const bool mean = is_compatible_mode();
    const double threshold = options_.gradient_clipping_threshold_per_sample;
    const bool clip = threshold != std::numeric_limits<double>::infinity();
    const bool l2 = options_.l2_regularization_weight > 0;
    if (mean) learn::scale<T>(g, count, T(1) / T(n));
    if (clip) {
      // The threshold is per sample: the summed gradient may be n times larger.
      const double max_per_mb = mean ? threshold : threshold * double(n);
      if (options_.gradient_clipping_with_truncation) {
        learn::truncate<T>(g, count, T(max_per_mb));
      } else {
        const double norm = learn::frobenius_norm<T>(g, count);
        if (norm > max_per_mb) learn::scale<T>(g, count, T(max_per_mb / norm));
      }
    }
    if (l2) {
      // Per sample too: scaled by n on summed gradients.
      const double weight = options_.l2_regularization_weight * (mean ? 1.0 : double(n));
      learn::axpy<T>(g, w, count, T(weight));
    }
    return 1.0;
  }

  // Whether the gradient is clipped or gets an L2 term before the rule reads it.
  bool clips_or_regularizes() const {
    return options_.gradient_clipping_threshold_per_sample != std::numeric_limits<double>::infinity() ||
           options_.l2_regularization_weight > 0;
  }

  // The factor a rule applies to the summed gradient: the mean's 1/n in compatible mode.
  template <class T>
  double mean_factor(size_t n) const {
    return is_compatible_mode() ? double(T(1) / T(n)) : 1.0;
  }

  // Gaussian noise on the parameter, then the L1 proximal step.
  template <class T>
  void postprocess(T* w, int64_t count, size_t n) {
    const double stddev = current(options_.gaussian_noise_injection_std_dev);
    if (stddev > 0) {
      // CNTK's noise: a fresh generator per update, drawn as CNTK draws normals.
      rng::Engine g = rng::make_engine(noise_seed_++);
      const double sigma = double(T(stddev));
      for (int64_t i = 0; i < count; ++i) w[i] += T(rng::normal(g, 0.0, sigma));
    }
    if (options_.l1_regularization_weight > 0) {
      const double weight =
          learning_rate_for(n) * options_.l1_regularization_weight * (is_compatible_mode() ? 1.0 : double(n));
      learn::soft_threshold<T>(w, count, T(weight));
    }
  }

  uint64_t noise_seed_;
};

class SGDLearner final : public StandardLearner {
 public:
  SGDLearner(const std::vector<Variable>& p, const LearningRateSchedule& lr, const AdditionalLearningOptions& o)
      : StandardLearner(p, lr, o, 0) {}

 protected:
  void apply(size_t, NDArrayView& w, NDArrayView& g, size_t n, double gs) override {
    CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
      const T lr = T(learning_rate_for(n));
      learn::sgd<T>(w.data<T>(), gradient_of<T>(g), w.numel(), T(gs), lr);
    });
  }
};

class MomentumLearner : public StandardLearner {
 public:
  MomentumLearner(const std::vector<Variable>& p, const LearningRateSchedule& lr, const MomentumSchedule& m,
                  bool unit_gain, const AdditionalLearningOptions& o, size_t state_buffers, bool nesterov)
      : StandardLearner(p, lr, o, state_buffers), momentum_(m), unit_gain_(unit_gain), nesterov_(nesterov) {}

 protected:
  void apply(size_t i, NDArrayView& w, NDArrayView& g, size_t n, double gs) override {
    if (!nesterov_) report(momentum_, "Momentum");  // as in CNTK, only plain momentum SGD reports it
    CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
      const T lr = T(learning_rate_for(n));
      const T m = T(momentum_for(momentum_, n));
      const T ug = unit_gain_factor<T>(n);
      if (nesterov_)
        learn::nesterov<T>(w.data<T>(), gradient_of<T>(g), state<T>(i, 0), w.numel(), T(gs), lr, m, ug);
      else
        learn::momentum_sgd<T>(w.data<T>(), gradient_of<T>(g), state<T>(i, 0), w.numel(), T(gs), lr, m, ug);
    });
  }

  // 1 - momentum for unit-gain momentum (with the momentum scaled to the
  // minibatch size, as CNTK computes it), else 1.
  template <class T>
  T unit_gain_factor(size_t n) const {
    const T m = T(momentum_for(momentum_, n));
    return unit_gain_ ? T(1) - m : T(1);
  }

  MomentumSchedule momentum_;
  bool unit_gain_;
  bool nesterov_;
};

class AdaGradLearner final : public StandardLearner {
 public:
  AdaGradLearner(const std::vector<Variable>& p, const LearningRateSchedule& lr, bool need_ave_multiplier,
                 const AdditionalLearningOptions& o)
      : StandardLearner(p, lr, o, 1), need_ave_(need_ave_multiplier) {}

 protected:
  void apply(size_t i, NDArrayView& w, NDArrayView& g, size_t n, double gs) override {
    CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
      if (need_ave_)
        learn::adagrad_averaged<T>(w.data<T>(), g.data<T>(), state<T>(i, 0), w.numel(), T(gs), learning_rate_for(n));
      else
        learn::adagrad<T>(w.data<T>(), gradient_of<T>(g), state<T>(i, 0), w.numel(), T(gs), T(learning_rate_for(n)));
    });
  }

 private:
  bool reads_sparse_gradients() const override { return !need_ave_; }
  bool need_ave_;
};

class AdaDeltaLearner final : public StandardLearner {
 public:
  AdaDeltaLearner(const std::vector<Variable>& p, const LearningRateSchedule& lr, double rho, double epsilon,
                  const AdditionalLearningOptions& o)
      : StandardLearner(p, lr, o, 2), rho_(rho), epsilon_(epsilon) {}

 protected:
  void apply(size_t i, NDArrayView& w, NDArrayView& g, size_t n, double gs) override {
    CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
      learn::adadelta<T>(w.data<T>(), gradient_of<T>(g), state<T>(i, 0), state<T>(i, 1), w.numel(), T(gs),
                         T(learning_rate_for(n)), T(rho_), T(epsilon_));
    });
  }

 private:
  double rho_, epsilon_;
};

class FSAdaGradLearner final : public MomentumLearner {
 public:
  FSAdaGradLearner(const std::vector<Variable>& p, const LearningRateSchedule& lr, const MomentumSchedule& m,
                   bool unit_gain, const MomentumSchedule& variance_momentum, const AdditionalLearningOptions& o)
      : MomentumLearner(p, lr, m, unit_gain, o, 2, false), variance_momentum_(variance_momentum) {}

  void reset_smoothed_gradients() override {
    StandardLearner::reset_smoothed_gradients();
    smoothed_count_ = 0;
  }

 protected:
  void save_extra(Dictionary& d) const override { d["smoothed_count"] = DictValue(smoothed_count_); }
  void load_extra(const Dictionary& d) override {
    smoothed_count_ = get_double(d, "smoothed_count");
    ada_mul_ = kTargetAdagradAvDenom * std::sqrt(smoothed_count_);
  }

 protected:
  void on_minibatch(size_t n) override {
    // How many samples the g^2 average holds; its square root turns the sum into a mean.
    const double v = momentum_for(variance_momentum_, n);
    smoothed_count_ = v * smoothed_count_ + (1.0 - v) * double(n);
    ada_mul_ = kTargetAdagradAvDenom * std::sqrt(smoothed_count_);
  }

  void apply(size_t i, NDArrayView& w, NDArrayView& g, size_t n, double gs) override {
    CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
      const double lr = learning_rate_for(n);
      const double m = momentum_for(momentum_, n);
      const double v = momentum_for(variance_momentum_, n);
      const T ug = unit_gain_factor<T>(n);
      learn::fsadagrad<T>(w.data<T>(), gradient_of<T>(g), state<T>(i, 0), state<T>(i, 1), w.numel(), T(gs), T(lr), T(m),
                          T(v), T(ada_mul_), ug);
    });
  }

 private:
  static constexpr double kTargetAdagradAvDenom = 1.0;
  MomentumSchedule variance_momentum_;
  double smoothed_count_ = 0, ada_mul_ = 0;
};

class AdamLearner final : public MomentumLearner {
 public:
  AdamLearner(const std::vector<Variable>& p, const LearningRateSchedule& lr, const MomentumSchedule& m, bool unit_gain,
              const MomentumSchedule& variance_momentum, double epsilon, bool adamax,
              const AdditionalLearningOptions& o)
      : MomentumLearner(p, lr, m, unit_gain, o, 2, false),
        variance_momentum_(variance_momentum),
        epsilon_(epsilon),
        adamax_(adamax) {
    if (epsilon < 0) throw ValueError("adam: epsilon must not be negative; it is " + std::to_string(epsilon));
  }

  void reset_smoothed_gradients() override {
    StandardLearner::reset_smoothed_gradients();
    steps_ = 0;
  }

 protected:
  void save_extra(Dictionary& d) const override { d["smoothed_count"] = DictValue(steps_); }
  void load_extra(const Dictionary& d) override { steps_ = get_double(d, "smoothed_count"); }

 protected:
  void on_minibatch(size_t) override { steps_ += 1.0; }

  void apply(size_t i, NDArrayView& w, NDArrayView& g, size_t n, double gs) override {
    CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
      const double lr = learning_rate_for(n);
      const double m = momentum_for(momentum_, n);
      const double v = momentum_for(variance_momentum_, n);
      const T ug = unit_gain_factor<T>(n);
      // Bias correction of both moments (of the first only for Adamax).
      const double correction = adamax_ ? 1.0 / (1.0 - std::pow(m, steps_))
                                        : std::sqrt(1.0 - std::pow(v, steps_)) / (1.0 - std::pow(m, steps_));
      learn::adam<T>(w.data<T>(), gradient_of<T>(g), state<T>(i, 0), state<T>(i, 1), w.numel(), T(gs), T(lr), T(m),
                     T(v), T(correction), T(epsilon_), ug, adamax_);
    });
  }

 private:
  MomentumSchedule variance_momentum_;
  double epsilon_;
  bool adamax_;
  double steps_ = 0;
};

class RMSPropLearner final : public StandardLearner {
 public:
  RMSPropLearner(const std::vector<Variable>& p, const LearningRateSchedule& lr, double gamma, double inc, double dec,
                 double max, double min, bool need_ave_multiplier, const AdditionalLearningOptions& o)
      : StandardLearner(p, lr, o, 3),
        gamma_(gamma),
        inc_(inc),
        dec_(dec),
        max_(max),
        min_(min),
        need_ave_(need_ave_multiplier) {
    if (gamma <= 0 || gamma >= 1) throw ValueError("rmsprop: gamma must be in (0, 1); it is " + std::to_string(gamma));
    if (inc <= 1) throw ValueError("rmsprop: inc must be greater than 1; it is " + std::to_string(inc));
    if (dec <= 0 || dec >= 1) throw ValueError("rmsprop: dec must be in (0, 1); it is " + std::to_string(dec));
    if (max <= 0 || max <= min) throw ValueError("rmsprop: max must be greater than 0 and than min");
    if (min <= 0) throw ValueError("rmsprop: min must be greater than 0; it is " + std::to_string(min));
  }

  void reset_smoothed_gradients() override {
    StandardLearner::reset_smoothed_gradients();
    steps_ = 0;
  }

 protected:
  void save_extra(Dictionary& d) const override { d["smoothed_count"] = DictValue(steps_); }
  void load_extra(const Dictionary& d) override { steps_ = get_double(d, "smoothed_count"); }

 protected:
  void on_minibatch(size_t) override { steps_ += 1.0; }

  void apply(size_t i, NDArrayView& w, NDArrayView& g, size_t n, double gs) override {
    CNTK_DISPATCH_FLOAT(w.dtype(), T, [&] {
      T *avars = state<T>(i, 0), *signs = state<T>(i, 1), *steps = state<T>(i, 2);
      if (steps_ <= 1) learn::rmsprop_start<T>(gradient_of<T>(g), avars, signs, steps, w.numel(), T(gs));
      if (need_ave_)
        learn::rmsprop_averaged<T>(w.data<T>(), g.data<T>(), avars, signs, steps, w.numel(), T(gs),
                                   learning_rate_for(n), T(gamma_), T(inc_), T(max_), T(dec_), T(min_));
      else
        learn::rmsprop<T>(w.data<T>(), gradient_of<T>(g), avars, signs, steps, w.numel(), T(gs),
                          T(learning_rate_for(n)), T(gamma_), T(inc_), T(max_), T(dec_), T(min_));
    });
  }

 private:
  bool reads_sparse_gradients() const override { return !need_ave_; }
  double gamma_, inc_, dec_, max_, min_;
  bool need_ave_;
  double steps_ = 0;
};

}  // namespace

LearnerPtr sgd_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                       const AdditionalLearningOptions& options) {
  return std::make_shared<SGDLearner>(parameters, lr, options);
}

LearnerPtr momentum_sgd_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                                const MomentumSchedule& momentum, bool unit_gain,
                                const AdditionalLearningOptions& options) {
  return std::make_shared<MomentumLearner>(parameters, lr, momentum, unit_gain, options, 1, false);
}

LearnerPtr nesterov_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                            const MomentumSchedule& momentum, bool unit_gain,
                            const AdditionalLearningOptions& options) {
  return std::make_shared<MomentumLearner>(parameters, lr, momentum, unit_gain, options, 1, true);
}

LearnerPtr adagrad_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                           bool need_ave_multiplier, const AdditionalLearningOptions& options) {
  return std::make_shared<AdaGradLearner>(parameters, lr, need_ave_multiplier, options);
}

LearnerPtr adadelta_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr, double rho,
                            double epsilon, const AdditionalLearningOptions& options) {
  return std::make_shared<AdaDeltaLearner>(parameters, lr, rho, epsilon, options);
}

LearnerPtr fsadagrad_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                             const MomentumSchedule& momentum, bool unit_gain,
                             const MomentumSchedule& variance_momentum, const AdditionalLearningOptions& options) {
  return std::make_shared<FSAdaGradLearner>(parameters, lr, momentum, unit_gain, variance_momentum, options);
}

LearnerPtr adam_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr,
                        const MomentumSchedule& momentum, bool unit_gain, const MomentumSchedule& variance_momentum,
                        double epsilon, bool adamax, const AdditionalLearningOptions& options) {
  return std::make_shared<AdamLearner>(parameters, lr, momentum, unit_gain, variance_momentum, epsilon, adamax,
                                       options);
}

LearnerPtr rmsprop_learner(const std::vector<Variable>& parameters, const LearningRateSchedule& lr, double gamma,
                           double inc, double dec, double max, double min, bool need_ave_multiplier,
                           const AdditionalLearningOptions& options) {
  return std::make_shared<RMSPropLearner>(parameters, lr, gamma, inc, dec, max, min, need_ave_multiplier, options);
}

}  // namespace cntk
