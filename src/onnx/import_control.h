// Between the Scan rules: a Scan written by OpenCNTK is read as a recurrent loop over a
// sequence axis (import_rnn.cpp), any other is unrolled (import_control.cpp).
#pragma once
#include <optional>
#include <vector>

#include "onnx/import.h"

namespace cntk::onnx_io {

// The Scan node read as a recurrence where OpenCNTK wrote it (its body's inputs are steps in
// the engine's layout, denoted DATA_BATCH/DATA_TIME); nothing for any other Scan.
std::optional<std::vector<Variable>> read_engine_scan(ImportContext& c);

}  // namespace cntk::onnx_io
