// CNTK's configuration language: the `key = value` records of `.cntk` files and of the
// `cntk` command line (CNTK 2.7's ConfigParameters semantics).
//
// A record maps case-insensitive keys to raw value strings. A value is a plain string, a
// quoted string (quotes removed), or a block in brackets kept verbatim: `[ ... ]` is a nested
// record, `( ... )` a BrainScript expression, `a:b*3:c` an array. Blocks are parsed when read,
// with the enclosing record as parent, so lookups fall back to enclosing records. Assigning a
// `[ ... ]` block to a key that is already set appends it (`Train=[SGD=[maxEpochs=3]]` on the
// command line overrides one key of Train's SGD block); any other assignment replaces.
// `$name$` in a value is replaced, when the value is read, by name's value looked up from the
// record that holds the value outwards.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "brainscript/parser.h"

namespace cntk::brainscript {

// The text a record was parsed from, with the origin of each of its lines (for errors).
struct ConfigText {
  std::string text;
  struct Origin {
    std::shared_ptr<const SourceFile> source;
    size_t line;
  };
  std::vector<Origin> lines;                                            // one per '\n'-terminated line of `text`
  void append_source(const std::shared_ptr<const SourceFile>& source);  // comments stripped
  TextLocation locate(size_t offset) const;
};

// Drops a `#` comment: a whole-line one, or one preceded by a blank (CNTK's rule: `a#b` stays).
std::string strip_config_comment(const std::string& line);

class ConfigRecord : public std::enable_shared_from_this<ConfigRecord> {
 public:
  // Parses `text` (members separated by newlines, ';' or ','; an outer [ ] is allowed).
  static std::shared_ptr<ConfigRecord> parse(std::shared_ptr<const ConfigText> text, std::string name,
                                             std::shared_ptr<const ConfigRecord> parent = nullptr);
  static std::shared_ptr<ConfigRecord> parse(const std::string& text, std::string name = "global",
                                             std::shared_ptr<const ConfigRecord> parent = nullptr);

  // Lookups search this record, then the enclosing ones. Values come back with `$var$` resolved;
  // a value "default" counts as absent.
  bool exists(const std::string& key) const;
  bool exists_here(const std::string& key) const;
  std::optional<std::string> find(const std::string& key) const;
  std::string get(const std::string& key) const;  // ValueError naming the key when absent
  std::string get(const std::string& key, const std::string& fallback) const;
  double get_double(const std::string& key, double fallback) const;
  double get_double(const std::string& key) const;
  long long get_int(const std::string& key, long long fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  // `a:b*3:c` (also separated by ',' or newlines; an outer ( ), { } or [ ] is allowed).
  std::vector<std::string> get_array(const std::string& key, const std::vector<std::string>& fallback = {}) const;
  // The block under `key` as a record whose parent is the record that holds it.
  std::shared_ptr<const ConfigRecord> block(const std::string& key) const;

  // Sets a member as an assignment in the file would (a `[...]` block appends).
  void insert(const std::string& key, const std::string& raw_value, size_t offset = std::string::npos);
  // Parses `key=value` lines into this record (command-line style).
  void parse_into(const std::string& text);

  std::vector<std::string> keys() const;                // this record's own keys, in CNTK's (case-insensitive) order
  const std::string& name() const { return name_; }     // path such as "global:Train:SGD"
  std::string raw(const std::string& key) const;        // unresolved value of an own member
  std::string resolve(const std::string& value) const;  // replaces $name$ from this record outwards
  std::shared_ptr<const ConfigRecord> parent() const { return parent_; }
  TextLocation location_of(const std::string& key) const;  // where an own member was assigned

 private:
  struct CaseInsensitiveLess {
    bool operator()(const std::string& a, const std::string& b) const;
  };
  struct Member {
    std::string raw;
    size_t key_offset;    // in text_->text; npos when unknown
    size_t value_offset;  // where `raw` starts in text_->text; npos once the value is no substring of it
  };
  std::map<std::string, Member, CaseInsensitiveLess> members_;
  std::string name_;
  std::shared_ptr<const ConfigRecord> parent_;
  std::shared_ptr<const ConfigText> text_;
  size_t base_ = std::string::npos;  // offset of the parsed string in text_->text

  const ConfigRecord* owner_of(const std::string& key) const;  // nearest record defining key (not "default")
  void parse_members(const std::string& s, size_t base);
  void parse_member(const std::string& s, size_t begin, size_t end, size_t base);
  [[noreturn]] void fail(const std::string& message, size_t offset) const;
  std::string resolve(const std::string& value, int depth) const;
};

// Splits an array value: `0.5:0.2*3:0.1` -> 0.5, 0.2, 0.2, 0.2, 0.1.
std::vector<std::string> split_config_array(const std::string& value, char separator = ':');
// Reads CNTK's number, boolean spellings; ValueError naming `what` otherwise.
double config_to_double(const std::string& value, const std::string& what);
bool config_to_bool(const std::string& value, const std::string& what);

}  // namespace cntk::brainscript
