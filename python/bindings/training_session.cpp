// Binding of the training session (include/cntk/training_session.h). Python's
// cntk.train.training_session subclasses _cntk.TrainingSession: the loop runs in C++ with the
// GIL released, and each hook, source read and progress report re-acquires it to call Python
// (sources and progress writers are Python objects; a subclass may override the hooks).
#include <nanobind/nanobind.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/trampoline.h>

#include "cntk/training_session.h"
#include "convert.h"

namespace nb = nanobind;
using namespace cntk;

namespace {

// Python's DataUnit (sample 0, minibatch 1, sweep 2) as the engine's.
DataUnit data_unit(int python_unit) {
  switch (python_unit) {
    case 0: return DataUnit::Sample;
    case 1: return DataUnit::Minibatch;
    case 2: return DataUnit::Sweep;
  }
  throw ValueError("unknown DataUnit " + std::to_string(python_unit));
}

// A Python source: an object with `next(size, workers, rank)` returning None at the end or
// ([(variable, Value), ...], sweep_end); `state()` and `restore(dict)` when `has_state`;
// `infinite`.
class PythonSource : public TrainingSource {
 public:
  explicit PythonSource(nb::object impl) : impl_(std::move(impl)) {
    has_state_ = nb::cast<bool>(impl_.attr("has_state"));
    infinite_ = nb::cast<bool>(impl_.attr("infinite"));
  }
  ~PythonSource() override {
    nb::gil_scoped_acquire gil;
    impl_.reset();
  }
  SourceMinibatch next_minibatch(size_t size, size_t workers, size_t rank) override {
    nb::gil_scoped_acquire gil;
    nb::object r = impl_.attr("next")(size, workers, rank);
    SourceMinibatch mb;
    if (!r.is_none()) std::tie(mb.arguments, mb.sweep_end) = nb::cast<std::pair<VariableValues, bool>>(r);
    return mb;
  }
  bool has_state() const override { return has_state_; }
  Dictionary checkpoint_state() const override {
    nb::gil_scoped_acquire gil;
    return bindings::to_dictionary(impl_.attr("state")());
  }
  void restore_from_checkpoint(const Dictionary& state) override {
    nb::gil_scoped_acquire gil;
    impl_.attr("restore")(bindings::from_dictionary(state));
  }
  bool is_infinite() const override { return infinite_; }

 private:
  nb::object impl_;
  bool has_state_, infinite_;
};

// Progress reports as calls of `impl`'s methods of the same names (no arguments).
class PythonProgress : public TrainingProgress {
 public:
  explicit PythonProgress(nb::object impl) : impl_(std::move(impl)) {}
  ~PythonProgress() override {
    nb::gil_scoped_acquire gil;
    impl_.reset();
  }
  void training_minibatch(const Trainer&) override { call("training_minibatch"); }
  void test_minibatch(const Trainer&) override { call("test_minibatch"); }
  void training_summary(const Trainer&) override { call("training_summary"); }
  void test_summary(const Trainer&) override { call("test_summary"); }

 private:
  void call(const char* name) {
    nb::gil_scoped_acquire gil;
    impl_.attr(name)();
  }
  nb::object impl_;
};

// The hooks a Python subclass may override.
struct PyTrainingSession : TrainingSession {
  NB_TRAMPOLINE(TrainingSession);
  size_t minibatch_size() override {
    nb::gil_scoped_acquire gil;
    NB_OVERRIDE(minibatch_size);
  }
  void on_minibatch_start() override {
    nb::gil_scoped_acquire gil;
    NB_OVERRIDE(on_minibatch_start);
  }
  bool on_minibatch_end() override {
    nb::gil_scoped_acquire gil;
    NB_OVERRIDE(on_minibatch_end);
  }
  void on_checkpoint_start(size_t index) override {
    nb::gil_scoped_acquire gil;
    NB_OVERRIDE(on_checkpoint_start, index);
  }
  void on_checkpoint_end(size_t index) override {
    nb::gil_scoped_acquire gil;
    NB_OVERRIDE(on_checkpoint_end, index);
  }
  void on_cross_validation_start(size_t index) override {
    nb::gil_scoped_acquire gil;
    NB_OVERRIDE(on_cross_validation_start, index);
  }
  bool on_cross_validation_end(size_t index, double average_error, size_t samples, size_t minibatches) override {
    nb::gil_scoped_acquire gil;
    NB_OVERRIDE(on_cross_validation_end, index, average_error, samples, minibatches);
  }
};

}  // namespace

