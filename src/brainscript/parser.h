// BrainScript's syntax: source text -> expression tree (no evaluation here).
//
// The tree has CNTK's shape, so that CNTK's parser tests compare it as they are: every node has
// an `op` ("d" number, "s" string, "b" boolean, "id" identifier, "[]" record, "=>" lambda, "("
// application, "()" argument list, "." member, "[" index, "new", "if", "array", ":" array
// literal, "+(" "-(" "!(" unary operators, and the infix operators), positional `args` and, for
// records and argument lists, `named` members sorted by name.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cntk/common.h"

namespace cntk::brainscript {

// A source text split into lines: a file, or a string given on the command line.
struct SourceFile {
  std::string path;  // file path, or a description such as "(command line)"
  std::vector<std::string> lines;
  SourceFile(std::string path, const std::string& text);
  static std::shared_ptr<const SourceFile> read(const std::string& path);  // IOError when unreadable
};

// A position in a source: 0-based line and character (byte) offset.
struct TextLocation {
  std::shared_ptr<const SourceFile> source;
  size_t line = 0;
  size_t column = 0;
  bool valid() const { return source != nullptr; }
  // "path(line,column)", 1-based, as compilers write it.
  std::string where() const;
  // The source line and a caret line under the position ("  text\n  ^").
  std::string excerpt() const;
};

// A config or BrainScript error with its place in the source. what() reads
// "path(line,column): <kind> error: <message>" followed by the source line and a caret line.
struct ConfigError : ValueError {
  ConfigError(const std::string& kind, const std::string& message, TextLocation location);
  std::string message;
  TextLocation location;
};

struct Expression;
using ExpressionPtr = std::shared_ptr<Expression>;

struct Expression {
  TextLocation location;
  std::string op;
  double number = 0;     // op "d"
  std::string text;      // op "s"
  bool boolean = false;  // op "b"
  std::string id;        // op "id", and the name after "new" and "."
  std::vector<ExpressionPtr> args;
  std::map<std::string, std::pair<TextLocation, ExpressionPtr>> named;

  Expression(TextLocation location, std::string op) : location(std::move(location)), op(std::move(op)) {}
  // The tree in CNTK's test dump format (one node per line, indented by depth).
  std::string dump() const;
};

// Parses `text` as the members of a record (what a config file holds) and returns a "[]" node.
// `name` is the source's name in error messages; `include "file"` looks beside the including
// file first, then in `include_paths`.
ExpressionPtr parse_record(const std::string& text, const std::string& name,
                           std::vector<std::string> include_paths = {});
ExpressionPtr parse_record_file(const std::string& path, std::vector<std::string> include_paths = {});
// Parses one expression (a command-line value).
ExpressionPtr parse_expression(const std::string& text, std::vector<std::string> include_paths = {});

// Text of an included file that has no file on disk: include "cntk.core.bs" resolves to the
// library built into the executable when no such file is found. Returns nullptr when unknown.
using BuiltinSourceLookup = const std::string* (*)(const std::string& file_name);
void set_builtin_sources(BuiltinSourceLookup lookup);

}  // namespace cntk::brainscript
