// CNTK's configuration language (see config.h).
#include "brainscript/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <strings.h>

namespace cntk::brainscript {

namespace {

constexpr std::string_view open_braces = "[{(\"";
constexpr std::string_view close_braces = "]})\"";
constexpr size_t npos = std::string::npos;

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool is_open(char c) { return open_braces.find(c) != std::string_view::npos; }

// Where the bracket (or quote) opened at `start` closes; brackets nest, quotes hide brackets.
// Returns npos with `error` set when it does not close.
size_t matching_brace(const std::string& s, size_t start, std::string* error) {
  std::string closers(1, close_braces[open_braces.find(s[start])]);
  for (size_t i = start + 1; i < s.size(); ++i) {
    const char c = s[i];
    if (closers.back() == '"') {
      if (c == '"') closers.pop_back();
    } else if (c == closers.back()) {
      closers.pop_back();
    } else if (is_open(c)) {
      closers.push_back(close_braces[open_braces.find(c)]);
      continue;
    } else if (close_braces.find(c) != std::string_view::npos) {
      *error = std::string("unmatched '") + c + "'";
      return npos;
    } else {
      continue;
    }
    if (closers.empty()) return i;
  }
  *error = std::string("no closing '") + closers.back() + "'";
  return npos;
}

struct Item {
  size_t begin, end;
};

// Splits `s` into items as CNTK's ConfigParser does: items end at newlines, ',' and
// `separator`, except inside brackets and quotes; one enclosing bracket level is entered and
// dropped (several top-level [ ... ] blocks in a row are read as one record); a separator
// character right after that opening bracket replaces `separator` inside it ("[|a|b]").
// `error(message, offset)` does not return.
template <typename Fail>
std::vector<Item> split_items(const std::string& s, char separator, Fail&& error) {
  std::vector<Item> items;
  std::string seps = std::string(",\r\n") + separator;
  const size_t n = s.size();
  size_t pos = 0, close = n;
  bool inside = false;
  auto leave = [&] {
    pos = close + 1;
    close = n;
    inside = false;
    seps.back() = separator;
  };
  while (pos < n) {
    size_t start = s.find_first_not_of(seps, pos);
    if (start != npos) start = s.find_first_not_of(" \t", start);
    if (start == npos) break;
    if (inside && start >= close) {
      leave();
      continue;
    }
    std::string why;
    if (!inside && is_open(s[start]) && s[start] != '"') {
      close = matching_brace(s, start, &why);
      if (close == npos) error(why, start);
      inside = true;
      pos = start + 1;
      static const std::string custom = "`~!@$%^&*_-+|:;,?.";
      const std::string rest = s.substr(pos, 2);
      if (pos < close && custom.find(s[pos]) != npos && rest != ".." && rest != ".\\" && rest != "./" &&
          rest != "\\\\") {
        seps.back() = s[pos];
        ++pos;
      }
      continue;
    }
    size_t end;
    if (is_open(s[start])) {  // a whole bracketed or quoted item
      const size_t m = matching_brace(s, start, &why);
      if (m == npos) error(why, start);
      end = m + 1;
    } else {
      end = s.find_first_of(seps + std::string(open_braces), start);
      if (end != npos && is_open(s[end])) {
        const size_t m = matching_brace(s, end, &why);
        if (m == npos) error(why, end);
        end = m + 1;
      }
      if (end == npos || end > close) end = close;
    }
    if (end > start) items.push_back({start, end});
    pos = end;
    if (inside && pos >= close) leave();
  }
  return items;
}

}  // namespace

std::string strip_config_comment(const std::string& line) {
  const size_t first = line.find_first_not_of(" \t\r");
  if (first == npos || line[first] == '#') return "";
  for (size_t i = line.find('#', first); i != npos; i = line.find('#', i + 1))
    if (line[i - 1] == ' ' || line[i - 1] == '\t') return line.substr(0, i);
  return line;
}

void ConfigText::append_source(const std::shared_ptr<const SourceFile>& source) {
  for (size_t i = 0; i < source->lines.size(); ++i) {
    text += strip_config_comment(source->lines[i]);
    text += '\n';
    lines.push_back({source, i});
  }
}

TextLocation ConfigText::locate(size_t offset) const {
  if (offset == npos || offset > text.size()) return {};
  const size_t line = std::count(text.begin(), text.begin() + offset, '\n');
  if (line >= lines.size()) return {};
  const size_t line_start = offset == 0 ? 0 : text.rfind('\n', offset - 1) + 1;
  const size_t column = line_start > offset ? 0 : offset - line_start;
  return {lines[line].source, lines[line].line, column};
}

bool ConfigRecord::CaseInsensitiveLess::operator()(const std::string& a, const std::string& b) const {
  return strcasecmp(a.c_str(), b.c_str()) < 0;
}

std::shared_ptr<ConfigRecord> ConfigRecord::parse(std::shared_ptr<const ConfigText> text, std::string name,
                                                  std::shared_ptr<const ConfigRecord> parent) {
  auto record = std::make_shared<ConfigRecord>();
  record->name_ = std::move(name);
  record->parent_ = std::move(parent);
  record->text_ = std::move(text);
  record->base_ = 0;
  record->parse_members(record->text_->text, 0);
  return record;
}

std::shared_ptr<ConfigRecord> ConfigRecord::parse(const std::string& text, std::string name,
                                                  std::shared_ptr<const ConfigRecord> parent) {
  auto t = std::make_shared<ConfigText>();
  t->append_source(std::make_shared<SourceFile>(name, text));
  return parse(t, std::move(name), std::move(parent));
}

void ConfigRecord::parse_into(const std::string& text) { parse_members(text, npos); }

void ConfigRecord::fail(const std::string& message, size_t offset) const {
  throw ConfigError("configuration", message + " (in " + name_ + ")", text_ ? text_->locate(offset) : TextLocation{});
}

void ConfigRecord::parse_members(const std::string& s, size_t base) {
  auto error = [&](const std::string& why, size_t at) { fail(why, base == npos ? npos : base + at); };
  for (const Item& item : split_items(s, ';', error)) parse_member(s, item.begin, item.end, base);
}

void ConfigRecord::parse_member(const std::string& s, size_t begin, size_t end, size_t base) {
  auto at = [&](size_t p) { return base == npos ? npos : base + p; };
  begin = s.find_first_not_of(" \t", begin);
  size_t key_end = s.find_first_of(std::string("=") + std::string(open_braces), begin);
  if (key_end == npos || key_end >= end) {  // a bare name is a flag set to true
    const std::string key = trim(s.substr(begin, end - begin));
    if (!key.empty()) insert(key, "true", at(begin));
    return;
  }
  const std::string key = trim(s.substr(begin, key_end - begin));
  size_t value_begin = s[key_end] == '=' ? key_end + 1 : key_end;
  value_begin = s.find_first_not_of(" \t", value_begin);
  if (value_begin == npos || value_begin >= end) fail("no value given for '" + key + "'", at(begin));
  size_t value_end = end;
  if (is_open(s[value_begin])) {
    std::string why;
    const size_t m = matching_brace(s, value_begin, &why);
    if (m == npos) fail(why, at(value_begin));
    value_end = m + 1;
    if (s[value_begin] == '"') {  // quotes are not part of the value
      ++value_begin;
      --value_end;
    }
  }
  std::string value = s.substr(value_begin, value_end - value_begin);
  const size_t lead = value.find_first_not_of(" \t\r");
  value = trim(value);
  if (key.empty()) return;
  insert(key, value, at(begin));
  members_.find(key)->second.value_offset =
      members_.find(key)->second.raw == value && lead != npos ? at(value_begin + lead) : npos;
}

void ConfigRecord::insert(const std::string& key, const std::string& raw_value, size_t offset) {
  auto it = members_.find(key);
  if (it == members_.end()) {
    members_.emplace(key, Member{raw_value, offset, npos});
  } else if (!raw_value.empty() && raw_value[0] == '[') {
    it->second.raw += " " + raw_value;  // a block assigned again extends the earlier one
    it->second.value_offset = npos;
  } else {
    it->second = Member{raw_value, offset, npos};
  }
}

const ConfigRecord* ConfigRecord::owner_of(const std::string& key) const {
  for (const ConfigRecord* r = this; r; r = r->parent_.get()) {
    auto it = r->members_.find(key);
    if (it != r->members_.end()) return it->second.raw == "default" ? nullptr : r;
  }
  return nullptr;
}

bool ConfigRecord::exists(const std::string& key) const { return owner_of(key) != nullptr; }
bool ConfigRecord::exists_here(const std::string& key) const { return members_.count(key) > 0; }

std::optional<std::string> ConfigRecord::find(const std::string& key) const {
  const ConfigRecord* owner = owner_of(key);
  if (!owner) return std::nullopt;
  return owner->resolve(owner->members_.find(key)->second.raw);
}

std::string ConfigRecord::get(const std::string& key) const {
  auto v = find(key);
  if (!v) throw ValueError("required configuration parameter missing: " + name_ + ":" + key);
  return *v;
}

std::string ConfigRecord::get(const std::string& key, const std::string& fallback) const {
  return find(key).value_or(fallback);
}

double ConfigRecord::get_double(const std::string& key) const { return config_to_double(get(key), name_ + ":" + key); }
double ConfigRecord::get_double(const std::string& key, double fallback) const {
  auto v = find(key);
  return v ? config_to_double(*v, name_ + ":" + key) : fallback;
}

long long ConfigRecord::get_int(const std::string& key, long long fallback) const {
  auto v = find(key);
  if (!v) return fallback;
  const double d = config_to_double(*v, name_ + ":" + key);
  if (d != std::floor(d)) throw ValueError("integer expected for " + name_ + ":" + key + ", got '" + *v + "'");
  return static_cast<long long>(d);
}

bool ConfigRecord::get_bool(const std::string& key, bool fallback) const {
  auto v = find(key);
  return v ? config_to_bool(*v, name_ + ":" + key) : fallback;
}

std::vector<std::string> ConfigRecord::get_array(const std::string& key,
                                                 const std::vector<std::string>& fallback) const {
  auto v = find(key);
  return v ? split_config_array(*v) : fallback;
}

std::shared_ptr<const ConfigRecord> ConfigRecord::block(const std::string& key) const {
  const ConfigRecord* owner = owner_of(key);
  if (!owner) throw ValueError("required configuration block missing: " + name_ + ":" + key);
  const Member& m = owner->members_.find(key)->second;
  const std::string value = owner->resolve(m.raw);
  auto child = std::make_shared<ConfigRecord>();
  child->name_ = owner->name_ + ":" + key;
  child->parent_ = owner->shared_from_this();
  child->text_ = owner->text_;
  child->base_ = value == m.raw ? m.value_offset : npos;
  child->parse_members(value, child->base_);
  return child;
}

std::vector<std::string> ConfigRecord::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : members_) out.push_back(k);
  return out;
}