void bind_training_session(nb::module_& m) {
  nb::class_<TrainingSource>(m, "_TrainingSource");
  m.def("_python_training_source",
        [](nb::object impl) -> TrainingSourcePtr { return std::make_shared<PythonSource>(std::move(impl)); });
  nb::class_<TrainingProgress>(m, "_TrainingProgress");
  m.def("_python_training_progress",
        [](nb::object impl) -> TrainingProgressPtr { return std::make_shared<PythonProgress>(std::move(impl)); });

  nb::class_<Frequency>(m, "_Frequency").def("__init__", [](Frequency* f, size_t value, int unit) {
    new (f) Frequency{value, data_unit(unit)};
  });
  nb::class_<CheckpointConfig>(m, "_CheckpointConfig")
      .def("__init__", [](CheckpointConfig* c, const std::string& filename, const Frequency& frequency, bool restore,
                          bool preserve_all) {
        new (c) CheckpointConfig{filename, frequency, restore, preserve_all};
      });
  nb::class_<CrossValidationConfig>(m, "_CrossValidationConfig")
      .def(
          "__init__",
          [](CrossValidationConfig* c, TrainingSourcePtr source, const Frequency& frequency,
             const MinibatchSizeSchedule& minibatch_size, size_t max_samples,
             std::function<bool(size_t, double, size_t, size_t)> callback) {
            new (c)
                CrossValidationConfig{std::move(source), frequency, minibatch_size, max_samples, std::move(callback)};
          },
          nb::arg("source").none(), nb::arg("frequency"), nb::arg("minibatch_size"), nb::arg("max_samples"),
          nb::arg("callback").none());
  nb::class_<TestConfig>(m, "_TestConfig")
      .def(
          "__init__",
          [](TestConfig* c, TrainingSourcePtr source, const MinibatchSizeSchedule& minibatch_size) {
            new (c) TestConfig{std::move(source), minibatch_size};
          },
          nb::arg("source").none(), nb::arg("minibatch_size"));

  nb::class_<TrainingSession, PyTrainingSession>(m, "TrainingSession")
      .def(nb::init<Trainer&, TrainingSourcePtr, MinibatchSizeSchedule, size_t, Frequency, CheckpointConfig,
                    CrossValidationConfig, TestConfig, std::vector<TrainingProgressPtr>>(),
           nb::arg("trainer"), nb::arg("source"), nb::arg("minibatch_size"), nb::arg("max_samples"),
           nb::arg("progress_frequency"), nb::arg("checkpoint"), nb::arg("cross_validation"), nb::arg("test"),
           nb::arg("progress"), nb::keep_alive<1, 2>())
      .def("_train",
           [](TrainingSession& s) {
             nb::gil_scoped_release release;
             s.train();
           })
      .def("_restore_from_checkpoint",
           [](TrainingSession& s, const std::string& path) {
             nb::gil_scoped_release release;
             s.restore_from_checkpoint(path);
           })
      .def("minibatch_size", [](TrainingSession& s) { return s.TrainingSession::minibatch_size(); })
      .def("on_minibatch_start", [](TrainingSession&) {})
      .def("on_minibatch_end", [](TrainingSession&) { return true; })
      .def("on_checkpoint_start", [](TrainingSession&, size_t) {})
      .def("on_checkpoint_end", [](TrainingSession&, size_t) {})
      .def("on_cross_validation_start", [](TrainingSession&, size_t) {})
      .def("on_cross_validation_end",
           [](TrainingSession& s, size_t index, double average_error, size_t samples, size_t minibatches) {
             return s.TrainingSession::on_cross_validation_end(index, average_error, samples, minibatches);
           });
}
