// BrainScript lexer and recursive-descent parser (grammar and tree shape as CNTK 2.7's).
#include "brainscript/parser.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace cntk::brainscript {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// sources, locations, errors

SourceFile::SourceFile(std::string p, const std::string& text) : path(std::move(p)) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  // A final newline does not start another line.
  if (!text.empty() && text.back() == '\n') lines.pop_back();
}

std::shared_ptr<const SourceFile> SourceFile::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IOError("cannot open source file '" + path + "'");
  // Read with a cap: a device such as /dev/zero named by an include must not exhaust memory.
  constexpr size_t max_size = 64 << 20;
  std::string text;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > max_size) throw IOError("source file '" + path + "' is larger than 64 MiB");
  }
  return std::make_shared<SourceFile>(path, text);
}

std::string TextLocation::where() const {
  if (!source) return "(unknown location)";
  return source->path + "(" + std::to_string(line + 1) + "," + std::to_string(column + 1) + ")";
}

std::string TextLocation::excerpt() const {
  if (!source) return "";
  const std::string text = line < source->lines.size() ? source->lines[line] : "(end)";
  std::string caret(column, ' ');
  // Keep tabs so that the caret lines up under the same character.
  for (size_t i = 0; i < column && i < text.size(); ++i)
    if (text[i] == '\t') caret[i] = '\t';
  return "  " + text + "\n  " + caret + "^";
}

ConfigError::ConfigError(const std::string& kind, const std::string& msg, TextLocation loc)
    : ValueError(loc.where() + ": " + kind + " error: " + msg + (loc.valid() ? "\n" + loc.excerpt() : "")),
      message(msg),
      location(std::move(loc)) {}

