// How CNTK printed node values (its WriteFormattingOptions and WriteMinibatchWithFormatting): the
// `write` action's output files and the Trace node's log share this one writer.
#pragma once
#include <cstddef>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cntk/value.h"
#include "cntk/variable.h"

namespace cntk::brainscript {

struct WriteFormat {
  bool category = false;  // type 'category': the index of the largest value (or its line of labelMappingFile)
  bool sparse = false;    // type 'sparse': the non-zero values with their coordinates
  bool transpose = true;  // one line per step (false: one line per element, the steps across)
  std::string label_mapping_file;
  std::vector<std::string> labels;  // its lines
  std::string prologue, epilogue, sequence_separator, sequence_prologue, sequence_epilogue = "\n";
  std::string element_separator = " ", sample_separator = "\n";
  std::string precision;  // printf flags, width and precision ("" or ".4"), checked when read
  size_t only_up_to_row = std::numeric_limits<size_t>::max(), only_up_to_t = std::numeric_limits<size_t>::max();

  // The format a `format` block gives: `get(key)` is the value of the block's key as written, or
  // nullopt when the block lacks it (CNTK's key names: type, transpose, labelMappingFile,
  // precisionFormat, prologue, ...). `who` begins error messages: ValueError for a type other
  // than real, category and sparse, or a precisionFormat that is not a printf width/precision;
  // IOError for an unreadable labelMappingFile.
  static WriteFormat read(const std::function<std::optional<std::string>(const std::string&)>& get,
                          const std::string& who);

  // A prologue/epilogue/separator as printed: the escapes \n \r \t \s, %s the node's name, %n the
  // minibatch number.
  static std::string processed(std::string s, const std::string& node, size_t minibatch);

  // Prints one minibatch of node `v`'s values (or gradients): each sequence between the sequence
  // prologue and epilogue, sequences apart by the sequence separator; samples without a sequence
  // axis are sequences of one step each, as CNTK's frame mode. Rows and steps stop at only_up_to_row/only_up_to_t
  // with "...+n".
  void print(std::FILE* f, const Variable& v, const cntk::Value& value, const std::string& name,
             size_t minibatch) const;
};

}  // namespace cntk::brainscript
