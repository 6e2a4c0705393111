// What the BrainScript tests share: evaluating a record's member as a number or a string, a
// view's values, and one sequence as a Value.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "brainscript/evaluator.h"
#include "cntk/value.h"

namespace cntk::brainscript::test_util {

inline double num(const std::string& source, const std::string& member = "x") {
  return as_number(evaluate_member(parse_record(source, "test.bs"), member), member);
}

inline std::string str(const std::string& source, const std::string& member = "x") {
  return as_string(evaluate_member(parse_record(source, "test.bs"), member), member);
}

inline std::vector<float> values_of(const NDArrayView& v) {
  NDArrayView c = v.contiguous();
  return std::vector<float>(c.data<float>(), c.data<float>() + c.numel());
}

// One sequence of `values.size() / dim` steps of `dim` values: a [1, steps, dim] Value.
inline cntk::Value one_sequence(const std::vector<float>& values, size_t dim) {
  NDArrayView v(DataType::Float, NDShape{int64_t(values.size() / dim), int64_t(dim)});
  std::copy(values.begin(), values.end(), v.data<float>());
  return cntk::Value::from_sequences({v});
}

}  // namespace cntk::brainscript::test_util
