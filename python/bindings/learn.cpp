// Bindings of the training API: schedules, learners, Trainer and Evaluator.
// Python's cntk.learners, cntk.train and cntk.eval build CNTK's API on these.
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "cntk/learner.h"
#include "cntk/trainer.h"
#include "convert.h"

namespace nb = nanobind;
using namespace cntk;

namespace {

using DoubleSchedule = TrainingParameterSchedule<double>;
using SizeSchedule = TrainingParameterSchedule<size_t>;

template <class T>
void bind_schedule(nb::module_& m, const char* name) {
  using S = TrainingParameterSchedule<T>;
  nb::class_<S>(m, name, nb::dynamic_attr())
      .def(nb::init<T, size_t>(), nb::arg("value"), nb::arg("minibatch_size") = S::kIgnoredMinibatchSize)
      .def(nb::init<const std::vector<std::pair<size_t, T>>&, size_t, size_t>(), nb::arg("schedule"),
           nb::arg("epoch_size") = S::kFullDataSweep, nb::arg("minibatch_size") = S::kIgnoredMinibatchSize)
      .def(nb::init<const std::vector<T>&, size_t, size_t>(), nb::arg("schedule"),
           nb::arg("epoch_size") = S::kFullDataSweep, nb::arg("minibatch_size") = S::kIgnoredMinibatchSize)
      .def("__getitem__", [](const S& s, size_t count) { return s[count]; })
      .def("is_sweep_based", &S::is_sweep_based)
      .def_prop_rw("minibatch_size", &S::minibatch_size, &S::set_minibatch_size)
      .def_prop_ro("epoch_size", &S::epoch_size)
      .def("entries",
           [](const S& s) {
             std::vector<std::pair<size_t, T>> out(s.entries().begin(), s.entries().end());
             return out;
           })
      .def("__eq__", [](const S& a, const nb::handle& b) { return nb::isinstance<S>(b) && a == nb::cast<const S&>(b); })
      .def("__copy__", [](const S& s) { return S(s); })
      .def_ro_static("ignored_minibatch_size", &S::kIgnoredMinibatchSize)
      .def_ro_static("full_data_sweep", &S::kFullDataSweep);
}

// A Python object released with the GIL held, whichever thread drops the last reference.
std::shared_ptr<nb::object> hold(nb::object o) {
  return std::shared_ptr<nb::object>(new nb::object(std::move(o)), [](nb::object* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

}  // namespace

void bind_learn(nb::module_& m) {
  bind_schedule<double>(m, "training_double_parameter_schedule");
  bind_schedule<size_t>(m, "minibatch_size_schedule");
  m.def("momentum_as_time_constant_schedule", nb::overload_cast<double>(&momentum_as_time_constant_schedule),
        nb::arg("time_constant"));
  m.def("momentum_as_time_constant_schedule", [](const DoubleSchedule& s) {
    DoubleSchedule r = s;
    r.transform(momentum_from_time_constant);
    r.set_minibatch_size(1);
    return r;
  });
  m.def("default_unit_gain_value", &default_unit_gain_value);
  m.def("set_default_unit_gain_value", &set_default_unit_gain_value);

  nb::class_<AdditionalLearningOptions>(m, "AdditionalLearningOptions")
      .def(nb::init<>())
      .def_rw("l1_regularization_weight", &AdditionalLearningOptions::l1_regularization_weight)
      .def_rw("l2_regularization_weight", &AdditionalLearningOptions::l2_regularization_weight)
      .def_rw("gaussian_noise_injection_std_dev", &AdditionalLearningOptions::gaussian_noise_injection_std_dev)
      .def_rw("gradient_clipping_threshold_per_sample",
              &AdditionalLearningOptions::gradient_clipping_threshold_per_sample)
      .def_rw("gradient_clipping_with_truncation", &AdditionalLearningOptions::gradient_clipping_with_truncation)
      .def_rw("minibatch_size", &AdditionalLearningOptions::minibatch_size);

  nb::class_<Learner>(m, "Learner", nb::dynamic_attr())
      .def(
          "_update",
          [](Learner& l, ParameterGradients gradients, size_t count, bool sweep_end) {
            nb::gil_scoped_release release;
            return l.update(gradients, count, sweep_end);
          },
          nb::arg("gradients"), nb::arg("training_sample_count"), nb::arg("is_sweep_end") = false)
      .def("_parameters", &Learner::parameters)
      .def("learning_rate", &Learner::learning_rate)
      .def("_reset_learning_rate", &Learner::reset_learning_rate)
      .def("reset_smoothed_gradients", &Learner::reset_smoothed_gradients)
      .def_prop_rw("_learning_rate_schedule", &Learner::learning_rate_schedule, &Learner::set_learning_rate_schedule)
      .def_prop_rw(
          "minibatch_size", [](const Learner& l) { return l.minibatch_size().value_or(0); },
          [](Learner& l, size_t n) { l.set_minibatch_size(n); })
      .def("is_compatible_mode", nb::overload_cast<>(&Learner::is_compatible_mode, nb::const_))
      .def("_learning_rate_for", &Learner::learning_rate_for)
      .def("create_checkpoint", [](const Learner& l) { return bindings::from_dictionary(l.create_checkpoint()); })
      .def("restore_from_checkpoint",
           [](Learner& l, const nb::dict& d) { l.restore_from_checkpoint(bindings::to_dictionary(d)); })
      // `write(name, value)` receives hyper-parameter changes (called with the GIL).
      .def("_add_progress_reporter",
           [](Learner& l, nb::object write) {
             auto fn = hold(std::move(write));
             l.add_progress_reporter([fn](const std::string& name, double value) {
               nb::gil_scoped_acquire gil;
               (*fn)(name, value);
             });
           })
      .def("total_number_of_samples_seen", &Learner::total_number_of_samples_seen)
      .def("total_number_of_minibatches_seen", &Learner::total_number_of_minibatches_seen)
      .def("total_number_of_sweeps_seen", &Learner::total_number_of_sweeps_seen)
      .def_ro_static("ignored_minibatch_size", &DoubleSchedule::kIgnoredMinibatchSize);

  m.def("sgd_learner", &sgd_learner);
  m.def("momentum_sgd_learner", &momentum_sgd_learner);
  m.def("nesterov_learner", &nesterov_learner);
  m.def("ada_grad_learner", &adagrad_learner);
  m.def("ada_delta_learner", &adadelta_learner);
  m.def("fsada_grad_learner", &fsadagrad_learner);
  m.def("adam_learner", &adam_learner);
  m.def("rmsprop_learner", &rmsprop_learner);
  m.def("universal_learner", &universal_learner);
  // `update(gradients, count, sweep_end)` is called (with the GIL) for each minibatch.
  m.def("callback_learner", [](const std::vector<Variable>& parameters, const DoubleSchedule& lr, nb::object update) {
    auto fn = hold(std::move(update));
    return callback_learner(parameters, lr, [fn](ParameterGradients& g, size_t n, bool sweep_end) {
      nb::gil_scoped_acquire gil;
      return nb::cast<bool>((*fn)(g, n, sweep_end));
    });
  });

  nb::class_<MinibatchAggregate>(m, "MinibatchAggregate")
      .def_ro("sum", &MinibatchAggregate::sum)
      .def_ro("samples", &MinibatchAggregate::samples);

  nb::class_<Trainer>(m, "Trainer", nb::dynamic_attr())
      .def(nb::init<FunctionPtr, FunctionPtr, FunctionPtr, std::vector<LearnerPtr>>(), nb::arg("model").none(),
           nb::arg("loss"), nb::arg("evaluation").none(), nb::arg("learners"))
      .def("_train_minibatch",
           [](Trainer& t, const VariableValues& args, bool sweep_end, const std::vector<Variable>& outputs) {
             std::vector<Value> values;
             bool updated;
             {
               nb::gil_scoped_release release;
               updated = t.train_minibatch(args, sweep_end, outputs, values);
             }
             return std::make_pair(updated, values);
           })
      .def(
          "_test_minibatch",
          [](Trainer& t, const VariableValues& args, const std::vector<Variable>& outputs, bool distributed) {
            std::vector<Value> values;
            double avg;
            {
              nb::gil_scoped_release release;
              avg = t.test_minibatch(args, outputs, &values, distributed);
            }
            return std::make_pair(avg, values);
          },
          nb::arg("arguments"), nb::arg("outputs"), nb::arg("distributed") = false)
      .def("_previous_minibatch_loss_average", &Trainer::previous_minibatch_loss_average)
      .def("_previous_minibatch_evaluation_average", &Trainer::previous_minibatch_evaluation_average)
      .def("_previous_minibatch_sample_count", &Trainer::previous_minibatch_sample_count)
      .def("_previous_minibatch_loss", &Trainer::previous_minibatch_loss)
      .def("_previous_minibatch_evaluation", &Trainer::previous_minibatch_evaluation)
      .def("_previous_test_minibatch", &Trainer::previous_test_minibatch)
      .def("_total_number_of_samples_seen", &Trainer::total_number_of_samples_seen)
      .def("_model", &Trainer::model)
      .def("_loss_function", &Trainer::loss_function)
      .def("_evaluation_function", &Trainer::evaluation_function)
      .def("_parameter_learners", &Trainer::parameter_learners)
      .def("_parameters_not_covered", &Trainer::parameters_not_covered);

  nb::class_<Evaluator>(m, "Evaluator", nb::dynamic_attr())
      .def(nb::init<FunctionPtr>(), nb::arg("evaluation"))
      .def(
          "_test_minibatch",
          [](Evaluator& e, const VariableValues& args, const std::vector<Variable>& outputs, bool distributed) {
            std::vector<Value> values;
            double avg;
            {
              nb::gil_scoped_release release;
              avg = e.test_minibatch(args, outputs, &values, distributed);
            }
            return std::make_pair(avg, values);
          },
          nb::arg("arguments"), nb::arg("outputs"), nb::arg("distributed") = false)
      .def("_previous_test_minibatch", &Evaluator::previous_test_minibatch)
      .def("_evaluation_function", &Evaluator::evaluation_function);
}
