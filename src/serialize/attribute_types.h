// Which integer and floating-point type CNTK stores under an attribute key. The engine
// keeps one integer and one floating-point type in a Dictionary; CNTK reads its values
// back with exact types (Value<int> vs Value<size_t>), so writers must match.
#pragma once
#include <cstdint>
#include <string>

namespace cntk {

bool is_int_typed_key(const std::string& key);
bool is_float_typed_key(const std::string& key);
// CNTK's PrimitiveOpType number of an op name (-1 if CNTK has none).
int64_t cntk_op_type(const std::string& name);
// Reads a whole file; IOError naming the file when it cannot.
std::string read_file_bytes(const std::string& path);

}  // namespace cntk
