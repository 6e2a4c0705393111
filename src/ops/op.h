// The op catalogue's entry type. Each primitive op is one OpDef, a typed schema: its
// CNTK name and PrimitiveOpType number, its inputs (and which are differentiable), its
// attributes (key, type, default), its shape rule, forward kernel and gradient rule,
// the op classes the graph asks about and the CNTK block form serialization writes.
// Families of ops register themselves in one file each (see registry.cpp).
#pragma once
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "cntk/function.h"
#include "cntk/value.h"
#include "core/rng.h"

namespace cntk {

struct OutputInfo {
  NDShape shape;
  DataType dtype = DataType::Float;
  std::vector<Axis> dynamic_axes;
  bool is_sparse = false;
};

// What a shape rule sees: the inputs as variables and the attributes.
struct OpDef;

class InferContext {
 public:
  InferContext(const std::string& op, std::vector<Variable>& inputs, const Dictionary& attrs)
      : op_(op), inputs_(inputs), attrs_(attrs) {}
  const std::string& op() const { return op_; }
  const Dictionary& attrs() const { return attrs_; }
  // Attribute reads through the op's schema: the declared default where the key is absent.
  int64_t attr_int(const std::string& key) const;
  double attr_double(const std::string& key) const;
  bool attr_bool(const std::string& key) const;
  std::string attr_string(const std::string& key) const;
  const DictValue& attr_value(const std::string& key) const;
  size_t num_inputs() const { return inputs_.size(); }
  const Variable& input(size_t i) const { return inputs_[i]; }
  const NDShape& shape(size_t i) const { return inputs_[i].shape(); }
  DataType dtype(size_t i) const { return inputs_[i].dtype(); }
  // A ShapeError naming the op and the shapes of all its inputs.
  [[noreturn]] void fail(const std::string& what) const;
  [[noreturn]] void fail_type(const std::string& what) const;
  void expect_inputs(size_t n) const;
  // Fills the inferred dimensions of input i (a parameter, constant or placeholder).
  void fill_inferred(size_t i, const NDShape& shape);
  // The dynamic axes of the output: the richest input's, checked for compatibility.
  std::vector<Axis> unified_dynamic_axes() const;
  // The common data type of the inputs (float64 wins over float32); TypeError on mixes with float16.
  DataType common_dtype() const;
  // Sole output with the unified dynamic axes and common dtype.
  std::vector<OutputInfo> one(const NDShape& shape) const { return {{shape, common_dtype(), unified_dynamic_axes()}}; }

 private:
  const std::string& op_;
  std::vector<Variable>& inputs_;
  const Dictionary& attrs_;
};

// A value in a backend's own memory layout between steps (the layout protocol:
// kernels/backend.h).
struct LayoutValue;

// Per-function state of random ops, from the op's seed attribute: a sequential
// generator (CNTK's, for the ops that draw CNTK's numbers) and the position in the
// counter-based stream keyed by the seed (core/philox.h; dropout's masks). Calls of
// one function from several threads draw from it in turn (`mu`).
struct RandomState {
  std::mutex mu;
  rng::Engine engine;
  uint64_t seed = 0;
  uint64_t counter = 0;  // the next counter block of the seed's stream
};
// A random op's generator, held for the draws of one step.
class RandomStream {
 public:
  explicit RandomStream(std::shared_ptr<RandomState> s) : state_(std::move(s)), lock_(state_->mu) {}
  rng::Engine& engine() { return state_->engine; }
  uint64_t seed() const { return state_->seed; }
  // Reserves `blocks` counter blocks of the seed's stream; returns the first.
  uint64_t take_blocks(uint64_t blocks) {
    const uint64_t first = state_->counter;
    state_->counter += blocks;
    return first;
  }

