// User-defined functions: ops whose shape rule, forward and backward are supplied
// at run time by an implementation of UserFunctionBackend (the Python binding
// implements it for cntk.ops.functions.UserFunction). The engine sees only this
// interface. Data crosses it as Values in the user layout (batch axis first,
// sequences padded and masked), as Function::forward returns them.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cntk/function.h"
#include "cntk/value.h"

namespace cntk {

class UserFunctionBackend {
 public:
  virtual ~UserFunctionBackend() = default;
  // The op name the function reports (CNTK's UserFunction.op_name).
  virtual std::string op_name() const = 0;
  // The outputs' types, as output variables (shape, dtype, dynamic axes,
  // needs_gradient, name) for the given inputs.
  virtual std::vector<Variable> infer_outputs(Function& self, const std::vector<Variable>& inputs) = 0;
  // Computes the outputs from the inputs' values. Returns the state handed back to
  // backward (may be null).
  virtual std::shared_ptr<void> forward(Function& self, const std::vector<Value>& inputs, bool training,
                                        std::vector<Value>& outputs) = 0;
  // Gradients with respect to the inputs marked in `wanted` (an undefined Value: no
  // gradient), given the gradients of the outputs (undefined where none flows).
  virtual std::vector<Value> backward(Function& self, const std::shared_ptr<void>& state,
                                      const std::vector<Value>& root_gradients, const std::vector<bool>& wanted) = 0;
  // A new user function like this one over `inputs` (a primitive function).
  virtual FunctionPtr clone(Function& self, const std::vector<Variable>& inputs) = 0;
  // What a model file keeps of the function (CNTK's "user_defined_state" entry), from
  // which the deserializer below rebuilds it.
  virtual Dictionary serialize(Function& self) = 0;
};

// Rebuilds a user function found in a model file from its inputs, its name and the
// state its backend's serialize wrote. The binding of the language the user functions
// are written in registers one; without it, loading such a model raises IOError.
using UserFunctionDeserializer =
    std::function<FunctionPtr(const std::vector<Variable>& inputs, const std::string& name, const Dictionary& state)>;
void set_user_function_deserializer(UserFunctionDeserializer deserializer);

}  // namespace cntk
