// The `cntk` command line and command loop (see command_line.h).
#include "brainscript/command_line.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <strings.h>

#include "cntk/distributed.h"

namespace cntk::brainscript {

namespace fs = std::filesystem;

namespace {

bool timestamping_flag = false;

bool starts_with_ci(const std::string& s, const char* prefix) {
  return strncasecmp(s.c_str(), prefix, std::strlen(prefix)) == 0;
}

std::vector<std::string> split_plus(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find('+', start);
    out.push_back(s.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// Appends a config file to `text`, reading `include=` lines' files in their place (each file once).
void append_config_file(ConfigText& text, const std::string& path, std::vector<std::string>& seen,
                        std::vector<std::string>& dirs) {
  auto source = SourceFile::read(path);
  dirs.push_back(fs::path(path).parent_path().string());
  for (size_t i = 0; i < source->lines.size(); ++i) {
    const std::string line = strip_config_comment(source->lines[i]);
    if (line.rfind("include=", 0) == 0) {
      const std::string files = line.substr(8);
      if (files.find('$') != std::string::npos)
        throw ConfigError("configuration", "variables ($name$) are not allowed in include statements",
                          TextLocation{source, i, 0});
      for (const auto& f : split_plus(files)) {
        if (std::find(seen.begin(), seen.end(), f) != seen.end()) {
          std::fprintf(stderr, "Warning: config file included multiple times, not including it again: %s\n", f.c_str());
          continue;
        }
        seen.push_back(f);
        append_config_file(text, f, seen, dirs);
      }
      text.text += '\n';  // keep one line per source line
    } else {
      text.text += line + '\n';
    }
    text.lines.push_back({source, i});
  }
}

std::string timestamp(const char* format) {
  char buf[64];
  std::time_t t = std::time(nullptr);
  std::tm now{};
  localtime_r(&t, &now);
  std::strftime(buf, sizeof buf, format, &now);
  return buf;
}

void redirect_stderr(const std::string& path, bool append) {
  const fs::path p(path);
  if (p.has_parent_path()) fs::create_directories(p.parent_path());
  Log::printf("Redirecting stderr to file %s\n", path.c_str());
  if (!std::freopen(path.c_str(), append ? "a" : "w", stderr))
    throw IOError("cannot redirect stderr to '" + path + "'");
  std::setvbuf(stderr, nullptr, _IONBF, 0);
}

void print_banner(const std::vector<std::string>& args) {
  std::fprintf(stderr, "CNTK 2.7 (OpenCNTK) at %s\n\n", timestamp("%Y/%m/%d %H:%M:%S").c_str());
  std::fprintf(stderr, "cntk");
  for (const auto& a : args) std::fprintf(stderr, "  %s", a.c_str());
  std::fprintf(stderr, "\n");
}

void run_commands(const CommandLine& cl) {
  const auto& root = cl.config;
  const auto commands = root->get_array("command", {"train"});
  for (const auto& command : commands) {
    if (!root->exists(command))
      throw ValueError("command '" + command + "' is listed in 'command' but no block of that name is configured");
    auto block = root->block(command);
    const long long trace_level = block->get_int("traceLevel", 0);
    for (const auto& action : split_config_array(block->get("action", "train"))) {
      const char* delim = "##############################################################################";
      const std::string title = command + " command (" + action + " action)";
      const int width = static_cast<int>(std::strlen(delim));
      std::fprintf(stderr, "\n");
      Log::printf("%s\n", delim);
      Log::printf("#%*s#\n", width - 2, "");
      Log::printf("# %s%*s #\n", title.c_str(), std::max(0, width - static_cast<int>(title.size()) - 4), "");
      Log::printf("#%*s#\n", width - 2, "");
      Log::printf("%s\n\n", delim);
      auto it = actions().find(action);
      if (it == actions().end()) throw ValueError("unknown action '" + action + "' in command '" + command + "'");
      it->second(ActionContext{command, block, &cl});
      std::fprintf(stderr, "\n");
      if (trace_level > 0) Log::printf("Action \"%s\" complete.\n\n", action.c_str());
    }
  }
}

}  // namespace

void Log::set_timestamping(bool on) { timestamping_flag = on; }
bool Log::timestamping() { return timestamping_flag; }

void Log::printf(const char* format, ...) {
  if (timestamping_flag) std::fprintf(stderr, "%s: ", timestamp("%m/%d/%Y %H:%M:%S").c_str());
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

void Log::raw(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

CommandLine parse_command_line(const std::vector<std::string>& args) {
  CommandLine cl;
  auto text = std::make_shared<ConfigText>();
  std::vector<std::string> seen;
  for (const auto& arg : args) {
    if (starts_with_ci(arg, "currentDirectory=")) {
      const std::string dir = arg.substr(17);
      if (::chdir(dir.c_str()) != 0) throw IOError("failed to set the current directory to '" + dir + "'");
      std::fprintf(stderr, "Changed current directory to %s\n", dir.c_str());
    }
    if (starts_with_ci(arg, "configFile=")) {
      for (const auto& path : split_plus(arg.substr(11))) {
        if (std::find(seen.begin(), seen.end(), path) != seen.end())
          throw ValueError("config file '" + path + "' is given more than once on the command line");
        seen.push_back(path);
        append_config_file(*text, path, seen, cl.config_dirs);
      }
    } else {
      // Command-line assignments are read as lines of a source of their own, in order.
      auto source = std::make_shared<SourceFile>("(command line argument)", arg);
      for (size_t i = 0; i < source->lines.size(); ++i) {
        text->text += source->lines[i] + '\n';
        text->lines.push_back({source, i});
      }
    }
  }
  cl.config = ConfigRecord::parse(std::shared_ptr<const ConfigText>(text), "global");
  return cl;
}

std::map<std::string, Action>& actions() {
  static std::map<std::string, Action> table = builtin_actions();
  return table;
}

int run_cntk(const std::vector<std::string>& args) {
  print_banner(args);
  if (args.empty()) {
    std::fprintf(stderr, "Usage: cntk configFile=yourConfigFile [key=value ...]\n");
    return 1;
  }
  try {
    CommandLine cl = parse_command_line(args);
    const auto& config = *cl.config;
    Log::set_timestamping(config.get_bool("timestamping", false));
    const long long trace_level = config.get_int("traceLevel", 0);
    if (auto log = config.find("stderr")) {
      std::string path = *log;
      // Under parallel training (by default with several MPI workers) each worker writes its own
      // log: the workers but the first append ".rankN" (with timestamping, every worker "rankN").
      const bool parallel = config.get_bool("parallelTrain", number_of_workers() > 1);
      const std::string rank = parallel ? std::to_string(worker_global_rank()) : "";
      if (Log::timestamping()) {  // CNTK's cluster naming: <stderr>_<command>_..._<command>.log
        for (const auto& c : config.get_array("command", {"train"})) path += "_" + c;
        path += ".log";
        if (parallel) path += "rank" + rank;
      } else if (parallel && rank != "0") {
        path += ".rank" + rank;
      }
      redirect_stderr(path, config.get_bool("appendLogFile", false));
      if (trace_level == 0) print_banner(args);
    }
    const std::string device = config.get("deviceId", "auto");
    if (strcasecmp(device.c_str(), "auto") != 0 && strcasecmp(device.c_str(), "cpu") != 0 &&
        config_to_double(device, "deviceId") >= 0)
      throw ValueError("deviceId=" + device + ": no GPU device is available; use deviceId=-1 (CPU) or auto");
    const std::string precision = config.get("precision", "float");
    if (config.exists("type")) throw ValueError("the 'type' parameter is deprecated: it is called 'precision' now");
    if (precision != "float" && precision != "double" && precision != "float16")
      throw ValueError("invalid precision \"" + precision + "\": must be \"float16\", \"float\" or \"double\"");
    if (trace_level > 0) {
      std::fprintf(stderr, "\nConfiguration After Processing and Variable Resolution:\n\n");
      for (const auto& k : config.keys())
        std::fprintf(stderr, "configparameters: %s:%s=%s\n", config.name().c_str(), k.c_str(), config.get(k).c_str());
      Log::printf("Commands:");
      for (const auto& c : config.get_array("command", {"train"})) std::fprintf(stderr, " %s", c.c_str());
      std::fprintf(stderr, "\n");
      Log::printf("precision = \"%s\"\n", precision.c_str());
    }
    run_commands(cl);
    if (Log::timestamping())
      Log::printf("__COMPLETED__\n");
    else
      std::fprintf(stderr, "COMPLETED.\n");
    std::fflush(stderr);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nEXCEPTION occurred: %s\n", e.what());
    std::fflush(stderr);
    return 1;
  }
}

}  // namespace cntk::brainscript
