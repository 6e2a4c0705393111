// ONNX model files (https://onnx.ai): OpenCNTK functions written as ONNX models and ONNX
// models read as OpenCNTK functions (CNTK 2.7's `ModelFormat.ONNX`).
//
// Layout: an ONNX tensor holds a variable's dynamic axes first (sequence, then batch) and
// its static shape after, in NumPy order, which is the engine's runtime layout; the batch
// axis is written as the symbolic dimension "batch" and a sequence axis as "Sequence"
// (CNTK 2.7's name), so the model runs in other runtimes at any batch size and length.
// What each op becomes is part of its schema entry (OpDef::onnx_export, src/ops); the
// reader maps ONNX's op types to the catalogue (src/onnx/README.md).
#pragma once
#include <string>
#include <vector>

#include "cntk/function.h"

namespace cntk {

// The opsets the writer offers: 9 to kOnnxMaxOpset (the newest ONNX Runtime runs).
constexpr int kOnnxMinExportOpset = 9;
constexpr int kOnnxMaxOpset = 21;
constexpr int kOnnxDefaultOpset = 17;
// The oldest default-domain opset the reader accepts: every opset (the rules keep the forms
// ops had before opset 7).
constexpr int kOnnxMinImportOpset = 1;
// A model's metadata_props key (followed by a graph input's name) under which OpenCNTK's writer
// records the size its reader gives that input's symbolic batch dimension ("1", as CNTK 2.7
// wrote the batch axis); docs/onnx.md, "Layout and the batch axis".
inline constexpr const char* kOnnxStaticBatchKey = "cntk.static_batch:";

struct OnnxExportOptions {
  int opset = kOnnxDefaultOpset;
  // Parameters and constants in files of their own beside the model (ONNX external data),
  // as models over 2 GB must be; set by the writer itself where the model would be larger.
  bool external_data = false;
};

// Writes f as an ONNX model. ValueError for an op without an ONNX form at this opset (naming
// the op and the function), for an opset outside the range above, or for inferred
// dimensions left in the graph. Written to a temporary name and renamed.
void save_onnx(const FunctionPtr& f, const std::string& path, const OnnxExportOptions& options = {});
// The model as bytes (no external data).
std::string save_onnx_to_bytes(const FunctionPtr& f, const OnnxExportOptions& options = {});

// Reads an ONNX model. IOError for a file that is not one (truncated, corrupt); ValueError
// naming the node for an op type or attribute the reader does not know, wrong types or
// inconsistent shapes. External data is read from `base_dir` (the model's folder).
FunctionPtr load_onnx(const std::string& path);
FunctionPtr load_onnx_from_bytes(const std::string& bytes, const std::string& source = "<bytes>",
                                 const std::string& base_dir = ".");

// The ONNX op types the reader knows (default domain unqualified, others as "domain::Op").
std::vector<std::string> onnx_import_op_types();

}  // namespace cntk