 private:
  std::shared_ptr<RandomState> state_;
  std::unique_lock<std::mutex> lock_;
};
// The generator random op f starts from, as CNTK starts it: seeded with its rngSeed
// attribute, rngOffset draws skipped (every random op declares both).
std::shared_ptr<RandomState> initial_random_state(const Function& f);

// What a kernel or gradient rule sees at run time. Every runtime tensor holds its
// dynamic axes first (sequence, then batch: time-major) and its static shape after.
class ComputeContext {
 public:
  Function* fn = nullptr;
  const Dictionary* attrs = nullptr;
  std::vector<NDArrayView> inputs;
  std::vector<NDArrayView> outputs;        // set after forward
  std::vector<NDArrayView> grad_outputs;   // set for backward (undefined = no gradient flows there)
  std::vector<int> in_dyn;                 // number of leading dynamic dims of each input
  std::vector<std::vector<Axis>> in_axes;  // layout order (sequence first, batch last)
  std::vector<Axis> out_axes;              // layout order of the output's dynamic axes
  int out_dyn = 0;
  bool training = false;
  // Tensors a forward kernel keeps for its gradient rule (dropout's mask): filled in
  // forward when training, handed back to backward unchanged.
  std::vector<NDArrayView> saved;
  // Actions to run once the pass is over: right after forward in inference, after
  // backward in training (Assign writes its ref then, as CNTK does). May be null.
  std::vector<std::function<void()>>* deferred = nullptr;
  // Sequence lengths of each input and (in backward) of each output; empty where a
  // tensor has no sequence axis. A forward that creates a sequence axis sets out_lengths;
  // otherwise outputs take the lengths of the first input with a sequence axis.
  std::vector<std::vector<int64_t>> in_lengths, out_lengths;
  // Truncated BPTT: per sequence of the batch, whether it continues a sequence of the
  // previous call (no sequence-begin flag at its first item); null when none does.
  const std::vector<char>* continues = nullptr;
  // Opaque state a forward kernel keeps for its gradient rule (user functions):
  // set in forward when training, handed back to backward unchanged.
  std::shared_ptr<void> state;
  // Backward only: the inputs the pass asks gradients for, and a slot the calls for
  // one step share (rules that compute every input's gradient at once keep them there).
  std::vector<bool> grad_wanted;
  std::shared_ptr<void> scratch;
  // Backend layouts between steps (the layout protocol, kernels/backend.h), for ops with
  // OpDef::backend_layouts only. Per input (and, in backward, per output): the value in a
  // backend layout where the plan keeps it so; inputs[i] (outputs[k]) is then undefined
  // until input(i) (output(k)) makes it plain. In forward, an op may leave output k in a
  // backend layout where layout_output_ok[k] says so: it sets layout_outputs[k] and
  // returns an undefined view in its place.
  std::vector<std::shared_ptr<const LayoutValue>> layout_inputs, layout_outputs;
  std::vector<bool> layout_output_ok;
  // Makes input k (output=false) or output k plain; the pass caches the result.
  std::function<NDArrayView(bool output, size_t k)> make_plain;
  // Backward: per output, its gradient in a backend layout (grad_outputs[k] is then
  // undefined until grad_output(k)); per input, whether its gradient may be returned in
  // one: the rule then sets layout_grad and returns an undefined view.
  std::vector<std::shared_ptr<const LayoutValue>> layout_grad_outputs;
  std::vector<bool> layout_grad_ok;
  std::shared_ptr<const LayoutValue> layout_grad;

