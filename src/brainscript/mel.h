// The statement syntax of MEL, CNTK's Model Editing Language (the `edit` action's editPath
// script): `[name =] Function(arg, ..., key=value)` per line or `;`, `#` comments to the end of
// the line outside quotes, `$var$` resolved by the caller beforehand. What the functions do is
// model_actions.cpp's; this part only reads text (and is what the fuzz target feeds).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace cntk::brainscript {

struct MelCall {
  std::string result, function;
  std::vector<std::string> args;               // unquoted
  std::map<std::string, std::string> options;  // key=value arguments, lower-case keys
  size_t line = 0;                             // 1-based line of the statement's start
};

std::string mel_trim(const std::string& s);

// The statements of a MEL script; a statement that is not Function(arguments) is a ValueError
// naming `path` and its line.
std::vector<MelCall> parse_mel(const std::string& text, const std::string& path);

}  // namespace cntk::brainscript
