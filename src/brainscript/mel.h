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
  std::string result, function;                // function "" for `name = value` and `name = [ NDL ]` (in-line NDL)
  std::string text;                            // the statement as written (comments removed)
  std::vector<std::string> args;               // unquoted
  std::map<std::string, std::string> options;  // key=value arguments, lower-case keys
  size_t line = 0;                             // 1-based line of the statement's start
};

std::string mel_trim(const std::string& s);

// CNTK's rule for MEL's names (functions, properties, option values): equal ignoring case, where
// a prefix of at least half of `name` also counts ("Dump" for DumpModel); `alternate` is a second
// spelling under the same rule.
bool mel_name_is(const std::string& given, const std::string& name, const std::string& alternate = "");

// The MEL function `given` names (its full spelling), tried in CNTK's order so that a prefix
// names the first function it fits ("Load" is LoadModel); "" when none.
std::string mel_function_name(const std::string& given);

// The statements of a MEL script: `[name =] Function(arguments)`, `name = value` and
// `name = [ NDL ]`; any other statement is a ValueError naming `path` and its line.
std::vector<MelCall> parse_mel(const std::string& text, const std::string& path);

}  // namespace cntk::brainscript