namespace {

BuiltinSourceLookup builtin_sources = nullptr;

// ---------------------------------------------------------------------------------------------
// lexer

enum class TokenKind { punctuation, number, string, identifier, keyword, eof };

struct Token {
  TokenKind kind = TokenKind::eof;
  std::string symbol;  // punctuation, identifier, keyword or string contents
  double number = 0;
  TextLocation location;
};

const std::set<std::string> keywords = {"include", "new", "with", "true", "false", "if", "then", "else", "array"};
const std::set<std::string> punctuations = {"=",  ";", ",",  "[",  "]",  "(", ")",  "{",  "}",  "[|", "|]", "+",
                                            "-",  "*", "/",  "**", ".*", "%", "||", "&&", "<<", ">>", "!",  "<",
                                            "==", ">", ">=", "!=", "<=", ":", "=>", "..", ".",  "//", "#",  "/*"};

// Letters, digits, '_' and any byte of a UTF-8 sequence (CNTK read wide characters).
bool is_alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::shared_ptr<const SourceFile> source, std::vector<std::string> include_paths)
      : include_paths_(std::move(include_paths)) {
    cursor_.source = std::move(source);
    advance();
  }

  const Token& token() const { return token_; }
  void advance() { token_ = next(); }
  TextLocation cursor() const { return cursor_; }

  [[noreturn]] static void fail(const std::string& msg, const TextLocation& where) {
    throw ConfigError("syntax", msg, where);
  }

 private:
  struct Frame {
    TextLocation resume;  // where the including file continues
  };
  TextLocation cursor_;
  std::vector<Frame> stack_;
  std::vector<std::string> include_paths_;
  Token token_;

  const std::string* line() const {
    const auto& lines = cursor_.source->lines;
    return cursor_.line < lines.size() ? &lines[cursor_.line] : nullptr;
  }
  // The current character: '\n' at a line end, 0 at the end of the source.
  char peek(size_t ahead = 0) const {
    const std::string* l = line();
    if (!l) return 0;
    size_t pos = cursor_.column + ahead;
    if (pos < l->size()) return (*l)[pos];
    return pos == l->size() ? '\n' : 0;
  }
  void consume(size_t n = 1) {
    if (peek() == '\n') {
      ++cursor_.line;
      cursor_.column = 0;
    } else {
      cursor_.column += n;
    }
  }

  // Whether a file is there; a name the file system refuses (too long, ...) is not there.
  static bool file_exists(const fs::path& path) {
    std::error_code error;
    return fs::exists(path, error);
  }

  std::string find_include(const std::string& path) const {
    if (file_exists(path)) return path;
    const std::string name = fs::path(path).filename().string();
    for (const auto& dir : include_paths_) {
      fs::path candidate = fs::path(dir) / name;
      if (file_exists(candidate)) return candidate.string();
    }
    return path;
  }

  void push_include(const std::string& path, const TextLocation& where) {
    if (stack_.size() >= 64) fail("includes nested too deeply (an include loop?)", where);
    const std::string found = find_include(path);
    std::shared_ptr<const SourceFile> source;
    if (file_exists(found)) {
      source = SourceFile::read(found);
    } else if (const std::string* text =
                   builtin_sources ? builtin_sources(fs::path(path).filename().string()) : nullptr) {
      source = std::make_shared<SourceFile>(fs::path(path).filename().string(), *text);
    } else {
      fail("cannot find include file '" + path + "'", where);
    }
    stack_.push_back({cursor_});
    include_paths_.insert(include_paths_.begin(), fs::path(found).parent_path().string());
    cursor_ = TextLocation{source, 0, 0};
  }

  Token next() {
    while (true) {
      char c = peek();
      while (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        consume();
        c = peek();
      }
      Token t;
      t.location = cursor_;
      if (c == 0) {
        if (!stack_.empty()) {  // end of an included file: continue after the include statement
          cursor_ = stack_.back().resume;
          stack_.pop_back();
          include_paths_.erase(include_paths_.begin());
          continue;
        }
        t.kind = TokenKind::eof;
        return t;
      }
      const std::string& l = *line();
      if (is_digit(c) || (c == '.' && is_digit(peek(1)))) {
        const char* begin = l.data() + cursor_.column;
        const char* end = l.data() + l.size();
        auto [ptr, ec] = std::from_chars(begin, end, t.number);
        if (ec == std::errc::result_out_of_range) fail("number out of range", t.location);
        if (ec != std::errc() || ptr == begin) fail("malformed number", t.location);
        if (ptr[-1] == '.' && ptr < end && ptr[0] == '.') --ptr;  // "1..2" is 1 .. 2
        t.kind = TokenKind::number;
        consume(ptr - begin);
        return t;
      }
      if (is_alpha(c)) {
        while (is_alpha(c) || is_digit(c)) {
          t.symbol.push_back(c);
          consume();
          c = peek();
        }
        t.kind = keywords.count(t.symbol) ? TokenKind::keyword : TokenKind::identifier;
        if (t.symbol == "include") {
          Token name = next();
          if (name.kind != TokenKind::string) fail("'include' must be followed by a quoted string", name.location);
          push_include(name.symbol, name.location);
          continue;
        }
        return t;
      }
      if (c == '"' || c == '\'') {  // strings have no escapes; they end at the same quote
        const char quote = c;
        consume();
        for (c = peek(); c != quote; c = peek()) {
          if (c == 0) fail("string without closing quotation mark", t.location);
          t.symbol.push_back(c);
          consume();
        }
        consume();
        t.kind = TokenKind::string;
        return t;
      }
      t.kind = TokenKind::punctuation;
      t.symbol = std::string(1, c);
      const char second = peek(1);
      if (second != '\n' && second != 0 && punctuations.count(t.symbol + second)) {
        t.symbol.push_back(second);
        consume(2);
      } else if (punctuations.count(t.symbol)) {
        consume();
      } else {
        fail("unexpected character '" + t.symbol + "'", t.location);
      }
      if (t.symbol == "#" || t.symbol == "//") {  // comment to the end of the line
        cursor_.column = l.size();
        continue;
      }
      if (t.symbol == "/*") {
        while (!(peek() == '*' && peek(1) == '/')) {
          if (peek() == 0) fail("comment without closing */", t.location);
          consume();
        }
        consume(2);
        continue;
      }
      return t;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// parser

const std::map<std::string, int> infix_precedence = {
    {".", 99}, {"[", 99}, {"(", 99},   {"{", 99},              // postfix forms bind tightest
    {"*", 10}, {"/", 10}, {".*", 10},  {"**", 10}, {"%", 10},  //
    {"+", 9},  {"-", 9},  {"with", 9},                         //
    {"==", 8}, {"!=", 8}, {"<", 8},    {"<=", 8},  {">", 8},  {">=", 8},
    {"&&", 7}, {"||", 6}, {">>", 5},   {"<<", 5},  {":", 4},  {"=>", 0}};
constexpr int unary_precedence = 90;  // below the postfix forms, above every infix operator
constexpr int max_depth = 1000;       // deeper nesting is refused rather than overflowing the stack

class Parser : public Lexer {
 public:
  using Lexer::Lexer;

  ExpressionPtr parse_expression(int required_precedence) {
    DepthGuard guard(this);
    ExpressionPtr left = parse_operand();
    while (true) {
      const Token& tok = token();
      if (tok.kind != TokenKind::punctuation && tok.kind != TokenKind::keyword) break;
      auto it = infix_precedence.find(tok.symbol);
      if (it == infix_precedence.end() || it->second < required_precedence) break;
      const int precedence = it->second;
      const std::string op = tok.symbol;
      auto node = std::make_shared<Expression>(tok.location, op);
      node->args.push_back(left);
      if (op == ".") {
        advance();
        node->location = token().location;
        node->id = identifier();
      } else if (op == "=>") {
        if (left->op != "id") expected("identifier");
        advance();
        auto params = std::make_shared<Expression>(left->location, "()");
        params->args.push_back(left);
        node->args[0] = params;
        node->args.push_back(parse_expression(precedence));  // same precedence: right-associative
      } else if (op == "(" || op == "{") {
        node->args.push_back(parse_arguments(false, op));
      } else if (op == "[") {
        advance();
        node->args.push_back(parse_expression(0));
        punctuation("]");
      } else if (op == ":") {  // a:b:c becomes one ':' node with all items
        advance();
        ExpressionPtr right = parse_expression(precedence + 1);
        if (left->op == ":") {
          node->args = left->args;
          node->location = left->location;
        }
        node->args.push_back(right);
      } else {
        advance();
        node->args.push_back(parse_expression(precedence + 1));
      }
      left = node;
    }
    return left;
  }

  std::map<std::string, std::pair<TextLocation, ExpressionPtr>> parse_members() {
    std::map<std::string, std::pair<TextLocation, ExpressionPtr>> members;
    while (token().kind == TokenKind::identifier) {
      const TextLocation where = token().location;
      const std::string name = identifier();
      ExpressionPtr index, from, to;
      if (is_punctuation("[")) {  // name[i:from..to] = body  is  name = array[from..to](i => body)
        advance();
        index = parse_operand();
        if (index->op != "id") expected("identifier");
        punctuation(":");
        from = parse_expression(0);
        punctuation("..");
        to = parse_expression(0);
        punctuation("]");
      }
      ExpressionPtr params;
      if (is_punctuation("(") || is_punctuation("{")) params = parse_arguments(true, std::string(token().symbol));
      punctuation("=");
      ExpressionPtr rhs = parse_expression(0);
      if (params) rhs = lambda(params->location, params, rhs);
      if (index) {
        auto index_params = std::make_shared<Expression>(index->location, "()");
        index_params->args.push_back(index);
        auto array = std::make_shared<Expression>(where, "array");
        array->args = {from, to, lambda(index->location, index_params, rhs)};
        rhs = array;
      }
      if (!members.emplace(name, std::make_pair(where, rhs)).second)
        fail("duplicate member definition '" + name + "'", where);
      if (is_punctuation(";")) advance();
    }
    return members;
  }

  void expect_end() {
    if (token().kind != TokenKind::eof) fail("junk at end of source", token().location);
  }

 private:
  int depth_ = 0;
  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) {
      if (++p->depth_ > max_depth) fail("expression nested too deeply", p->token().location);
    }
    ~DepthGuard() { --p->depth_; }
  };

  bool is_punctuation(const char* s) const { return token().kind == TokenKind::punctuation && token().symbol == s; }
  [[noreturn]] void expected(const std::string& what) const { fail(what + " expected", token().location); }
  void punctuation(const char* s) {
    if (!is_punctuation(s)) expected(std::string("'") + s + "'");
    advance();
  }
  void keyword(const char* s) {
    if (token().kind != TokenKind::keyword || token().symbol != s) expected(std::string("'") + s + "'");
    advance();
  }
  std::string identifier() {
    if (token().kind != TokenKind::identifier) expected("identifier");
    std::string id = token().symbol;
    advance();
    return id;
  }
  static ExpressionPtr lambda(const TextLocation& where, ExpressionPtr params, ExpressionPtr body) {
    auto node = std::make_shared<Expression>(where, "=>");
    node->args = {std::move(params), std::move(body)};
    return node;
  }

  ExpressionPtr parse_operand() {
    DepthGuard guard(this);
    const Token tok = token();
    ExpressionPtr node;
    if (tok.kind == TokenKind::number) {
      node = std::make_shared<Expression>(tok.location, "d");
      node->number = tok.number;
      advance();
    } else if (tok.kind == TokenKind::string) {
      node = std::make_shared<Expression>(tok.location, "s");
      node->text = tok.symbol;
      advance();
    } else if (tok.kind == TokenKind::keyword && (tok.symbol == "true" || tok.symbol == "false")) {
      node = std::make_shared<Expression>(tok.location, "b");
      node->boolean = tok.symbol == "true";
      advance();
    } else if (tok.kind == TokenKind::identifier) {
      node = std::make_shared<Expression>(tok.location, "id");
      node->id = identifier();
    } else if (tok.kind == TokenKind::punctuation && (tok.symbol == "+" || tok.symbol == "-" || tok.symbol == "!")) {
      node = std::make_shared<Expression>(tok.location, tok.symbol + "(");
      advance();
      node->args.push_back(parse_expression(unary_precedence));
    } else if (tok.kind == TokenKind::keyword && tok.symbol == "new") {
      node = std::make_shared<Expression>(tok.location, "new");
      advance();
      node->id = identifier();
      node->args.push_back(parse_operand());
    } else if (tok.kind == TokenKind::keyword && tok.symbol == "if") {
      node = std::make_shared<Expression>(tok.location, "if");
      advance();
      node->args.push_back(parse_expression(0));
      keyword("then");
      node->args.push_back(parse_expression(0));
      keyword("else");
      node->args.push_back(parse_expression(0));
    } else if (is_punctuation("(")) {  // parentheses leave no node of their own
      advance();
      node = parse_expression(0);
      punctuation(")");
    } else if (is_punctuation("{") || is_punctuation("[")) {  // record; [ ] is CNTK's older spelling of { }
      const char* close = tok.symbol == "{" ? "}" : "]";
      node = std::make_shared<Expression>(tok.location, "[]");
      advance();
      node->named = parse_members();
      punctuation(close);
    } else if (is_punctuation("[|")) {  // [| a; b |]: an array literal that may have 0 or 1 items
      node = std::make_shared<Expression>(tok.location, ":");
      advance();
      if (!is_punctuation("|]")) {
        while (true) {
          node->args.push_back(parse_expression(0));
          if (!is_punctuation(";")) break;
          advance();
        }
      }
      punctuation("|]");
    } else if (tok.kind == TokenKind::keyword && tok.symbol == "array") {
      node = std::make_shared<Expression>(tok.location, "array");
      advance();
      punctuation("[");
      node->args.push_back(parse_expression(0));
      punctuation("..");
      node->args.push_back(parse_expression(0));
      punctuation("]");
      punctuation("(");
      node->args.push_back(parse_expression(0));
      punctuation(")");
    } else {
      expected("operand");
    }
    return node;
  }

  // "(a, b, name = value)": positional args, and named ones (defaults when `defining` a macro).
  ExpressionPtr parse_arguments(bool defining, std::string open) {
    punctuation(open.c_str());
    auto node = std::make_shared<Expression>(token().location, "()");
    const char* close = open == "(" ? ")" : "}";
    if (!is_punctuation(close)) {
      while (true) {
        ExpressionPtr expr = parse_expression(0);
        if (defining && expr->op != "id") fail("argument identifier expected", expr->location);
        if (expr->op == "id" && is_punctuation("=")) {
          advance();
          ExpressionPtr value = parse_expression(0);
          if (!node->named.emplace(expr->id, std::make_pair(expr->location, value)).second)
            fail("duplicate optional parameter '" + expr->id + "'", expr->location);
        } else {
          node->args.push_back(expr);
        }
        if (!is_punctuation(",")) break;
        advance();
      }
    }
    punctuation(close);
    return node;
  }
};

