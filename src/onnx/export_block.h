// Blocks the ONNX writer does not inline: a rule may write a block, together with functions
// around it, as nodes of its own (a recurrence's step block and the delays feeding its
// state back become one LSTM/GRU/RNN node). The writer asks before it inlines a block.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "onnx/export.h"

namespace cntk::onnx_io {

// Sets a list-of-strings attribute (which Attr does not carry) on the node writing `output`.
using SetStrings = std::function<void(const std::string& output, const std::string& name, std::vector<std::string>)>;

struct BlockClaim {
  std::vector<Variable> inputs;           // what the rule reads, as ExportContext::input(i)
  std::vector<const Function*> absorbed;  // functions written with the block (skipped by the writer)
  std::function<void(ExportContext&, const SetStrings&)> write;  // writes at least the block's output 0
  // What the rule writes as ExportContext::output(k) when not the block's outputs (a pair of
  // blocks written as one node writes one output of each).
  std::vector<Variable> outputs;
};

// The attribute of a block read from an ONNX recurrent node (import_rnn.cpp) that holds
// the node (a serialized NodeProto): such a block is written back as that node.
inline constexpr const char* kOnnxNodeKey = "onnxNode";

// The claim of the rule that writes `block` (in the graph of `root`), if any.
std::optional<BlockClaim> claim_block_export(const FunctionPtr& block, const FunctionPtr& root);

// The claim of depth_to_space / space_to_depth blocks (export_image.cpp), if `block` is one.
std::optional<BlockClaim> claim_image_block(const FunctionPtr& block);

}  // namespace cntk::onnx_io