std::string ConfigRecord::raw(const std::string& key) const {
  auto it = members_.find(key);
  return it == members_.end() ? std::string() : it->second.raw;
}

TextLocation ConfigRecord::location_of(const std::string& key) const {
  auto it = members_.find(key);
  return it == members_.end() || !text_ ? TextLocation{} : text_->locate(it->second.key_offset);
}

std::string ConfigRecord::resolve(const std::string& value) const { return resolve(value, 0); }

std::string ConfigRecord::resolve(const std::string& value, int depth) const {
  if (depth > 100) throw ValueError("configuration variables refer to each other in a cycle (in " + name_ + ")");
  static const std::string forbidden = ",/<>?;':\"[]{}\\|!@#%^&*()+=~` \t\n";
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t start = value.find('$', pos);
    if (start == npos) break;
    // $$ is refused, as CNTK did: values are re-read as they are nested, so it cannot mean '$'.
    if (start + 1 < value.size() && value[start + 1] == '$')
      throw ValueError("'$$' is not allowed in configuration values (in " + name_ + "): " + value);
    // A name starts with a letter or '_' and ends at the next '$'; anything else is a plain '$'.
    const bool name_start = start + 1 < value.size() &&
                            (std::isalpha(static_cast<unsigned char>(value[start + 1])) || value[start + 1] == '_');
    const size_t end = name_start ? value.find_first_of("$" + forbidden, start + 1) : npos;
    if (end == npos || value[end] != '$') {
      out += value.substr(pos, start + 1 - pos);
      pos = start + 1;
      continue;
    }
    const std::string name = value.substr(start + 1, end - start - 1);
    const ConfigRecord* owner = owner_of(name);
    if (!owner)
      throw ValueError("no configuration variable named '" + name + "' (used as $" + name + "$ in " + name_ + ")");
    const std::string replacement = owner->resolve(owner->members_.find(name)->second.raw, depth + 1);
    out += value.substr(pos, start - pos) + replacement;
    pos = end + 1;
  }
  return out + value.substr(pos);
}

