// Model files: CNTK's v2 format (a protobuf Dictionary, see src/serialize/cntk_v2.proto)
// for Dictionaries and Functions, read and written the way CNTK 2.x does, so that
// models move both ways between CNTK and OpenCNTK.
//
// Shapes: the engine keeps NumPy order; the files keep CNTK's order (fastest axis
// first). Every NDShape and NDArrayView is reversed on the way in and out; tensor
// data needs no reordering (column-major with reversed dims is row-major).
#pragma once
#include <string>

#include "cntk/dictionary.h"
#include "cntk/function.h"

namespace cntk {

// Dictionaries <-> bytes / files. `source` names the data in error messages (a file
// name, or "<bytes>"). Malformed input raises IOError naming the source and the fault.
std::string dictionary_to_bytes(const Dictionary& d);
Dictionary dictionary_from_bytes(const std::string& bytes, const std::string& source = "<bytes>");
// Writes atomically: a temporary file beside `path`, then a rename.
void save_dictionary(const Dictionary& d, const std::string& path);
Dictionary load_dictionary(const std::string& path);
// One DictionaryValue message (CNTK's DictionaryValue::Save / Load write one per file).
std::string dictionary_value_to_bytes(const DictValue& v);
DictValue dictionary_value_from_bytes(const std::string& bytes, const std::string& source = "<bytes>");
void save_dictionary_value(const DictValue& v, const std::string& path);
DictValue load_dictionary_value(const std::string& path);

// Functions <-> CNTK's serialized function Dictionary (CompositeFunction layout:
// inputs, primitive_functions, root, uid, name, version, type).
Dictionary function_to_dictionary(const FunctionPtr& f);
FunctionPtr function_from_dictionary(const Dictionary& d, const std::string& source = "<dictionary>");

// Functions <-> model files and bytes.
std::string save_function_to_bytes(const FunctionPtr& f);
void save_function(const FunctionPtr& f, const std::string& path);
FunctionPtr load_function(const std::string& path);
FunctionPtr load_function_from_bytes(const std::string& bytes, const std::string& source = "<bytes>");

// Function::Restore: the values of f's parameters and constants (in place) from a model file of
// the same graph, matched by uid, or else by their order in the graph.
void restore_function_values(const FunctionPtr& f, const std::string& path);

// Writes `bytes` to `path` atomically (temporary file in the same folder, then rename).
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace cntk

namespace cntk {

class Trainer;

// Trainer checkpoints, laid out as CNTK's Trainer::SaveCheckpoint does: the training
// graph (loss, metric and model outputs combined) as a model file at `path`, and the
// trainer state at `path + ".ckp"`: {Version, Learners (each learner's checkpoint),
// ExternalState (the caller's dictionary), DistributedState}, plus the generator state of
// every random op (dropout, random sampling) under "RandomStates" so that training resumes
// with the same random numbers. Each file is written to a temporary name and renamed.
void save_trainer_checkpoint(const Trainer& trainer, const std::string& path, const Dictionary& external_state = {});
// Restores parameter values, learner states and random states; returns the external state.
Dictionary restore_trainer_checkpoint(Trainer& trainer, const std::string& path);

}  // namespace cntk
