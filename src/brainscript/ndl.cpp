// NDLNetworkBuilder -> BrainScript (see ndl.h). NDL text is parsed here into statements and
// macros, names are resolved case-insensitively (NDL's rule), and the result is written as a
// BrainScript record: macros become members of a `__ndl` record (so that a node may share its
// macro's name, as `FF = FF(x, W, b)` does in CNTK's macro files), a block macro returns a record
// whose `__value` is its result, and functions map onto the evaluator's primitives.
#include "brainscript/ndl.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <tuple>
#include <optional>
#include <set>

namespace cntk::brainscript {

namespace {

constexpr size_t npos = std::string::npos;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return s;
}

[[noreturn]] void fail(const std::string& message, const TextLocation& where) {
  throw ConfigError("NDL", message, where);
}

// A piece of NDL text and where its first line is in its file.
struct Chunk {
  std::string text;
  TextLocation origin;
  TextLocation at(size_t pos) const {
    TextLocation where = origin;
    const size_t end = std::min(pos, text.size());
    const size_t newlines = size_t(std::count(text.begin(), text.begin() + long(end), '\n'));
    where.line += newlines;
    where.column = newlines ? end - text.rfind('\n', end - 1) - 1 : origin.column + end;
    return where;
  }
};

struct NamedArg;

struct Expr {
  enum class Kind { Number, String, Name, Call, Array } kind = Kind::Name;
  std::string text;  // the name (dotted), function or macro name, or string
  double number = 0;
  std::vector<Expr> args;
  std::vector<NamedArg> named;  // key=value arguments (not a std::pair: Expr is incomplete here)
  TextLocation where;
  const Expr* option(const std::string& key) const;
};

struct NamedArg {
  std::string first;
  Expr second;
  NamedArg(std::string key, Expr value) : first(std::move(key)), second(std::move(value)) {}
};

const Expr* Expr::option(const std::string& key) const {
  for (const auto& [k, v] : named)
    if (lower(k) == lower(key)) return &v;
  return nullptr;
}

struct Statement {
  std::string name;
  Expr value;
  TextLocation where;
};

struct Macro {
  std::string name;
  std::vector<std::string> params;
  std::vector<Statement> body;  // a block macro's statements
  bool one_line = false;
  Expr expression;  // a one-line macro's value
  TextLocation where;
};

bool is_identifier(const std::string& s, bool dotted) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [dotted](char ch) {
    return std::isalnum((unsigned char)ch) || ch == '_' || (dotted && ch == '.');
  });
}

