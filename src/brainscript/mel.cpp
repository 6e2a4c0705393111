// MEL statements (mel.h).
#include "brainscript/mel.h"

#include <algorithm>
#include <cctype>

#include "cntk/common.h"

namespace cntk::brainscript {

std::string mel_trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

namespace {

std::string unquoted(std::string s) {
  s = mel_trim(s);
  if (s.size() >= 2 && (s[0] == '"' || s[0] == '\'') && s.back() == s[0]) s = s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

bool mel_name_is(const std::string& given, const std::string& name, const std::string& alternate) {
  auto fits = [&](const std::string& full) {
    if (full.empty() || given.size() > full.size() || given.size() < full.size() / 2) return false;
    return std::equal(given.begin(), given.end(), full.begin(),
                      [](unsigned char a, unsigned char b) { return std::tolower(a) == std::tolower(b); });
  };
  return fits(name) || fits(alternate);
}

std::string mel_function_name(const std::string& given) {
  // CNTK's order of trying, each with its second spelling.
  static const std::pair<const char*, const char*> functions[] = {{"CreateModel", ""},
                                                                  {"CreateModelWithName", ""},
                                                                  {"LoadModel", ""},
                                                                  {"LoadModelWithName", ""},
                                                                  {"LoadNDLSnippet", ""},
                                                                  {"SaveDefaultModel", ""},
                                                                  {"SaveModel", ""},
                                                                  {"SetDefaultModel", ""},
                                                                  {"UnloadModel", ""},
                                                                  {"DumpModel", "Dump"},
                                                                  {"DumpNode", ""},
                                                                  {"CopyNode", "Copy"},
                                                                  {"CopySubTree", ""},
                                                                  {"CopyNodeInputs", "CopyInputs"},
                                                                  {"SetNodeInput", "SetInput"},
                                                                  {"SetNodeInputs", "SetInputs"},
                                                                  {"SetProperty", ""},
                                                                  {"SetPropertyForSubTree", ""},
                                                                  {"RemoveNode", "Remove"},
                                                                  {"DeleteNode", "Delete"},
                                                                  {"Rename", ""},
                                                                  {"ReviseParameter", ""}};
  for (const auto& [name, alternate] : functions)
    if (mel_name_is(given, name, alternate)) return name;
  return "";
}

std::vector<MelCall> parse_mel(const std::string& text, const std::string& path) {
  std::vector<MelCall> out;
  std::string current;
  size_t line = 1, start_line = 1;
  int depth = 0;
  char quote = 0;
  auto finish = [&] {
    const std::string st = mel_trim(current);
    current.clear();
    if (st.empty()) return;
    MelCall c;
    c.line = start_line;
    c.text = st;
    const size_t paren = st.find_first_of("([");
    const size_t eq = st.find('=');
    std::string call = st;
    if (eq != std::string::npos && (paren == std::string::npos || eq < paren)) {
      c.result = mel_trim(st.substr(0, eq));
      call = mel_trim(st.substr(eq + 1));
      if (c.result.empty() || call.empty())
        throw ValueError(path + "(" + std::to_string(c.line) + "): MEL statement '" + st + "' lacks a name or a value");
      // `name = value` or `name = [ NDL ]`: in-line NDL, read by the NDL reader.
      if (call[0] == '[' || call.find('(') == std::string::npos) {
        out.push_back(std::move(c));
        return;
      }
    }
    const size_t open = call.find('(');
    if (open == std::string::npos || call.back() != ')')
      throw ValueError(path + "(" + std::to_string(c.line) + "): MEL statement '" + st +
                       "' is not Function(arguments)");
    c.function = mel_trim(call.substr(0, open));
    if (c.function.empty())
      throw ValueError(path + "(" + std::to_string(c.line) + "): MEL statement '" + st + "' names no function");
    std::string arg;
    int d = 0;
    char q = 0;
    auto push = [&] {
      const std::string a = mel_trim(arg);
      arg.clear();
      if (a.empty()) return;
      const size_t e = a.find('=');
      if (e != std::string::npos && a[0] != '"' && a[0] != '\'') {
        std::string key = mel_trim(a.substr(0, e));
        std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return std::tolower(ch); });
        c.options[key] = unquoted(a.substr(e + 1));
      } else {
        c.args.push_back(unquoted(a));
      }
    };
    for (size_t i = open + 1; i + 1 < call.size(); ++i) {
      const char ch = call[i];
      if (q) {
        if (ch == q) q = 0;
      } else if (ch == '"' || ch == '\'') {
        q = ch;
      } else if (ch == '(') {
        ++d;
      } else if (ch == ')') {
        --d;
      } else if (ch == ',' && d == 0) {
        push();
        continue;
      }
      arg += ch;
    }
    push();
    out.push_back(std::move(c));
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quote) {
      if (ch == quote) quote = 0;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
    } else if (ch == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    } else if (ch == '(' || ch == '[') {
      ++depth;
    } else if (ch == ')' || ch == ']') {
      --depth;
    } else if ((ch == '\n' || ch == ';') && depth == 0) {
      finish();
      if (ch == '\n') ++line;
      start_line = line;
      continue;
    }
    if (ch == '\n') ++line;
    if (mel_trim(current).empty() && !std::isspace((unsigned char)ch)) start_line = line;
    current += ch;
  }
  finish();
  return out;
}

}  // namespace cntk::brainscript
