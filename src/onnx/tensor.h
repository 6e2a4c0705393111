// ONNX TensorProto <-> NDArrayView: element types, raw and typed data fields, external data.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cntk/tensor.h"
#include "onnx.pb.h"

namespace cntk::onnx_io {

// A float value as an integer (truncated) where it is in int64's range; else 0. Callers
// compare the result back with the value, so NaN and infinities are refused, not converted.
inline int64_t float_to_i64(double v) { return std::isfinite(v) && std::abs(v) <= 9.2e18 ? int64_t(v) : 0; }

// ONNX element types by kind, for every rule alike. Floating point: float16/32/64, bfloat16,
// the float8 formats and float4e2m1. Integers: the signed and unsigned 2- to 64-bit types.
// bool is neither (nor are strings and complex types).
bool is_float_type(int32_t onnx_type);
bool is_integer_type(int32_t onnx_type);

// The engine type an ONNX element type is computed in: float32, float64 and float16 as they
// are; integers and booleans as float32 (as CNTK computed them). ValueError for strings and
// the types the engine cannot hold (complex, float8, 4-bit), naming `what`.
DataType engine_type_of(int32_t onnx_type, const std::string& what);

// A tensor's value in the engine type above. `base_dir` resolves external data.
NDArrayView tensor_to_view(const ::onnx::TensorProto& t, const std::string& base_dir, const std::string& what);
// A tensor's values as integers (shape, axes and index inputs); ValueError for a non-integer value.
std::vector<int64_t> tensor_to_i64(const ::onnx::TensorProto& t, const std::string& base_dir, const std::string& what);

// Fills t (name left alone) with v's shape, element type and data (raw_data).
void view_to_tensor(const NDArrayView& v, ::onnx::TensorProto& t);
void i64_to_tensor(const std::vector<int64_t>& values, const std::vector<int64_t>& dims, ::onnx::TensorProto& t);

// Moves t's data to `location` (relative to base_dir) as ONNX external data.
void move_to_external(::onnx::TensorProto& t, const std::string& base_dir, const std::string& location);

}  // namespace cntk::onnx_io