std::string trim_copy(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// NDL statement syntax over one chunk.
class Parser {
 public:
  explicit Parser(const Chunk& chunk) : c_(chunk), s_(chunk.text) {}

  // Statements and macro definitions of s[begin, end).
  void statements(size_t begin, size_t end, std::vector<Statement>& out, std::vector<Macro>* macros) {
    const auto items = split(begin, end, "\n;");
    for (size_t i = 0; i < items.size(); ++i) {
      auto [b, e] = trimmed(items[i]);
      if (b == e) continue;
      const size_t key_end = first_of(b, e, "=(");
      if (key_end != npos && s_[key_end] == '(' && is_identifier(trim_copy(s_.substr(b, key_end - b)), false)) {
        if (!macros) fail("a macro cannot be defined inside a macro", c_.at(b));
        Macro m;
        m.name = trim_copy(s_.substr(b, key_end - b));
        m.where = c_.at(b);
        const size_t close = matching(key_end);
        for (const auto& p : split(key_end + 1, close, ",")) {
          auto [pb, pe] = trimmed(p);
          const std::string param = s_.substr(pb, pe - pb);
          if (!is_identifier(param, false))
            fail("macro '" + m.name + "': parameter '" + param + "' is not a name", c_.at(pb));
          m.params.push_back(param);
        }
        size_t rest = s_.find_first_not_of(" \t\r", close + 1);
        if (rest != npos && rest < e && s_[rest] == '=') rest = s_.find_first_not_of(" \t\r\n", rest + 1);
        if (rest == npos || rest >= e) {  // the body is the next item: `M(x)` then `{ ... }` below it
          if (i + 1 >= items.size())
            fail("macro '" + m.name + "' has no body (a { } or [ ] block after its parameters)", m.where);
          std::tie(rest, e) = trimmed(items[++i]);
          if (rest == e || (s_[rest] != '{' && s_[rest] != '['))
            fail("macro '" + m.name + "' has no body (a { } or [ ] block after its parameters)", m.where);
        }
        if (s_[rest] == '{' || s_[rest] == '[') {
          const size_t body_end = matching(rest);
          if (trimmed({body_end + 1, e}).first != e)
            fail("unexpected text after the body of macro '" + m.name + "'", c_.at(body_end + 1));
          statements(rest + 1, body_end, m.body, nullptr);
          if (m.body.empty()) fail("macro '" + m.name + "' has an empty body", m.where);
        } else {
          m.one_line = true;
          m.expression = expression(rest, e);
        }
        macros->push_back(std::move(m));
        continue;
      }
      if (key_end == npos || s_[key_end] != '=')
        fail("'" + trim_copy(s_.substr(b, e - b)) + "' is neither 'name = value' nor a macro definition", c_.at(b));
      Statement st;
      st.name = trim_copy(s_.substr(b, key_end - b));
      st.where = c_.at(b);
      if (!is_identifier(st.name, false)) fail("'" + st.name + "' is not a valid name", st.where);
      st.value = expression(key_end + 1, e);
      out.push_back(std::move(st));
    }
  }

 private:
  const Chunk& c_;
  const std::string& s_;

  std::pair<size_t, size_t> trimmed(std::pair<size_t, size_t> r) const {
    while (r.first < r.second && std::isspace((unsigned char)s_[r.first])) ++r.first;
    while (r.second > r.first && std::isspace((unsigned char)s_[r.second - 1])) --r.second;
    return r;
  }

  // Index of the bracket closing the one at `open` (quotes skipped).
  size_t matching(size_t open) const {
    std::string stack;
    for (size_t i = open; i < s_.size(); ++i) {
      const char ch = s_[i];
      if (ch == '"' || ch == '\'') {
        const size_t q = s_.find(ch, i + 1);
        if (q == npos) fail("unterminated string", c_.at(i));
        i = q;
      } else if (ch == '(' || ch == '[' || ch == '{') {
        stack.push_back(ch == '(' ? ')' : ch == '[' ? ']' : '}');
      } else if (ch == ')' || ch == ']' || ch == '}') {
        if (stack.empty() || stack.back() != ch) fail(std::string("unbalanced '") + ch + "'", c_.at(i));
        stack.pop_back();
        if (stack.empty()) return i;
      }
    }
    fail(std::string("'") + s_[open] + "' is never closed", c_.at(open));
  }

  // s[begin, end) split at any of `separators` outside brackets and quotes.
  std::vector<std::pair<size_t, size_t>> split(size_t begin, size_t end, const char* separators) const {
    std::vector<std::pair<size_t, size_t>> out;
    size_t start = begin;
    for (size_t i = begin; i < end; ++i) {
      const char ch = s_[i];
      if (ch == '"' || ch == '\'' || ch == '(' || ch == '[' || ch == '{') {
        i = ch == '"' || ch == '\'' ? s_.find(ch, i + 1) : matching(i);
        if (i == npos || i >= end) fail("unterminated string or bracket", c_.at(start));
      } else if (ch == ')' || ch == ']' || ch == '}') {
        fail(std::string("unbalanced '") + ch + "'", c_.at(i));
      } else if (std::strchr(separators, ch)) {
        out.emplace_back(start, i);
        start = i + 1;
      }
    }
    out.emplace_back(start, end);
    return out;
  }

  // First of `chars` in s[begin, end) outside quotes, npos if none.
  size_t first_of(size_t begin, size_t end, const char* chars) const {
    for (size_t i = begin; i < end; ++i) {
      if (s_[i] == '"' || s_[i] == '\'') {
        i = s_.find(s_[i], i + 1);
        if (i == npos) return npos;
      } else if (std::strchr(chars, s_[i])) {
        return i;
      }
    }
    return npos;
  }

  Expr expression(size_t begin, size_t end) const {
    std::tie(begin, end) = trimmed({begin, end});
    Expr x;
    x.where = c_.at(begin);
    if (begin == end) fail("a value is missing", x.where);
    const std::string text = s_.substr(begin, end - begin);
    const char first = s_[begin];
    if (first == '"' || first == '\'') {
      if (text.size() < 2 || text.back() != first) fail("bad string " + text, x.where);
      x.kind = Expr::Kind::String;
      x.text = text.substr(1, text.size() - 2);
      return x;
    }
    if (first == '(') {
      if (matching(begin) != end - 1) fail("unexpected text after ')' in " + text, x.where);
      x.kind = Expr::Kind::Array;
      for (auto [b, e] : split(begin + 1, end - 1, ",:")) x.args.push_back(expression(b, e));
      return x;
    }
    char* parsed = nullptr;
    const double d = std::strtod(text.c_str(), &parsed);
    if (parsed && *parsed == 0) {
      x.kind = Expr::Kind::Number;
      x.number = d;
      x.text = text;
      return x;
    }
    const size_t paren = text.find('(');
    const std::string name = trim_copy(text.substr(0, paren));
    if (!is_identifier(name, paren == npos)) fail("cannot read '" + text + "'", x.where);
    x.text = name;
    if (paren == npos) return x;  // a name, possibly dotted
    const size_t open = begin + paren;
    if (matching(open) != end - 1) fail("unexpected text after ')' in " + text, x.where);
    x.kind = Expr::Kind::Call;
    const auto items = split(open + 1, end - 1, ",");
    if (items.size() == 1 && trimmed(items[0]).first == trimmed(items[0]).second) return x;  // F()
    for (auto [b, e] : items) {
      const size_t eq = first_of(b, e, "=(");
      if (eq != npos && s_[eq] == '=' && is_identifier(trim_copy(s_.substr(b, eq - b)), false)) {
        x.named.emplace_back(trim_copy(s_.substr(b, eq - b)), expression(eq + 1, e));
      } else {
        x.args.push_back(expression(b, e));
      }
    }
    return x;
  }
};

// CNTK's NDL function names (with their aliases), for "not implemented" rather than "unknown".
const std::set<std::string>& cntk_ndl_functions() {
  static const std::set<std::string> names = [] {
    const std::string all =
        "Abs Acos Asin Atan Asinh Atanh AveragePooling BatchNormalization Cast "
        "ClassBasedCrossEntropyWithSoftmax CBCEWithSM ClassificationError ErrorPrediction EditDistanceError "
        "StopGradient Equal GreaterEqual Greater ForwardBackward LabelsToGraph LessEqual Less NotEqual Clip "
        "Convolution Convolve Crop Pass Pooling CosDistance CosDist CosDistanceWithNegativeSamples "
        "CosWithNegSamples Cosh Cosine Cos CrossEntropy CrossEntropyWithSoftmax CEWithSM DiagTimes Diagonal "
        "Dropout DummyCriterion ElementTimes Exp Floor FutureValue GMMLogLikelihood GMMLL Hardmax If "
        "InputValue Input InvStdDev KhatriRaoProduct ColumnwiseCrossProduct LearnableParameter Parameter Log "
        "LogPlus LogSoftmax Logistic LookupTable MatrixL1Reg L1Reg MatrixL2Reg L2Reg MaxPooling MaxUnpooling "
        "Mean Minus Negate PastValue Delay PerDimMeanVarDeNormalization PerDimMVDeNorm "
        "PerDimMeanVarNormalization PerDimMVNorm Plus Reciprocal ReconcileDynamicAxis RectifiedLinear ReLU "
        "Reshape ROIPooling RowRepeat RowStack SequenceDecoder SequenceWithSoftmax SEWithSM "
        "LatticeSequenceWithSoftmax Sigmoid Sinh Sin Softmax SparseInputValue SparseInput Sqrt SquareError SE "
        "SumColumnElements SumElements Tan Tanh Times TransposeDimensions TransposeTimes ColumnElementTimes "
        "Constant Const ImageInput Image ImageParameter RowElementTimes RowSlice Scale SparseImageInput "
        "SparseImage Transpose ";
    std::set<std::string> s;
    for (size_t b = 0, e; b < all.size(); b = e + 1) {
      e = all.find(' ', b);
      s.insert(lower(all.substr(b, e - b)));
    }
    return s;
  }();
  return names;
}

std::string number_text(double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

std::string quoted(const std::string& s) { return s.find('\'') == npos ? "'" + s + "'" : "\"" + s + "\""; }

// The roles a network's nodes take (CNTK's node groups), by BrainScript member name.
const std::map<std::string, std::string>& role_members() {
  static const std::map<std::string, std::string> m = {{"feature", "featureNodes"},
                                                       {"label", "labelNodes"},
                                                       {"criterion", "criterionNodes"},
                                                       {"evaluation", "evaluationNodes"},
                                                       {"output", "outputNodes"}};
  return m;
}

// The role a list statement (`FeatureNodes = (...)`) fills, or "".
std::string role_of_list(const std::string& name) {
  static const std::map<std::string, std::string> lists = {
      {"featurenodes", "feature"},    {"labelnodes", "label"},     {"criterionnodes", "criterion"},
      {"criterianodes", "criterion"}, {"evalnodes", "evaluation"}, {"evaluationnodes", "evaluation"},
      {"outputnodes", "output"}};
  auto it = lists.find(lower(name));
  return it == lists.end() ? "" : it->second;
}

// The role a `tag=` value names ("" for none): CNTK's legacy spellings included.
std::string role_of_tag(const std::string& tag) {
  const std::string t = lower(tag);
  if (t == "criteria") return "criterion";
  if (t.rfind("eval", 0) == 0) return "evaluation";
  return role_members().count(t) ? t : "";
}

struct Symbol {
  enum class Kind { Value, Node, Record, Number, String, Array } kind = Kind::Value;
  std::string spelling;
  const Statement* statement = nullptr;  // nullptr for a macro parameter
  const Macro* macro = nullptr;          // the macro a Record instantiates
  bool resolved = false, resolving = false;
};

struct Scope {
  std::map<std::string, Symbol> symbols;  // by lower-case name
  Scope* outer = nullptr;                 // the top scope, for a macro's body
};

struct Resolved {
  std::string text;  // BrainScript path
  Symbol::Kind kind;
  const Macro* macro;
};

class Translator {
 public:
  // `given`: names (dotted ones included, any case) that stand for nodes made elsewhere, by the
  // BrainScript names they are bound to (MEL's in-line NDL over a model's nodes); with them the
  // statements need not make a network (no feature nodes required).
  Translator(std::vector<Statement> statements, std::vector<Macro> macros,
             std::map<std::string, std::string> given = {})
      : statements_(std::move(statements)), macros_(std::move(macros)), given_(std::move(given)) {
    for (const auto& m : macros_) {
      if (cntk_ndl_functions().count(lower(m.name))) fail("macro '" + m.name + "' has an NDL function's name", m.where);
      if (!macro_by_name_.emplace(lower(m.name), &m).second) fail("macro '" + m.name + "' is defined twice", m.where);
    }
    declare(top_, statements_, {});
    for (const auto& m : macros_) {
      Scope& scope = macro_scopes_[&m];
      scope.outer = &top_;
      declare(scope, m.body, m.params, m.where);
    }
  }

  // The BrainScript record; origins[i] is the NDL place of generated line i.
  std::string source(std::vector<TextLocation>& origins) {
    out_.clear();
    origins_.clear();
    line("[", {});
    line("__ndl = [", {});
    for (const auto& m : macros_) emit_macro(m);
    line("]", {});
    std::map<std::string, std::vector<std::string>> roles;
    auto add_role = [&roles](const std::string& role, const std::string& path) {
      auto& list = roles[role];
      if (std::find(list.begin(), list.end(), path) == list.end()) list.push_back(path);
    };
    for (const auto& st : statements_) {
      const std::string role = role_of_list(st.name);
      if (!role.empty()) {
        const auto items = st.value.kind == Expr::Kind::Array ? st.value.args : std::vector<Expr>{st.value};
        for (const auto& item : items) {
          if (item.kind != Expr::Kind::Name) fail(st.name + " lists node names", item.where);
          add_role(role, value(item, top_));
        }
        continue;
      }
      line(member(st, top_), st.where);
      for (const auto& [r, path] : roles_of(st)) add_role(r, path);
    }
    if (roles["feature"].empty() && !statements_.empty() && given_.empty())
      fail("the network has no feature nodes: FeatureNodes=(...) or a node with tag=feature must be given",
           statements_.front().where);
    for (const auto& [role, bs_name] : role_members()) {
      if (roles[role].empty()) continue;
      std::string list;
      for (const auto& p : roles[role]) list += (list.empty() ? "" : " : ") + p;
      line(bs_name + " = (" + list + ")", {});
    }
    line("]", {});
    origins = origins_;
    return out_;
  }

 private:
  std::vector<Statement> statements_;
  std::vector<Macro> macros_;
  std::map<std::string, std::string> given_;  // lower-case NDL name -> BrainScript name
  std::map<std::string, const Macro*> macro_by_name_;
  std::map<const Macro*, Scope> macro_scopes_;
  Scope top_;
  std::string out_;
  std::vector<TextLocation> origins_;
  std::set<const Macro*> expanding_;  // macros whose roles are being collected (recursion guard)

  void line(const std::string& text, const TextLocation& where) {
    out_ += text + "\n";
    origins_.push_back(where);
  }

  const Macro* macro(const std::string& name) const {
    auto it = macro_by_name_.find(lower(name));
    return it == macro_by_name_.end() ? nullptr : it->second;
  }

  // NDL names that are BrainScript keywords cannot be written out as members.
  static void check_writable(const std::string& name, const TextLocation& where) {
    static const std::set<std::string> keywords = {"include", "new",  "with", "true", "false",
                                                   "if",      "then", "else", "array"};
    if (keywords.count(name))
      throw NotImplementedError("NDL: the name '" + name + "' is not supported (" + where.where() + ")");
  }

  void declare(Scope& scope, const std::vector<Statement>& statements, const std::vector<std::string>& params,
               const TextLocation& where = {}) {
    for (const auto& p : params) {
      check_writable(p, where);
      Symbol s;
      s.spelling = p;
      s.resolved = true;
      if (!scope.symbols.emplace(lower(p), s).second) fail("parameter '" + p + "' is given twice", where);
    }
    for (const auto& st : statements) {
      if (!role_of_list(st.name).empty()) continue;
      if (cntk_ndl_functions().count(lower(st.name)))
        fail("'" + st.name + "' is the name of an NDL function and cannot name a node", st.where);
      check_writable(st.name, st.where);
      Symbol s;
      s.spelling = st.name;
      s.statement = &st;
      auto [it, fresh] = scope.symbols.emplace(lower(st.name), s);
      if (!fresh) fail("'" + st.name + "' is defined twice", st.where);
    }
  }

  Symbol::Kind kind_of(Symbol& s, Scope& scope) {
    if (s.resolved) return s.kind;
    if (s.resolving) return Symbol::Kind::Node;  // a reference to itself: a recurrence through a delay
    s.resolving = true;
    const Expr& v = s.statement->value;
    switch (v.kind) {
      case Expr::Kind::Number: s.kind = Symbol::Kind::Number; break;
      case Expr::Kind::String: s.kind = Symbol::Kind::String; break;
      case Expr::Kind::Array: s.kind = Symbol::Kind::Array; break;
      case Expr::Kind::Call:
        if (const Macro* m = macro(v.text); m && !m->one_line) {
          s.kind = Symbol::Kind::Record;
          s.macro = m;
        } else {
          s.kind = Symbol::Kind::Node;
        }
        break;
      case Expr::Kind::Name: {
        const Resolved r = resolve(v, scope);
        s.kind = r.kind;
        s.macro = r.macro;
        break;
      }
    }
    s.resolving = false;
    s.resolved = true;
    return s.kind;
  }

  // A (dotted) name: its BrainScript path, kind and macro. Lookups go to the top scope from a
  // macro's body, as CNTK's went to its global script.
  Resolved resolve(const Expr& name, Scope& scope, bool required = true) {
    std::vector<std::string> parts;
    for (size_t b = 0, e; b <= name.text.size(); b = e + 1) {
      e = name.text.find('.', b);
      if (e == npos) e = name.text.size();
      parts.push_back(name.text.substr(b, e - b));
    }
    Scope* in = &scope;
    auto found = in->symbols.find(lower(parts[0]));
    if (found == in->symbols.end() && in->outer) {
      in = in->outer;
      found = in->symbols.find(lower(parts[0]));
    }
    if (found == in->symbols.end()) {
      if (auto g = given_.find(lower(name.text)); g != given_.end()) return {g->second, Symbol::Kind::Node, nullptr};
      if (!required) return {"", Symbol::Kind::Value, nullptr};
      fail("undefined name '" + parts[0] + "'", name.where);
    }
    Symbol& first = found->second;
    Resolved r{first.spelling, kind_of(first, *in), first.macro};
    for (size_t i = 1; i < parts.size(); ++i) {
      if (r.kind != Symbol::Kind::Record)
        fail("'" + r.text + "' is not a macro instance, so '" + name.text + "' cannot be read", name.where);
      Scope& inner = macro_scopes_.at(r.macro);
      auto it = inner.symbols.find(lower(parts[i]));
      if (it == inner.symbols.end() || !it->second.statement)
        fail("macro '" + r.macro->name + "' has no node '" + parts[i] + "' (in '" + name.text + "')", name.where);
      r.kind = kind_of(it->second, inner);
      r.text += "." + it->second.spelling;
      r.macro = it->second.macro;
    }
    return r;
  }

  // An expression used as a value: a node, number, string or array.
  std::string value(const Expr& x, Scope& scope) {
    switch (x.kind) {
      case Expr::Kind::Number: return number_text(x.number);
      case Expr::Kind::String: return quoted(x.text);
      case Expr::Kind::Array: {
        std::string s;
        for (const auto& item : x.args) s += (s.empty() ? "" : " : ") + value(item, scope);
        return "(" + s + ")";
      }
      case Expr::Kind::Name: {
        const Resolved r = resolve(x, scope);
        return r.kind == Symbol::Kind::Record ? r.text + ".__value" : r.text;
      }
      case Expr::Kind::Call: {
        if (x.option("tag")) throw NotImplementedError("NDL: tag= on a nested call (" + x.where.where() + ")");
        const Macro* m = macro(x.text);
        return call(x, scope) + (m && !m->one_line ? ".__value" : "");
      }
    }
    return "";
  }

  // An optional parameter's value: a name that is not a symbol is a string (init=uniform).
  std::string option_value(const Expr& x, Scope& scope) {
    if (x.kind == Expr::Kind::Name) {
      const Resolved r = resolve(x, scope, false);
      if (r.text.empty()) {
        const std::string t = lower(x.text);
        return t == "true" || t == "false" ? t : quoted(x.text);
      }
    }
    return value(x, scope);
  }

  std::string member(const Statement& st, Scope& scope) {
    const Expr& v = st.value;
    if (v.kind == Expr::Kind::Call && macro(v.text) && !macro(v.text)->one_line)
      return st.name + " = " + call(v, scope);  // the macro's record: its nodes are named st.name.*
    if (v.kind == Expr::Kind::Name) {
      const Resolved r = resolve(v, scope);
      if (r.kind == Symbol::Kind::Record) return st.name + " = " + r.text;
    }
    if (v.kind == Expr::Kind::Call) {  // the statement's own tag is its role, not a parameter
      Expr untagged = v;
      std::erase_if(untagged.named, [](const auto& kv) { return lower(kv.first) == "tag"; });
      return st.name + " = " + value(untagged, scope);
    }
    return st.name + " = " + value(v, scope);
  }

  // Roles from `tag=` on a statement, and from the tags inside a macro it instantiates.
  std::vector<std::pair<std::string, std::string>> roles_of(const Statement& st) {
    std::vector<std::pair<std::string, std::string>> out;
    if (st.value.kind != Expr::Kind::Call) return out;
    const Macro* m = macro(st.value.text);
    const bool record = m && !m->one_line;
    for (const auto& [key, tag] : st.value.named) {
      if (lower(key) != "tag") continue;
      const std::string role = role_of_tag(tag.text);
      if (!role.empty()) out.emplace_back(role, st.name + (record ? ".__value" : ""));
    }
    if (record && !expanding_.count(m)) {
      expanding_.insert(m);
      for (const auto& inner : m->body)
        for (const auto& [role, path] : roles_of(inner)) out.emplace_back(role, st.name + "." + path);
      expanding_.erase(m);
    }
    return out;
  }

  void emit_macro(const Macro& m) {
    std::string params;
    for (const auto& p : m.params) params += (params.empty() ? "" : ", ") + p;
    Scope& scope = macro_scopes_.at(&m);
    if (m.one_line) {
      line(m.name + " (" + params + ") = " + value(m.expression, scope), m.where);
      return;
    }
    line(m.name + " (" + params + ") = [", m.where);
    // CNTK's rule: the member named as the macro is its value, else its last statement.
    const Statement* result = nullptr;
    for (const auto& st : m.body) {
      if (!role_of_list(st.name).empty()) continue;
      line(member(st, scope), st.where);
      if (!result || lower(result->name) != lower(m.name)) result = &st;
    }
    if (!result) fail("macro '" + m.name + "' defines no node", m.where);
    const Resolved r = resolve(Expr{Expr::Kind::Name, result->name, 0, {}, {}, result->where}, scope);
    line("__value = " + (r.kind == Symbol::Kind::Record ? r.text + ".__value" : r.text), m.where);
    line("]", m.where);
  }

  // A call of a macro or function as BrainScript.
  std::string call(const Expr& x, Scope& scope) {
    if (const Macro* m = macro(x.text)) {
      if (x.args.size() != m->params.size())
        fail("macro '" + m->name + "' takes " + std::to_string(m->params.size()) + " parameters, got " +
                 std::to_string(x.args.size()),
             x.where);
      for (const auto& [key, v] : x.named)
        if (lower(key) != "tag")
          throw NotImplementedError("NDL: optional parameter '" + key + "' of a macro call is not implemented yet (" +
                                    x.where.where() + ")");
      std::string args;
      for (const auto& a : x.args) args += (args.empty() ? "" : ", ") + value(a, scope);
      return "__ndl." + m->name + " (" + args + ")";
    }
    return function(x, scope);
  }

  std::string function(const Expr& x, Scope& scope) {
    const std::string fn = lower(x.text);
    const size_t n = x.args.size();
    auto need = [&](size_t lo, size_t hi) {
      if (n < lo || n > hi)
        fail(x.text + " takes " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                 " positional parameters, got " + std::to_string(n),
             x.where);
    };
    auto args = [&](size_t from = 0) {
      std::string s;
      for (size_t i = from; i < n; ++i) s += (s.empty() ? "" : ", ") + value(x.args[i], scope);
      return s;
    };
    auto opt = [&](const char* key) { return x.option(key); };
    auto prim = [](const std::string& name, const std::string& a) { return "__primitives." + name + " (" + a + ")"; };

    if (fn == "input" || fn == "inputvalue" || fn == "sparseinput" || fn == "sparseinputvalue") {
      need(1, 8);
      // dynamicAxis=name: the input's own sequence axis, shared by the inputs that name it.
      const std::string axis = opt("dynamicAxis") ? ", dynamicAxis = " + option_value(*opt("dynamicAxis"), scope) : "";
      return prim("Input", args() + (fn.find("sparse") == 0 ? ", sparse = true" : "") + axis);
    }
    if (fn == "imageinput" || fn == "image" || fn == "sparseimageinput" || fn == "sparseimage") {
      need(3, 4);  // (width, height, channels[, numImages: ignored, as CNTK did])
      const std::string layout = opt("imageLayout") ? lower(opt("imageLayout")->text) : "hwc";
      const std::string w = value(x.args[0], scope), h = value(x.args[1], scope), c = value(x.args[2], scope);
      std::string dims;
      if (layout == "hwc" || layout == "legacy")
        dims = c + ", " + w + ", " + h;  // CNTK's HWC images are stored channel-fastest
      else if (layout == "chw" || layout == "cudnn")
        dims = w + ", " + h + ", " + c;
      else
        fail("imageLayout must be HWC or CHW, not '" + opt("imageLayout")->text + "'", x.where);
      return prim("Input", dims + (fn.find("sparse") == 0 ? ", sparse = true" : ""));
    }
    if (fn == "parameter" || fn == "learnableparameter") {
      need(1, 2);
      std::string init = opt("init") ? lower(opt("init")->text) : "uniform";
      static const std::map<std::string, std::string> inits = {{"uniform", "uniform"},       {"gaussian", "gaussian"},
                                                               {"fixedvalue", "fixedValue"}, {"henormal", "heNormal"},
                                                               {"fromfile", "fromFile"},     {"bilinear", "bilinear"}};
      if (!inits.count(init))
        fail("Parameter: init must be uniform, gaussian, fixedValue, heNormal, fromFile or bilinear", x.where);
      std::string s = args() + (n == 1 ? ", 1" : "") + ", init = '" + inits.at(init) + "'";
      for (const char* key : {"initValueScale", "value", "randomSeed", "initFromFilePath"})
        if (const Expr* v = opt(key)) s += std::string(", ") + key + " = " + option_value(*v, scope);
      bool frozen = false;
      for (const char* key : {"needGradient", "needsGradient", "computeGradient"})
        if (const Expr* v = opt(key)) frozen |= !config_to_bool(lower(v->text), key);
      if (frozen)
        s += ", learningRateMultiplier = 0";
      else if (const Expr* v = opt("learningRateMultiplier"))
        s += ", learningRateMultiplier = " + option_value(*v, scope);
      return prim("Parameter", s);
    }
    if (fn == "constant" || fn == "const") {
      need(1, 1);
      std::string s = args();
      for (const char* key : {"rows", "cols"})
        s += std::string(", ") + key + " = " + (opt(key) ? option_value(*opt(key), scope) : "1");
      return prim("Constant", s);
    }
    static const std::map<std::string, std::string> binary = {{"plus", "Plus"},
                                                              {"minus", "Minus"},
                                                              {"elementtimes", "ElementTimes"},
                                                              {"scale", "ElementTimes"},
                                                              {"crossentropywithsoftmax", "CrossEntropyWithSoftmax"},
                                                              {"cewithsm", "CrossEntropyWithSoftmax"},
                                                              {"classificationerror", "ClassificationError"},
                                                              {"errorprediction", "ClassificationError"},
                                                              {"squareerror", "SquareError"},
                                                              {"se", "SquareError"},
                                                              {"logistic", "Logistic"}};
    if (auto it = binary.find(fn); it != binary.end()) {
      need(2, 2);
      return prim(it->second, args());
    }
    if (fn == "times") {
      need(2, 2);
      const Expr* rank = opt("outputRank");
      return prim("Times", args() + (rank ? ", outputRank = " + option_value(*rank, scope) : ""));
    }
    // Unary functions by NDL name (lower case) and primitive; CNTK's spellings and aliases.
    static const std::map<std::string, std::string> unary = [] {
      std::map<std::string, std::string> m;
      for (const char* name :
           {"Sigmoid", "Tanh",  "RectifiedLinear", "ReLU",         "Softmax", "Log", "Exp", "Abs",  "Sqrt", "Negate",
            "Dropout", "Mean",  "InvStdDev",       "Reciprocal",   "Hardmax", "Sin", "Cos", "Sinh", "Cosh", "Asin",
            "Acos",    "Asinh", "Atanh",           "StopGradient", "Floor"})
        m[lower(name)] = name;
      m["cosine"] = "Cos";
      return m;
    }();
    if (auto it = unary.find(fn); it != unary.end()) {
      need(1, 1);
      return prim(it->second, args());
    }
    if (fn == "maxpooling" || fn == "averagepooling") {
      // (x, windowWidth, windowHeight, stepW, stepH, imageLayout = HWC): without padding, over
      // width and height; a legacy HWC image is stored channel-fastest (see ImageInput).
      need(5, 5);
      const std::string layout = opt("imageLayout") ? lower(opt("imageLayout")->text) : "hwc";
      auto dims = [&](size_t w, size_t h) {
        const std::string ws = value(x.args[w], scope), hs = value(x.args[h], scope);
        if (layout == "hwc" || layout == "legacy") return "(1 : " + ws + " : " + hs + ")";
        if (layout == "chw" || layout == "cudnn") return "(" + ws + " : " + hs + " : 1)";
        fail("imageLayout must be HWC or CHW, not '" + opt("imageLayout")->text + "'", x.where);
      };
      return prim("Pooling", value(x.args[0], scope) + ", '" + (fn == "maxpooling" ? "max" : "average") + "', " +
                                 dims(1, 2) + ", stride = " + dims(3, 4) + ", autoPadding = false");
    }
    if (fn == "rowslice") {  // (startIndex, numRows, x): rows of CNTK's first (column-major) axis
      need(3, 3);
      const std::string start = value(x.args[0], scope);
      return prim("Slice", start + ", " + start + " + " + value(x.args[1], scope) + ", " + value(x.args[2], scope) +
                               ", axis = 1");
    }
    if (fn == "rowstack") {  // its inputs one after the other along the first axis
      need(1, 1000);
      std::string items;
      for (const auto& a : x.args) items += (items.empty() ? "" : " : ") + value(a, scope);
      return prim("Splice", "(" + items + "), axis = 1");
    }
    if (fn == "transposedimensions") {
      need(3, 3);
      return prim("TransposeDimensions", args());
    }
    if (fn == "clip") {  // (minValue, maxValue, x), as CNTK's ClipNode
      need(3, 3);
      return prim("Clip", value(x.args[2], scope) + ", " + value(x.args[0], scope) + ", " + value(x.args[1], scope));
    }
    if (fn == "crossentropy") {  // (labels, probabilities): -sum(labels .* log(probabilities))
      need(2, 2);
      return prim("Negate", prim("ReduceSum", prim("ElementTimes", value(x.args[0], scope) + ", " +
                                                                       prim("Log", value(x.args[1], scope)))));
    }
    if (fn == "perdimmeanvarnormalization" || fn == "perdimmvnorm") {
      need(3, 3);
      return "PerDimMeanVarNormalization (" + args() + ")";  // the library's function
    }
    if (fn == "sumelements") {
      need(1, 1);
      return "SumElements (" + args() + ")";
    }
    if (fn == "pastvalue" || fn == "delay" || fn == "futurevalue") {
      need(2, 3);  // (rows, [cols,] input, timeStep = 1, defaultHiddenActivation = 0.1)
      const std::string dims =
          n == 2 ? value(x.args[0], scope) : "(" + value(x.args[0], scope) + " : " + value(x.args[1], scope) + ")";
      std::string s = dims + ", " + value(x.args[n - 1], scope);
      const Expr* step = opt("timeStep") ? opt("timeStep") : opt("delayTime");
      if (step) s += ", timeStep = " + option_value(*step, scope);
      if (const Expr* v = opt("defaultHiddenActivation")) s += ", defaultHiddenActivation = " + option_value(*v, scope);
      return std::string(fn == "futurevalue" ? "FutureValue" : "PastValue") + " (" + s + ")";
    }
    if (cntk_ndl_functions().count(fn))
      throw NotImplementedError("NDL function '" + x.text + "' is not implemented yet (" + x.where.where() + ")");
    fail("undefined function or macro '" + x.text + "'", x.where);
  }
};

// The holder of `key` seen from `from` (lookups go outwards), or nullptr.
const ConfigRecord* holder_of(const ConfigRecord& from, const std::string& key) {
  for (const ConfigRecord* r = &from; r; r = r->parent().get())
    if (r->exists_here(key)) return r;
  return nullptr;
}

// A section's text, without its brackets (kept as blanks so that positions stay).
Chunk section(const ConfigRecord& from, const std::string& name, const std::string& why) {
  const ConfigRecord* holder = holder_of(from, name);
  if (!holder) throw ValueError("NDLNetworkBuilder: '" + why + "=" + name + "' names no section of the configuration");
  const std::optional<std::string> text = holder->find(name);
  if (!text) throw ValueError("NDLNetworkBuilder: '" + why + "=" + name + "' names no section of the configuration");
  Chunk c{*text, holder->location_of(name)};
  c.origin.column = 0;
  const size_t b = c.text.find_first_not_of(" \t\r\n");
  const size_t e = c.text.find_last_not_of(" \t\r\n");
  if (b != npos && (c.text[b] == '[' || c.text[b] == '{') && (c.text[e] == ']' || c.text[e] == '}'))
    c.text[b] = c.text[e] = ' ';
  return c;
}

// An NDL file (networkDescription, ndlMacros): a config of sections, or bare NDL text. Its
// `$var$`s are the command's config values, as CNTK resolved them.
struct NdlFile {
  std::shared_ptr<const ConfigRecord> record;  // nullptr for bare NDL text
  Chunk text;
};

// `run`: the sections the builder names; a file that holds them is a config even without a run=
// of its own.
NdlFile read_ndl_file(const std::string& path, const std::shared_ptr<const ConfigRecord>& config,
                      const std::optional<std::string>& run = std::nullopt) {
  auto text = std::make_shared<ConfigText>();
  text->append_source(SourceFile::read(path));
  NdlFile f;
  try {
    auto record = ConfigRecord::parse(text, path, config);
    bool holds_run = run.has_value();
    if (run)
      for (const auto& name : split_config_array(*run)) holds_run = holds_run && record->exists_here(name);
    if (holds_run || record->exists_here("run") || record->exists_here("load")) f.record = record;
  } catch (const ValueError&) {  // bare macro definitions: not a config
  }
  f.text = {config->resolve(text->text), {text->lines.empty() ? nullptr : text->lines[0].source, 0, 0}};
  return f;
}

// The chunks of a file or config: its `load` sections, then its `run` sections (CNTK's order).
void sections(const ConfigRecord& from, const std::optional<std::string>& load, const std::optional<std::string>& run,
              std::vector<Chunk>& out) {
  for (const auto* key : {&load, &run})
    if (*key)
      for (const auto& name : split_config_array(**key))
        out.push_back(section(from, name, key == &load ? "load" : "run"));
}

// ndlMacros=a.ndl+b.ndl seen from `config`: files of macros, read before the network's NDL
// (CNTK's global macros).
std::vector<Chunk> ndl_macros(const std::shared_ptr<const ConfigRecord>& config) {
  std::vector<Chunk> out;
  if (auto files = config->find("ndlMacros"); files && !files->empty())
    for (const auto& path : split_config_array(*files, '+')) {
      const NdlFile f = read_ndl_file(path, config);
      if (f.record)
        sections(*f.record, f.record->find("load"), f.record->find("run"), out);
      else
        out.push_back(f.text);
    }
  return out;
}

}  // namespace

NdlTranslation translate_inline_ndl(const std::shared_ptr<const ConfigRecord>& config,
                                    const std::shared_ptr<const SourceFile>& script,
                                    const std::vector<InlineNdlStatement>& statements,
                                    const std::vector<std::string>& given) {
  std::vector<Statement> parsed, ignored;
  std::vector<Macro> macros;
  for (const auto& c : ndl_macros(config)) Parser(c).statements(0, c.text.size(), ignored, &macros);
  for (const auto& st : statements) {
    const Chunk c{st.text, {script, st.line, 0}};
    Parser(c).statements(0, c.text.size(), parsed, nullptr);
  }
  std::map<std::string, std::string> names;
  for (size_t i = 0; i < given.size(); ++i) names[lower(given[i])] = inline_given_name(i);
  NdlTranslation t;
  t.source = Translator(std::move(parsed), std::move(macros), std::move(names)).source(t.origins);
  return t;
}

std::string inline_given_name(size_t i) { return "__given" + std::to_string(i); }

NdlTranslation translate_ndl(const ConfigRecord& command) {
  const ConfigRecord* holder = holder_of(command, "NDLNetworkBuilder");
  if (!holder) throw ValueError("no NDLNetworkBuilder block");
  // The block's own keys (networkDescription, run, ...); a block that holds NDL statements only
  // need not read as a configuration, and then lookups start where it is.
  std::shared_ptr<const ConfigRecord> builder;
  try {
    builder = command.block("NDLNetworkBuilder");
  } catch (const ValueError&) {
    builder = holder->shared_from_this();
  }
  std::vector<Chunk> macro_chunks = ndl_macros(builder), chunks;
  const std::string description = builder->get("networkDescription", "");
  if (description.empty()) {
    if (!builder->exists("run"))
      throw ValueError("NDLNetworkBuilder: either networkDescription=file or run=section must be given");
    sections(*builder, builder->find("load"), builder->find("run"), chunks);
  } else {
    const NdlFile f =
        read_ndl_file(description, builder, builder->exists_here("run") ? builder->find("run") : std::nullopt);
    if (f.record) {  // run=/load= given beside networkDescription override the file's
      sections(*f.record, builder->exists("load") ? builder->find("load") : f.record->find("load"),
               builder->exists("run") ? builder->find("run") : f.record->find("run"), chunks);
    } else {
      chunks.push_back(f.text);
    }
  }
  std::vector<Statement> statements, ignored;
  std::vector<Macro> macros;
  for (const auto& c : macro_chunks) Parser(c).statements(0, c.text.size(), ignored, &macros);
  for (const auto& c : chunks) Parser(c).statements(0, c.text.size(), statements, &macros);
  NdlTranslation t;
  t.source = Translator(std::move(statements), std::move(macros)).source(t.origins);
  return t;
}

std::string ndl_network_source(const ConfigRecord& command) { return translate_ndl(command).source; }

}  // namespace cntk::brainscript
