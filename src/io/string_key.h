// Sequence keys given as strings (HTK utterance names in SCP and MLF files).
//
// The Deserializer interface joins deserializers by 64-bit keys; speech data names its utterances by
// strings. Every deserializer that reads such names maps them with the same function (64-bit FNV-1a),
// so that the features of an SCP file and the labels of an MLF file meet under one key. A deserializer
// checks that two different names of its own never map to the same key (and says which two if they do).
#pragma once
#include <cstdint>
#include <string_view>

namespace cntk::io {

inline uint64_t string_key_id(std::string_view name) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace cntk::io
