#include "cntk/dictionary.h"

namespace cntk {

DictValue::DictValue(Dictionary v) : v_(std::make_shared<Dictionary>(std::move(v))) {}

namespace {
[[noreturn]] void bad(const char* want) { throw TypeError(std::string("Dictionary value is not ") + want); }
}  // namespace

bool DictValue::as_bool() const {
  if (auto p = std::get_if<bool>(&v_)) return *p;
  if (auto p = std::get_if<int64_t>(&v_)) return *p != 0;
  bad("a bool");
}
int64_t DictValue::as_int() const {
  if (auto p = std::get_if<int64_t>(&v_)) return *p;
  if (auto p = std::get_if<bool>(&v_)) return *p;
  bad("an integer");
}
double DictValue::as_double() const {
  if (auto p = std::get_if<double>(&v_)) return *p;
  if (auto p = std::get_if<int64_t>(&v_)) return double(*p);
  bad("a number");
}
const std::string& DictValue::as_string() const {
  if (auto p = std::get_if<std::string>(&v_)) return *p;
  bad("a string");
}
const NDShape& DictValue::as_shape() const {
  if (auto p = std::get_if<NDShape>(&v_)) return *p;
  bad("a shape");
}
const Axis& DictValue::as_axis() const {
  if (auto p = std::get_if<Axis>(&v_)) return *p;
  bad("an Axis");
}
const DictValue::List& DictValue::as_list() const {
  if (auto p = std::get_if<std::shared_ptr<List>>(&v_)) return **p;
  bad("a list");
}
const Dictionary& DictValue::as_dict() const {
  if (auto p = std::get_if<std::shared_ptr<Dictionary>>(&v_)) return **p;
  bad("a Dictionary");
}
const NDArrayView& DictValue::as_array() const {
  if (auto p = std::get_if<NDArrayView>(&v_)) return *p;
  bad("an NDArrayView");
}
std::vector<int64_t> DictValue::as_int_list() const {
  if (auto p = std::get_if<NDShape>(&v_)) return p->dims();
  if (auto p = std::get_if<int64_t>(&v_)) return {*p};
  std::vector<int64_t> out;
  for (auto& v : as_list()) out.push_back(v.as_int());
  return out;
}
std::vector<Axis> DictValue::as_axis_list() const {
  if (auto p = std::get_if<Axis>(&v_)) return {*p};
  std::vector<Axis> out;
  for (auto& v : as_list()) out.push_back(v.as_axis());
  return out;
}

int64_t attr_int(const Dictionary& d, const std::string& key, int64_t def) {
  auto it = d.find(key);
  return it == d.end() || it->second.empty() ? def : it->second.as_int();
}
double attr_double(const Dictionary& d, const std::string& key, double def) {
  auto it = d.find(key);
  return it == d.end() || it->second.empty() ? def : it->second.as_double();
}
bool attr_bool(const Dictionary& d, const std::string& key, bool def) {
  auto it = d.find(key);
  return it == d.end() || it->second.empty() ? def : it->second.as_bool();
}
std::string attr_string(const Dictionary& d, const std::string& key, const std::string& def) {
  auto it = d.find(key);
  return it == d.end() || it->second.empty() ? def : it->second.as_string();
}

}  // namespace cntk
