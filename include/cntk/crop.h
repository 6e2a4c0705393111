// Automatic crop offsets: how far `input`'s spatial grid is shifted against `referent`'s,
// found by walking the graph back to their common ancestor (CNTK's ComputeCropOffsets for
// crop_automatic). Each op on a path maps its input pixels to its output pixels by a scale
// and shift per spatial axis (the last two axes): elementwise ops and batch normalization
// by the identity, Crop by its offset, convolution (also transposed), pooling and
// unpooling by their kernel, stride and padding. Blocks are looked through. Any other op on
// a path, differing transforms along two paths, differing scales, or offsets that are
// negative or not whole pixels are a ValueError.
#pragma once
#include <optional>
#include <string>
#include <utility>

#include "cntk/function.h"

namespace cntk {

struct CropOffsets {
  int64_t x = 0;  // along the last axis
  int64_t y = 0;  // along the one before
};

// `ancestors` (crop_automatic_with_ancestors): an ancestor of `input` and one of
// `referent` that count as the same node (an image and its label image). `op` names the
// caller in error messages.
CropOffsets automatic_crop_offsets(const Variable& input, const Variable& referent,
                                   const std::optional<std::pair<Variable, Variable>>& ancestors = std::nullopt,
                                   const std::string& op = "crop_automatic");

namespace ops {
// Crop (CNTK's op) of `input` to `referent`'s spatial size at the automatic offsets; with
// ancestors, CNTK's four-input form.
FunctionPtr crop_automatic(const Variable& input, const Variable& referent, const std::string& name = "");
FunctionPtr crop_automatic_with_ancestors(const Variable& input, const Variable& referent,
                                          const Variable& ancestor_input, const Variable& ancestor_referent,
                                          const std::string& name = "");
}  // namespace ops

}  // namespace cntk
