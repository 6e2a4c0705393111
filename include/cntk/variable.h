// Variable: a node of the graph that carries data: an input (argument), an output
// of a function, a parameter, a constant, or a placeholder to be bound later.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cntk/axis.h"
#include "cntk/dictionary.h"
#include "cntk/tensor.h"

namespace cntk {

class Function;
using FunctionPtr = std::shared_ptr<Function>;

enum class VariableKind : int { Input = 0, Output = 1, Parameter = 2, Constant = 3, Placeholder = 4 };

// The shared state of a variable. Output variables are owned by their function;
// `owner` is a plain back pointer, kept valid by the handles that reach it.
struct VariableImpl {
  VariableKind kind = VariableKind::Input;
  NDShape shape;
  DataType dtype = DataType::Float;
  std::vector<Axis> dynamic_axes;  // CNTK order: batch axis first, then the sequence axis
  bool is_sparse = false;
  bool needs_gradient = false;
  std::string name;
  std::string uid;
  Function* owner = nullptr;
  size_t output_index = 0;
  NDArrayView value;                 // parameters and constants
  std::shared_ptr<Dictionary> init;  // deferred initializer while the shape has inferred dims
  uint64_t value_version = 0;        // bumped whenever a parameter value is written
};

class Variable {
 public:
  Variable() = default;
  explicit Variable(std::shared_ptr<VariableImpl> impl, FunctionPtr owner = nullptr)
      : impl_(std::move(impl)), owner_ref_(std::move(owner)) {}

  static Variable input(const NDShape& shape, DataType dtype, bool is_sparse, bool needs_gradient,
                        std::vector<Axis> dynamic_axes, const std::string& name);
  static Variable parameter(const NDShape& shape, DataType dtype, const NDArrayView& value,
                            std::shared_ptr<Dictionary> init, const std::string& name);
  static Variable constant(const NDArrayView& value, const std::string& name);
  // A constant filled with `fill`; when the shape has inferred dimensions, the value
  // is created once shape inference has filled them in.
  static Variable constant(const NDShape& shape, DataType dtype, double fill, const std::string& name);
  static Variable placeholder(const NDShape& shape, std::vector<Axis> dynamic_axes, const std::string& name);

  bool defined() const { return impl_ != nullptr; }
  VariableKind kind() const { return impl_->kind; }
  const NDShape& shape() const { return impl_->shape; }
  DataType dtype() const { return impl_->dtype; }
  const std::vector<Axis>& dynamic_axes() const { return impl_->dynamic_axes; }
  bool is_sparse() const { return impl_->is_sparse; }
  bool needs_gradient() const { return impl_->needs_gradient; }
  const std::string& name() const { return impl_->name; }
  const std::string& uid() const { return impl_->uid; }
  bool is_input() const { return kind() == VariableKind::Input; }
  bool is_output() const { return kind() == VariableKind::Output; }
  bool is_parameter() const { return kind() == VariableKind::Parameter; }
  bool is_constant() const { return kind() == VariableKind::Constant; }
  bool is_placeholder() const { return kind() == VariableKind::Placeholder; }
  FunctionPtr owner() const;

  // Parameter/constant value; initializes a deferred parameter on first use.
  const NDArrayView& value() const;
  void set_value(const NDArrayView& v);

  VariableImpl* get() const { return impl_.get(); }
  const std::shared_ptr<VariableImpl>& impl() const { return impl_; }
  bool operator==(const Variable& o) const { return impl_ == o.impl_; }
  bool operator!=(const Variable& o) const { return impl_ != o.impl_; }
  std::string str() const;  // for error messages: "Input('x', (3,))"

 private:
  std::shared_ptr<VariableImpl> impl_;
  FunctionPtr owner_ref_;  // keeps the producing function alive for output variables
  friend class Function;   // makes loop-closing edges non-owning
};

std::string new_uid(const char* prefix);

// Creates the value of a parameter from an initializer Dictionary (type, scale,
// outputRank, filterRank, randomSeed, ...) once the shape is known.
NDArrayView initialize_parameter(const Dictionary& init, const NDShape& shape, DataType dtype);

}  // namespace cntk
