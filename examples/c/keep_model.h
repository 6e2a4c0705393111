/* With the environment variable CNTK_EXAMPLE_MODEL_DIR set, an example also saves its trained
 * model there as <name>.model in CNTK's format; tests/python/test_onnx_examples_native.py
 * runs the examples so and checks that each model written as ONNX runs in ONNX Runtime as it
 * does here. Returns the status of the save (CNTK_OK when the variable is not set). */
#pragma once
#include <stdio.h>
#include <stdlib.h>

#include "cntk/c_api.h"

static cntk_status keep_model(const cntk_function* model, const char* name) {
  const char* dir = getenv("CNTK_EXAMPLE_MODEL_DIR");
  if (!dir) return CNTK_OK;
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.model", dir, name);
  return cntk_function_save(model, path);
}