  const Dictionary& attr() const { return *attrs; }
  // Attribute reads through the schema of fn's op: the declared default where absent.
  int64_t attr_int(const std::string& key) const;
  double attr_double(const std::string& key) const;
  bool attr_bool(const std::string& key) const;
  std::string attr_string(const std::string& key) const;
  const DictValue& attr_value(const std::string& key) const;
  // Input i as a view with the output's dynamic dims (size 1 where the input lacks
  // one) followed by its static shape left-padded with 1s to `static_rank`.
  NDArrayView aligned(size_t i, size_t static_rank) const;
  // Sums a gradient with the aligned shape of input i back to input i's runtime shape.
  NDArrayView reduce_to_input(size_t i, const NDArrayView& grad) const;
  // The static part of a runtime tensor's shape.
  NDShape static_shape(size_t i) const { return input_shape(i).sub(in_dyn[i]); }
  // The runtime shape of input i, whether it is plain or in a backend layout.
  NDShape input_shape(size_t i) const;
  // Input i (output k) as a plain tensor, made plain on demand where it is in a backend layout.
  const NDArrayView& input(size_t i);
  const NDArrayView& output(size_t k);
  const NDArrayView& grad_output(size_t k);
  const LayoutValue* layout_grad_output(size_t k) const {
    return k < layout_grad_outputs.size() ? layout_grad_outputs[k].get() : nullptr;
  }
  bool may_keep_layout_grad(size_t i) const { return i < layout_grad_ok.size() && layout_grad_ok[i]; }
  const LayoutValue* layout_input(size_t i) const {
    return i < layout_inputs.size() ? layout_inputs[i].get() : nullptr;
  }
  const LayoutValue* layout_output(size_t k) const {
    return k < layout_outputs.size() ? layout_outputs[k].get() : nullptr;
  }
  bool may_keep_layout_output(size_t k) const { return k < layout_output_ok.size() && layout_output_ok[k]; }
  // This function's generator, locked while the stream lives.
  RandomStream random();
};

using InferFn = std::function<std::vector<OutputInfo>(InferContext&)>;
using ForwardFn = std::function<std::vector<NDArrayView>(ComputeContext&)>;
// Gradient of the loss with respect to input i, given ctx.grad_outputs.
using GradFn = std::function<NDArrayView(ComputeContext&, size_t input)>;

enum class Gradient {
  Rule,  // `backward` computes it
  Zero,  // piecewise constant or integer-valued: the gradient is zero by definition
  None,  // no gradient can flow: asking for one is an error
};

// One input of an op. A variadic input stands for itself and every further input.
struct InputSpec {
  std::string name;
  Gradient gradient = Gradient::Rule;
  bool variadic = false;
};

// The types an attribute may hold (DictValue's, as the engine keeps them).
enum class AttrType { Int, Double, Bool, String, Shape, Axis, AxisList, IntList, BoolList, List, Dict };
// How an attribute that holds axes (or per-axis values) is stored: NumPy order (the
// engine's, axis 0 first) or CNTK's column-major order (as CNTK files hold it).
enum class AxisOrder { None, NumPy, Cntk };

// One attribute: its CNTK key, type and default (empty: no default; reading it absent is
// an error, as for a required attribute), and where it holds axes, their order.
struct AttrSpec {
  std::string key;
  AttrType type = AttrType::Int;
  DictValue def = DictValue();
  AxisOrder order = AxisOrder::None;
  std::string cntk_key = {};  // CNTK's key where the engine spells it otherwise (files hold this one)
};

// What the graph asks about an op (bit flags).
enum OpClass : unsigned {
  kElementwiseUnary = 1u << 0,   // a function of each element of its one input
  kElementwiseBinary = 1u << 1,  // a function of each pair of elements of two broadcast inputs
  kDelay = 1u << 2,              // PastValue / FutureValue: reads another time step
  kSameShape = 1u << 3,          // one input; the output has its shape and type
};

namespace onnx_io {
class ExportContext;
}
// How an op is written as ONNX: emits its nodes through the context (src/onnx/export.h).
using OnnxExportFn = std::function<void(onnx_io::ExportContext&)>;

// The composite of primitives CNTK builds for an op that it writes as a block (the engine
// computes it as one primitive): given the function, the block over its inputs.
using BlockFormFn = std::function<FunctionPtr(const Function& f)>;

struct OpDef {
  std::string name;  // CNTK PrimitiveOpType name (an engine op CNTK lacks: its own name)
  int op_type = -1;  // CNTK's PrimitiveOpType number; -1 where CNTK has none
  std::vector<InputSpec> inputs;
  std::vector<AttrSpec> attrs;
  unsigned classes = 0;  // OpClass bits
  // CNTK writes this op as a block of primitives (LeakyReLU, logical ops, ...); the block is
  // also what loading maps back to this op. Null where CNTK writes a primitive.
  BlockFormFn cntk_block;
  // CNTK's files list the two operands the other way round (Times: CNTK's Python layer swaps them).
  bool cntk_swaps_operands = false;
  InferFn infer;
  ForwardFn forward;
  GradFn backward;
  Gradient gradient = Gradient::Rule;
  bool stateful_random = false;  // draws random numbers: gets a RandomState
  // Reads sparse inputs as they are; other ops get sparse inputs densified.
  bool sparse_inputs = false;
  // Gets each input in its own data type; other ops get inputs converted to the output's
  // (LatticeSequenceWithSoftmax: its float32 lattice input carries bytes, which a conversion
  // could alter).
  bool own_input_types = false;
  // How many outputs the op has, from its attributes alone, for ops with more than
  // one: a function built over placeholders (@Function) needs them all before its
  // inputs' types are known. Null means one.
  std::function<size_t(const Dictionary&)> output_count;
  // Reads and writes values in the backend's own layouts (ComputeContext::layout_inputs):
  // the plan keeps a value in such a layout between steps that all have this flag.
  bool backend_layouts = false;
  // Its ONNX form (src/onnx/export.h): null where the op has none, and the writer then
  // raises naming the op. Attributes the form needs are read through this schema.
  OnnxExportFn onnx_export;
  // The ONNX op type where that form is one ONNX op over the op's inputs, without attributes
  // (unary, or binary broadcasting as NumPy): the reader maps that op type back to this op.
  // Empty otherwise.
  std::string onnx_op;

