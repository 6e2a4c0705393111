// CNTK v1 model files (.dnn, .cmf): the binary ComputationNetwork format that CNTK's
// BrainScript `cntk` command wrote, model versions 1 to 31 (all that CNTK 2.7 reads).
//
// Loading turns the network's nodes into the engine's Functions as CNTK 2.7's
// LoadLegacyModel did (learnable parameters with a learning-rate multiplier of 0 become
// Constants, the others Parameters; inputs get CNTK's dynamic axes); load_function and
// cntk.load_model recognise the format by its first bytes. Saving writes a v1 file from a
// graph as CNTK 2.7's SaveAsLegacyModel did (version 31, names that carry the uids back).
#pragma once
#include <functional>
#include <string>

#include "cntk/function.h"

namespace cntk {

// True when `bytes` start as a v1 model does (the section marker "BCN" in UTF-16).
bool is_legacy_model(const std::string& bytes);

// Malformed input raises IOError naming `source`, the byte offset and the node; a node type
// the loader does not map raises NotImplementedError naming the node and its type.
FunctionPtr load_legacy_model_from_bytes(const std::string& bytes, const std::string& source = "<bytes>");
FunctionPtr load_legacy_model(const std::string& path);

// Writes `f` (a composite) as a v1 model, atomically.
void save_as_legacy_model(const FunctionPtr& f, const std::string& path);
std::string save_as_legacy_model_to_bytes(const FunctionPtr& f);

// What a dump holds: the nodes `select` accepts (by their names in the file; all when empty),
// each with its metadata (the `name=Op(inputs)` line, a parameter's shape and learning rate
// multiplier, an input's dimensions) and/or its values (a parameter's matrix), as CNTK's
// DumpNodeInfo with printMetadata / printValues.
struct LegacyDumpOptions {
  std::function<bool(const std::string&)> select;
  bool values = true, metadata = true;
};

// The network's nodes as CNTK's ComputationNetwork::DumpAllNodesToFile writes them (by default
// with values and metadata: what `cntk command=dumpNode` and CNTK's network unit test print).
std::string dump_legacy_model(const std::string& bytes, const std::string& source = "<bytes>",
                              const LegacyDumpOptions& options = {});

}  // namespace cntk