std::vector<std::string> split_config_array(const std::string& value, char separator) {
  std::vector<std::string> out;
  auto error = [&](const std::string& why, size_t) -> void {
    throw ValueError("malformed array '" + value + "': " + why);
  };
  for (const Item& item : split_items(value, separator, error)) {
    const std::string text = value.substr(item.begin, item.end - item.begin);
    size_t star = is_open(text[0]) ? npos : text.find('*');
    if (star == npos) {
      if (!trim(text).empty()) out.push_back(trim(text));
      continue;
    }
    const std::string count_text = trim(text.substr(star + 1));
    const double count = config_to_double(count_text, "repetition count in '" + value + "'");
    if (count < 0 || count != std::floor(count) || count > 1e7)
      throw ValueError("bad repetition count '" + count_text + "' in '" + value + "'");
    out.insert(out.end(), static_cast<size_t>(count), trim(text.substr(0, star)));
  }
  return out;
}

double config_to_double(const std::string& value, const std::string& what) {
  const std::string v = trim(value);
  if (!v.empty()) {
    errno = 0;
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (*end == 0 && errno == 0) return d;
    if (strcasecmp(end, "#inf") == 0) return d > 0 ? INFINITY : -INFINITY;  // CNTK read 1.#INF
  }
  throw ValueError("number expected for " + what + ", got '" + value + "'");
}

bool config_to_bool(const std::string& value, const std::string& what) {
  const std::string v = trim(value);
  for (const char* t : {"t", "true", "T", "True", "TRUE", "1"})
    if (v == t) return true;
  for (const char* f : {"f", "false", "F", "False", "FALSE", "0", ""})
    if (v == f) return false;
  throw ValueError("boolean expected for " + what + ", got '" + value + "'");
}

}  // namespace cntk::brainscript