void dump_node(const Expression& e, std::ostringstream& out, int indent) {
  out << std::string(std::max(indent, 1), ' ');
  if (e.op == "s") {
    out << '\'' << e.text << '\'';
  } else if (e.op == "d") {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.0f", e.number);
    out << buf;
  } else if (e.op == "b") {
    out << (e.boolean ? 1 : 0);  // CNTK's dump prints booleans as numbers
  } else if (e.op == "id") {
    out << e.id;
  } else if (e.op == "new" || e.op == "array" || e.op == ".") {
    out << e.op << ' ' << e.id;
  } else {
    out << e.op;
  }
  if (!e.args.empty()) {
    out << '\n';
    for (const auto& a : e.args) dump_node(*a, out, indent + 1);
  }
  if (!e.named.empty()) {
    out << '\n';
    for (const auto& [name, member] : e.named) {
      out << std::string(indent + 1, ' ') << name << " =\n";
      dump_node(*member.second, out, indent + 2);
    }
  }
  out << '\n';
}

}  // namespace

std::string Expression::dump() const {
  std::ostringstream out;
  dump_node(*this, out, 0);
  return out.str();
}

void set_builtin_sources(BuiltinSourceLookup lookup) { builtin_sources = lookup; }

static ExpressionPtr parse_members_of(std::shared_ptr<const SourceFile> source, std::vector<std::string> paths) {
  Parser parser(std::move(source), std::move(paths));
  auto members = parser.parse_members();
  parser.expect_end();
  auto record = std::make_shared<Expression>(parser.cursor(), "[]");
  record->named = std::move(members);
  return record;
}

ExpressionPtr parse_record(const std::string& text, const std::string& name, std::vector<std::string> include_paths) {
  return parse_members_of(std::make_shared<SourceFile>(name, text), std::move(include_paths));
}

ExpressionPtr parse_record_file(const std::string& path, std::vector<std::string> include_paths) {
  include_paths.insert(include_paths.begin(), fs::path(path).parent_path().string());
  return parse_members_of(SourceFile::read(path), std::move(include_paths));
}

ExpressionPtr parse_expression(const std::string& text, std::vector<std::string> include_paths) {
  Parser parser(std::make_shared<SourceFile>("(command line)", text), std::move(include_paths));
  ExpressionPtr expr = parser.parse_expression(0);
  parser.expect_end();
  return expr;
}

}  // namespace cntk::brainscript
