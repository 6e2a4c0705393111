// The `cntk` command: CNTK 2.7's command line and its command loop.
//
//   cntk configFile=a.cntk[+b.cntk] [configFile=c.cntk] [key=value] [block=[key=value]] ...
//
// Config files and the other arguments are read in order into one root record (later
// assignments win, blocks merge); lines `include=x.cntk[+y.cntk]` read further files in their
// place; `currentDirectory=dir` changes directory at once. Top-level keys: command (A:B, the
// blocks to run, each naming its `action`), stderr (log file), deviceId, precision, traceLevel,
// timestamping, makeMode, modelPath, outputNodeNames, numCPUThreads.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "brainscript/config.h"

namespace cntk::brainscript {

struct CommandLine {
  std::shared_ptr<ConfigRecord> config;  // the root record ("global")
  std::vector<std::string> config_dirs;  // directories of the config files read (BrainScript include paths)
};

// Reads the arguments (argv without the program name) into the root record.
CommandLine parse_command_line(const std::vector<std::string>& args);

// CNTK's log lines: "MM/DD/YYYY HH:MM:SS: " before each line when `timestamping` is on.
class Log {
 public:
  static void set_timestamping(bool on);
  static bool timestamping();
  static void printf(const char* format, ...) __attribute__((format(printf, 1, 2)));  // with timestamp
  static void raw(const char* format, ...) __attribute__((format(printf, 1, 2)));     // without
};

// What an action gets: its command's block (whose parent is the root) and the command line.
struct ActionContext {
  std::string command;  // the command's name
  std::shared_ptr<const ConfigRecord> config;
  const CommandLine* command_line;
};
using Action = std::function<void(const ActionContext&)>;

// The actions by name (CNTK's names; "eval" is "test", "dumpnode" is "dumpNode"); starts as
// builtin_actions() (actions.cpp), and tests may add their own.
std::map<std::string, Action>& actions();
std::map<std::string, Action> builtin_actions();

// The whole program: returns the process exit code; errors are reported on stderr.
int run_cntk(const std::vector<std::string>& args);

}  // namespace cntk::brainscript
