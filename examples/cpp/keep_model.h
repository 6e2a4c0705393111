// With the environment variable CNTK_EXAMPLE_MODEL_DIR set, an example also saves its trained
// model there as <name>.model in CNTK's format; tests/python/test_onnx_examples_native.py
// runs the examples so and checks that each model written as ONNX runs in ONNX Runtime as it
// does here.
#pragma once
#include <cstdlib>
#include <string>

#include "cntk/serialize.h"

inline void keep_model(const cntk::FunctionPtr& model, const char* name) {
  if (const char* dir = std::getenv("CNTK_EXAMPLE_MODEL_DIR"))
    cntk::save_function(model, std::string(dir) + "/" + name + ".model");
}
