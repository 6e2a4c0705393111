// libFuzzer target for the BrainScript parser and the config language (make fuzz-brainscript).
//
// The first input byte picks what reads the rest: the BrainScript record parser, the one-expression
// parser, or the config language (every member read, every block opened, every value split as an
// array). Malformed input must end in cntk::Error, never in a crash, a hang or a sanitizer report;
// a tree that parses must dump without failing.
#include <cstdint>
#include <string>

#include "brainscript/config.h"
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0: parse_record(text, "fuzz")->dump(); break;
      case 1: parse_expression(text)->dump(); break;
      default: walk(*ConfigRecord::parse(text), 0);
    }
  } catch (const cntk::Error&) {
  }
  return 0;
}
