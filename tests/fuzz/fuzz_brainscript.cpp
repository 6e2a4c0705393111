// libFuzzer target for the BrainScript parser, the config language, NDL and MEL
// (make fuzz-brainscript).
//
// The first input byte picks what reads the rest: the BrainScript record parser, the one-expression
// parser, the config language (every member read, every block opened, every value split as an
// array), the NDL reader (a config whose NDLNetworkBuilder, at the top or in a command block, is
// written out as BrainScript, which is then parsed) or the MEL statement parser. Malformed input
// must end in cntk::Error, never in a crash, a hang or a sanitizer report; a tree that parses must
// dump without failing.
//
// Config, NDL and BrainScript text may name files (include, networkDescription, ndlMacros): input
// naming a device or kernel file system is skipped, as reading one need not end.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "brainscript/config.h"
#include "brainscript/mel.h"
#include "brainscript/ndl.h"
#include "brainscript/parser.h"

using namespace cntk::brainscript;

namespace {

void walk(const ConfigRecord& r, int depth) {
  if (depth > 20) return;
  for (const auto& key : r.keys()) {
    std::string value = r.get(key, "");
    split_config_array(value);
    if (!value.empty() && value[0] == '[') walk(*r.block(key), depth + 1);
  }
}

bool names_special_files(const std::string& text) {
  for (const char* p : {"dev/", "proc/", "sys/", "dev\\", "proc\\", "sys\\"})
    if (text.find(p) != std::string::npos) return true;
  return false;
}

// NDL: the NDLNetworkBuilder of the config, or of each of its blocks that holds one.
void ndl(const std::string& text) {
  auto config = ConfigRecord::parse(text, "fuzz");
  auto translate = [](const ConfigRecord& command) {
    try {
      parse_record(ndl_network_source(command), "ndl")->dump();
    } catch (const cntk::Error&) {
    }
  };
  if (config->exists_here("NDLNetworkBuilder")) translate(*config);
  for (const auto& key : config->keys()) {
    const std::string value = config->get(key, "");
    if (value.empty() || value[0] != '[') continue;
    auto block = config->block(key);
    if (block->exists_here("NDLNetworkBuilder")) translate(*block);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (names_special_files(text)) return 0;
  try {
    switch (data[0] % 5) {
      case 0: parse_record(text, "fuzz")->dump(); break;
      case 1: parse_expression(text)->dump(); break;
      case 2: walk(*ConfigRecord::parse(text), 0); break;
      case 3: ndl(text); break;
      default: {
        // Every statement names its function (or, in-line NDL, its result) and a line of the
        // text; in-line NDL statements are written out as BrainScript, with two model nodes
        // in scope, and parsed.
        const size_t lines = size_t(std::count(text.begin(), text.end(), '\n')) + 1;
        const auto script = std::make_shared<SourceFile>("fuzz.mel", text);
        const auto config = ConfigRecord::parse("", "fuzz");
        for (const auto& call : parse_mel(text, "fuzz.mel")) {
          if ((call.function.empty() && call.result.empty()) || call.line == 0 || call.line > lines) __builtin_trap();
          if (call.result.empty()) continue;
          const std::string value = mel_trim(call.text.substr(call.text.find('=') + 1));
          if (value.empty() || value[0] == '[') continue;  // a model of its own: the NDL case above
          try {
            parse_expression(translate_inline_ndl(config, script, {{call.text, call.line - 1}}, {"x", "L1.RL"}).source)
                ->dump();
          } catch (const cntk::Error&) {
          }
        }
      }
    }
  } catch (const cntk::Error&) {
  }
  return 0;
}
