// CNTK v1 networks (ComputationNetwork files) as data: the nodes as the file holds them,
// read and written byte for byte (v1_format.cpp), and converted to and from the engine's
// Functions (v1_convert.cpp). See README.md, "CNTK v1 model files".
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cntk/dictionary.h"
#include "cntk/function.h"
#include "cntk/legacy_model.h"

namespace cntk::v1 {

// The model version CNTK 2.7 writes (CNTK_MODEL_VERSION_31) and the oldest it reads.
constexpr uint64_t kCurrentVersion = 31;

// A shape in CNTK's order (fastest axis first).
using Dims = std::vector<int64_t>;

struct Node {
  std::string precision;  // "float", "double", or "" (files before version 7: float)
  std::string op;         // CNTK's OperationName: "LearnableParameter", "Times", ...
  std::string name;
  std::vector<std::string> inputs;  // node names, in the node's input order
  size_t offset = 0;                // where the node's entry starts in the file

  // LearnableParameter and InputValue / SparseInputValue.
  float lr_mult = 1;
  Dims layout;                 // sample layout (tensor shape)
  std::vector<double> values;  // LearnableParameter: the tensor, fastest axis first
  std::string dynamic_axis;    // InputValue: the dynamic axis' node name ("" = default)

  // Everything else a node type keeps, under the node's member names (see v1_format.cpp).
  Dictionary attrs;

  bool is_leaf() const { return op == "LearnableParameter" || op == "InputValue" || op == "SparseInputValue"; }
  bool is_double() const { return precision == "double"; }
};

// Node names compare as CNTK's network keeps them: case-insensitively.
struct NoCaseLess {
  bool operator()(const std::string& a, const std::string& b) const;
};

struct Network {
  uint64_t version = kCurrentVersion;
  std::map<std::string, Node, NoCaseLess> nodes;
  std::vector<std::string> features, labels, criteria, evaluations, outputs;
};

// The file's bytes <-> a Network. Errors: IOError "<source>: offset N: ..." naming the node.
Network read_network(const std::string& bytes, const std::string& source);
std::string write_network(const Network& net);

// The uid and the name a node name written by SaveAsLegacyModel carries
// (`__v2libuid__<uid>__v2libname__<name>`); {"", node_name} for any other name.
std::pair<std::string, std::string> uid_and_name(const std::string& node_name);

// CNTK's DumpNodeInfo text of the nodes `options` selects (legacy_model.h).
std::string dump_network(const Network& net, const LegacyDumpOptions& options = {});

// A Network <-> the engine's graph, as CNTK 2.7's LoadLegacyModel / SaveAsLegacyModel.
FunctionPtr network_to_function(const Network& net, const std::string& source);
Network network_from_function(const FunctionPtr& f);

}  // namespace cntk::v1
