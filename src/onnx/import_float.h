// The rounding of values to narrower float formats (import_float.cpp), shared with Cast.
#pragma once
#include <optional>

#include "onnx/import.h"

namespace cntk::onnx_io {

// x cast to the ONNX float type `to` where its values are a subset of float32 (bfloat16, the
// float8 formats): x rounded to that type's values, ties to even, held as float32 (float64
// for a float64 x). Overflow: the largest value where `saturate`, else inf (or NaN where the
// type has no inf), as ONNX's Cast. nullopt for other types.
std::optional<Variable> cast_to_narrow_float(ImportContext& c, const Variable& x, int32_t to, bool saturate);

}  // namespace cntk::onnx_io
