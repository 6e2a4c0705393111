// The actions a `cntk` command block names (`action = "train"`, ...).
#include "brainscript/command_line.h"
#include "brainscript/training.h"

namespace cntk::brainscript {

namespace {

// Actions CNTK 2.7 had that are not available yet: a clear error rather than a silent skip.
Action not_implemented(const std::string& name) {
  return [name](const ActionContext& ctx) {
    throw NotImplementedError("the '" + name + "' action (command '" + ctx.command + "') is not implemented yet");
  };
}

}  // namespace

std::map<std::string, Action> builtin_actions() {
  std::map<std::string, Action> table;
  for (const char* name :
       {"train", "trainRNN", "test", "eval", "write", "edit", "cv", "dumpNode", "dumpNodes", "dumpnode", "bnstat",
        "adapt", "convertdbn", "exportdbn", "createLabelMap", "writeWordAndClass", "plot", "SVD"})
    table[name] = not_implemented(name);
  register_training_actions(table);
  return table;
}

}  // namespace cntk::brainscript
