// Dictionary: CNTK's string-keyed bag of typed values. Op attributes, initializer
// specs and (later) serialized state are Dictionaries, with CNTK's key names.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "cntk/axis.h"
#include "cntk/common.h"
#include "cntk/tensor.h"

namespace cntk {

class DictValue;
using Dictionary = std::map<std::string, DictValue>;

class DictValue {
 public:
  using List = std::vector<DictValue>;
  using Storage = std::variant<std::monostate, bool, int64_t, double, std::string, NDShape, Axis, std::shared_ptr<List>,
                               std::shared_ptr<Dictionary>, NDArrayView>;

  DictValue() = default;
  DictValue(bool v) : v_(v) {}
  DictValue(int v) : v_(int64_t(v)) {}
  DictValue(int64_t v) : v_(v) {}
  DictValue(size_t v) : v_(int64_t(v)) {}
  DictValue(double v) : v_(v) {}
  DictValue(const char* v) : v_(std::string(v)) {}
  DictValue(std::string v) : v_(std::move(v)) {}
  DictValue(NDShape v) : v_(std::move(v)) {}
  DictValue(Axis v) : v_(std::move(v)) {}
  DictValue(List v) : v_(std::make_shared<List>(std::move(v))) {}
  DictValue(Dictionary v);
  DictValue(NDArrayView v) : v_(std::move(v)) {}

  bool empty() const { return std::holds_alternative<std::monostate>(v_); }
  template <class T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;  // accepts ints too
  const std::string& as_string() const;
  const NDShape& as_shape() const;
  const Axis& as_axis() const;
  const List& as_list() const;
  const Dictionary& as_dict() const;
  const NDArrayView& as_array() const;
  std::vector<int64_t> as_int_list() const;  // a List of ints, or an NDShape
  std::vector<Axis> as_axis_list() const;    // a List of Axis, or one Axis
  const Storage& storage() const { return v_; }

 private:
  Storage v_;
};

// Typed lookup with a default: attr_int(d, "axis", 0).
int64_t attr_int(const Dictionary& d, const std::string& key, int64_t def);
double attr_double(const Dictionary& d, const std::string& key, double def);
bool attr_bool(const Dictionary& d, const std::string& key, bool def);
std::string attr_string(const Dictionary& d, const std::string& key, const std::string& def);

}  // namespace cntk
