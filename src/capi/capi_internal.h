// What the C API's translation units share: the handle types (each wraps one engine object
// by value or shared pointer), the exception-to-status guard and small conversion helpers.
#pragma once
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cntk/c_api.h"
#include "cntk/evaluation.h"
#include "cntk/learner.h"
#include "cntk/trainer.h"
#include "cntk/value.h"

namespace cntk::io {
class MinibatchSource;
struct Minibatch;
}  // namespace cntk::io

struct cntk_ndarray {
  cntk::NDArrayView view;
};
struct cntk_value {
  cntk::Value value;
};
struct cntk_axis {
  cntk::Axis axis;
};
struct cntk_variable {
  cntk::Variable var;
};
struct cntk_function {
  cntk::FunctionPtr fn;
};
struct cntk_dict {
  cntk::Dictionary dict;
};
struct cntk_backprop_state {
  cntk::BackPropStatePtr state;
};
struct cntk_schedule {
  cntk::TrainingParameterSchedule<double> schedule;
};
struct cntk_learner {
  cntk::LearnerPtr learner;
};
struct cntk_trainer {
  std::unique_ptr<cntk::Trainer> trainer;
};
struct cntk_minibatch_source;  // defined in capi_train.cpp
struct cntk_minibatch;

namespace cntk::capi {

// Failures that have their own status code beyond the engine's error types.
struct NullArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
struct OutOfRange : std::out_of_range {
  using std::out_of_range::out_of_range;
};

cntk_status record_failure(cntk_status status, const char* message) noexcept;
void clear_failure() noexcept;

// Runs `body`, turning every exception into a status and the thread's last error.
template <class Body>
cntk_status guard(Body&& body) noexcept {
  try {
    body();
    return CNTK_OK;
  } catch (const NullArgument& e) {
    return record_failure(CNTK_NULL_ARGUMENT, e.what());
  } catch (const OutOfRange& e) {
    return record_failure(CNTK_OUT_OF_RANGE, e.what());
  } catch (const NotImplementedError& e) {
    return record_failure(CNTK_NOT_IMPLEMENTED, e.what());
  } catch (const IOError& e) {
    return record_failure(CNTK_IO_ERROR, e.what());
  } catch (const TypeError& e) {
    return record_failure(CNTK_TYPE_ERROR, e.what());
  } catch (const ValueError& e) {
    return record_failure(CNTK_VALUE_ERROR, e.what());
  } catch (const std::bad_alloc&) {
    return record_failure(CNTK_ERROR, "out of memory");
  } catch (const std::exception& e) {
    return record_failure(CNTK_ERROR, e.what());
  } catch (...) {
    return record_failure(CNTK_ERROR, "unknown error");
  }
}

// Throws NullArgument naming `what` when `p` is null.
template <class T>
T* need(T* p, const char* what) {
  if (!p) throw NullArgument(std::string(what) + " is NULL");
  return p;
}

inline std::string str_arg(const char* s) { return s ? std::string(s) : std::string(); }
NDShape shape_arg(const int64_t* dims, size_t rank);
DataType dtype_arg(cntk_dtype t);
std::vector<Axis> axes_arg(const cntk_axis* const* axes, size_t count);
std::vector<Variable> variables_arg(const cntk_variable* const* vars, size_t count, const char* what);
VariableValues bindings_arg(const cntk_variable* const* vars, const cntk_value* const* values, size_t count);

// Two-call outputs: writes what fits and always the full size.
void write_dims(const NDShape& s, int64_t* dims, size_t capacity, size_t* rank);
void write_string(const std::string& s, char* buffer, size_t capacity, size_t* length);
void write_variables(const std::vector<Variable>& vars, cntk_variable** out, size_t capacity, size_t* count);

// The value as a variable takes it: a reader's [B, 1, ...] data loses its step axis for a
// variable without a sequence axis, and sparse data becomes dense for a dense variable.
Value adapt_to(const Value& v, const Variable& var);

}  // namespace cntk::capi
