// The actions a `cntk` command block names (`action = "train"`, ...).
#include <atomic>
#include <filesystem>
#include <unistd.h>

#include "brainscript/command_line.h"
#include "brainscript/model_actions.h"
#include "brainscript/ndl.h"
#include "brainscript/training.h"
#include "cntk/serialize.h"

namespace cntk::brainscript {

namespace {

namespace fs = std::filesystem;

// Actions CNTK 2.7 had that are not available yet: a clear error rather than a silent skip.
Action not_implemented(const std::string& name) {
  return [name](const ActionContext& ctx) {
    throw NotImplementedError("the '" + name + "' action (command '" + ctx.command + "') is not implemented yet");
  };
}

// CNTK's test, eval and write take their network from a network builder visible from the
// command, if there is one, rather than from modelPath (GetModelFromConfig): for an
// NDLNetworkBuilder, the network is built and handed to the action as a temporary model file
// (CNTK v2 format, which keeps every node). (Only NDL configs place a builder where these
// commands see it.)
Action with_ndl_network(Action action) {
  return [action](const ActionContext& ctx) {
    if (!ctx.config->exists("NDLNetworkBuilder")) return action(ctx);
    const Network net = build_ndl_network(*ctx.config);
    static std::atomic<int> counter = 0;
    const fs::path path = fs::temp_directory_path() /
                          ("cntk-ndl-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + ".model");
    struct Removed {
      fs::path p;
      ~Removed() {
        std::error_code ignored;
        fs::remove(p, ignored);
      }
    } removed{path};
    save_function(net.model, path.string());
    ActionContext with_model = ctx;
    with_model.config = ConfigRecord::parse("modelPath = \"" + path.string() + "\"", ctx.config->name(), ctx.config);
    action(with_model);
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
  register_model_actions(table);
  for (const char* name : {"test", "eval", "write"}) table[name] = with_ndl_network(table[name]);
  return table;
}

}  // namespace cntk::brainscript