  bool is(OpClass c) const { return (classes & c) != 0; }
  const AttrSpec* attr_spec(const std::string& key) const;  // nullptr when undeclared
  // How gradients reach input i (the last variadic input stands for the rest).
  Gradient input_gradient(size_t i) const;
};

// Attribute reads through an op's schema: the value under `key`, or the declared default
// where absent. Reading a key the op does not declare is a programming error (Error).
const DictValue& schema_attr(const OpDef* op, const std::string& op_name, const Dictionary& attrs,
                             const std::string& key);
// The same for attributes `attrs` of op `op` (helpers that shape rule and kernel share).
int64_t op_attr_int(const std::string& op, const Dictionary& attrs, const std::string& key);
double op_attr_double(const std::string& op, const Dictionary& attrs, const std::string& key);
bool op_attr_bool(const std::string& op, const Dictionary& attrs, const std::string& key);
std::string op_attr_string(const std::string& op, const Dictionary& attrs, const std::string& key);
int64_t schema_attr_int(const Function& f, const std::string& key);
double schema_attr_double(const Function& f, const std::string& key);
bool schema_attr_bool(const Function& f, const std::string& key);
// Checks attributes given to a new primitive: ValueError naming op and key for a key the
// op does not declare, TypeError for a value of the wrong type.
void check_attributes(const OpDef& op, const Dictionary& attrs);
// CNTK's op name of a PrimitiveOpType number ("" when out of range), and the reverse (-1).
const std::string& cntk_op_name(int64_t type);
int64_t cntk_op_number(const std::string& name);

// True while shape inference runs on values derived from a recurrent loop's guessed
// state (a delay whose state is not known yet starts from its scalar initial state):
// parameters must not take their shape from such values.
bool& inferring_from_guessed_state();

// Adds an op to the catalogue. Rejects (Error) a malformed entry: an attribute declared
// twice, with a default of another type or holding axes in no stated order; a differentiable
// input without a gradient rule; a random op without rngSeed and rngOffset.
void register_op(OpDef def);
const OpDef* find_op(const std::string& name);  // nullptr when unknown
// Gives a registered op its ONNX form (OpDef::onnx_export). Each family sets the forms of its
// ops right after registering them, in its own file; Error for an unknown op or a second form.
// `onnx_op` names the ONNX op of a one-op form (OpDef::onnx_op).
void set_onnx_export(const std::string& op, OnnxExportFn fn, const std::string& onnx_op = {});
std::vector<std::string> registered_ops();

// Conversions between the user layout of a Value (batch first; sequences padded,
// with a mask) and the runtime layout (time-major), for variable v.
NDArrayView value_to_runtime(const Variable& v, const Value& val, std::vector<int64_t>& lengths);
Value runtime_to_value(const Variable& v, const NDArrayView& x, const std::vector<int64_t>& lengths);

// Helpers shared by shape rules.
// The rule of ops with one input whose output has the input's shape and type.
std::vector<OutputInfo> infer_same_shape(InferContext& ctx);
// NumPy-style broadcast of static shapes; fails through ctx naming the op.
NDShape broadcast_shapes(const InferContext& ctx, const std::vector<NDShape>& shapes);
// The broadcast of all inputs' static shapes; inferred dimensions of parameters,
// constants and placeholders are filled in from it, as CNTK's elementwise ops do.
NDShape broadcast_inputs(InferContext& ctx);

}  // namespace cntk
