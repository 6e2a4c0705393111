#include "convert.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace cntk::bindings {

NDShape to_shape(const nb::handle& h) {
  std::vector<int64_t> d;
  for (auto item : h) d.push_back(nb::cast<int64_t>(item));
  return NDShape(d);
}

nb::tuple from_shape(const NDShape& s) {
  nb::list l;
  for (auto d : s.dims()) l.append(d);
  return nb::tuple(l);
}

DictValue to_dict_value(const nb::handle& h);

Dictionary to_dictionary(const nb::handle& h) {
  Dictionary d;
  for (auto [k, v] : nb::cast<nb::dict>(h)) d[nb::cast<std::string>(k)] = to_dict_value(v);
  return d;
}

DictValue to_dict_value(const nb::handle& h) {
  if (h.is_none()) return DictValue();
  if (nb::isinstance<nb::bool_>(h)) return DictValue(nb::cast<bool>(h));
  if (nb::isinstance<nb::int_>(h)) return DictValue(nb::cast<int64_t>(h));
  if (nb::isinstance<nb::float_>(h)) return DictValue(nb::cast<double>(h));
  if (nb::isinstance<nb::str>(h)) return DictValue(nb::cast<std::string>(h));
  if (nb::isinstance<Axis>(h)) return DictValue(nb::cast<Axis>(h));
  if (nb::isinstance<NDArrayView>(h)) return DictValue(nb::cast<NDArrayView>(h));
  if (nb::isinstance<nb::dict>(h)) return DictValue(to_dictionary(h));
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    DictValue::List l;
    for (auto item : h) l.push_back(to_dict_value(item));
    return DictValue(std::move(l));
  }
  // A DictionaryValue wrapper of the package stands for the value it holds.
  if (nb::hasattr(h, "_cntk_dict_value")) return to_dict_value(h.attr("_cntk_dict_value"));
  // NumPy scalars and the like.
  if (nb::hasattr(h, "__index__")) return DictValue(nb::cast<int64_t>(h.attr("__index__")()));
  if (nb::hasattr(h, "__float__")) return DictValue(nb::cast<double>(h.attr("__float__")()));
  throw TypeError("cannot store a value of type " + nb::cast<std::string>(nb::str(h.type())) + " as an attribute");
}

nb::object from_dict_value(const DictValue& v);

nb::dict from_dictionary(const Dictionary& d) {
  nb::dict out;
  for (auto& [k, v] : d) out[k.c_str()] = from_dict_value(v);
  return out;
}

nb::object from_dict_value(const DictValue& v) {
  const auto& s = v.storage();
  if (std::holds_alternative<std::monostate>(s)) return nb::none();
  if (auto p = std::get_if<bool>(&s)) return nb::bool_(*p);
  if (auto p = std::get_if<int64_t>(&s)) return nb::int_(*p);
  if (auto p = std::get_if<double>(&s)) return nb::float_(*p);
  if (auto p = std::get_if<std::string>(&s)) return nb::str(p->c_str());
  if (auto p = std::get_if<NDShape>(&s)) return from_shape(*p);
  if (auto p = std::get_if<Axis>(&s)) return nb::cast(*p);
  if (auto p = std::get_if<NDArrayView>(&s)) return nb::cast(*p);
  if (auto p = std::get_if<std::shared_ptr<Dictionary>>(&s)) return from_dictionary(**p);
  nb::list l;
  for (auto& item : v.as_list()) l.append(from_dict_value(item));
  return l;
}

}  // namespace cntk::bindings
