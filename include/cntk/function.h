// Function: a node of the graph that computes. A primitive function applies one
// catalogue op; a composite function names the graph below a root; a block
// function wraps a composite as one op of its own.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cntk/variable.h"

namespace cntk {

struct OpDef;
class UserFunctionBackend;

enum class FunctionKind { Primitive, Composite, Block };
enum class CloneMethod { Clone = 0, Share = 1, Freeze = 2 };

// Recurrent loops: the edge that closes a loop (a delay reading the function that
// reads it) holds its producer without owning it, so a graph with loops is no
// shared_ptr cycle. A LoopAnchor owns those producers instead; the functions of the
// loop know it weakly, and every function or composite made on top of a loop
// function owns it, so the loop lives exactly as long as something uses it.
struct LoopAnchor {
  std::vector<FunctionPtr> closers;  // the producers that loop-closing edges do not own
};

// How many Function objects exist (tests check that graphs with loops are freed).
size_t live_functions();

// Threads (docs/architecture.md, "Threads"): different functions may be built, run and
// trained on different threads freely, as long as they share no parameters. One
// function may be evaluated (cntk::forward in inference) from several threads at once:
// its per-function state (op_state, plan_cache) is reached through atomic loads and
// made once. Editing a graph (replace_placeholders, set_name, attributes, parameter
// values) while another thread runs it is not supported and is not detected.
class Function : public std::enable_shared_from_this<Function> {
 public:
  // A primitive function: runs shape inference immediately (errors surface here).
  static FunctionPtr primitive(const std::string& op_name, std::vector<Variable> inputs, Dictionary attributes,
                               const std::string& name = "");
  static FunctionPtr composite(FunctionPtr root, const std::string& name = "");
  static FunctionPtr combine(const std::vector<Variable>& outputs, const std::string& name = "");
  // Wraps `composite` as a block; `mapping` pairs each placeholder of the composite
  // with the variable that feeds it from outside.
  static FunctionPtr block(FunctionPtr composite, const std::vector<std::pair<Variable, Variable>>& mapping,
                           const std::string& op_name, const std::string& instance_name);
  // A user-defined function (see cntk/user_function.h): a primitive whose op name,
  // shape rule and kernels come from `backend`.
  static FunctionPtr user_defined(std::shared_ptr<UserFunctionBackend> backend, std::vector<Variable> inputs,
                                  Dictionary attributes, const std::string& name = "");

  FunctionKind kind() const { return kind_; }
  bool is_primitive() const { return kind_ == FunctionKind::Primitive; }
  bool is_composite() const { return kind_ == FunctionKind::Composite; }
  bool is_block() const { return kind_ == FunctionKind::Block; }
  const std::string& op_name() const { return op_name_; }
  const std::string& name() const { return name_; }
  // Names a function. As CNTK documents, a function that already has a name cannot
  // be renamed (ValueError) unless allow_renaming_functions() was called.
  void set_name(const std::string& n);
  static void allow_renaming_functions();
  static bool renaming_functions_allowed();
  const std::string& uid() const { return uid_; }
  const Dictionary& attributes() const { return attributes_; }
  Dictionary& mutable_attributes() { return attributes_; }
  // User-defined key/value pairs kept with the function (CNTK's custom_attributes).
  Dictionary& custom_attributes() { return custom_attributes_; }
  const OpDef* op() const { return op_; }
  // The implementation of a user-defined function; null for every other function.
  const std::shared_ptr<UserFunctionBackend>& user_backend() const { return user_; }

  // The function this one computes through: self for primitives and blocks, the root for composites.
  FunctionPtr root_function();
  // Direct inputs (primitive, block) or the leaves of the graph (composite).
  std::vector<Variable> inputs();
  std::vector<Variable> outputs();
  Variable output();  // the single output; ValueError if there are several
  // Leaves of the graph by kind, in depth-first order.
  std::vector<Variable> arguments();
  std::vector<Variable> parameters();
  std::vector<Variable> constants();
  std::vector<Variable> placeholders();
  // Block specifics.
  FunctionPtr block_root() const;
  const std::vector<std::pair<Variable, Variable>>& block_arguments_mapping() const { return block_map_; }
  // A block's inputs are its inner parameters and constants, then its mapped arguments.
  size_t block_leaf_count() const { return inputs_.size() - block_map_.size(); }

  // Every primitive/block function of the graph, inputs before users.
  std::vector<FunctionPtr> topological_order();
  std::vector<FunctionPtr> find_all_with_name(const std::string& name, bool nested = false);

  // Rebinds placeholders to variables everywhere in the graph; shapes are re-inferred.
  FunctionPtr replace_placeholders(const std::unordered_map<VariableImpl*, Variable>& map);
  FunctionPtr clone(CloneMethod method, const std::unordered_map<VariableImpl*, Variable>& substitutions);

  // Internal: graph edges.
  const std::vector<Variable>& direct_inputs() const { return inputs_; }
  std::vector<Variable>& mutable_direct_inputs() { return inputs_; }
  const std::vector<std::shared_ptr<VariableImpl>>& output_impls() const { return outputs_; }
  // Re-runs shape inference (after placeholders were bound).
  void infer_outputs();
  // Mutable per-function state kept by some ops (random number generator position, delay
  // carries, cached weights). Loads and stores are atomic: several threads may run one
  // function at once, and what a caller loaded stays alive while it holds it.
  std::shared_ptr<void> op_state() const { return op_state_.load(); }
  void set_op_state(std::shared_ptr<void> state) { op_state_.store(std::move(state)); }
  // The state as a T, made by `make` where there is none yet (one maker wins a race).
  template <class T, class Make>
  std::shared_ptr<T> op_state_or(Make&& make) {
    return std::static_pointer_cast<T>(load_or_make(op_state_, [&] { return std::shared_ptr<void>(make()); }));
  }
  // Compiled plans for this function (owned by exec/plan.cpp), made on first use.
  template <class T>
  std::shared_ptr<T> plan_cache() {
    return std::static_pointer_cast<T>(
        load_or_make(plan_cache_, [] { return std::shared_ptr<void>(std::make_shared<T>()); }));
  }
  // The loop this function is part of, if any (see LoopAnchor).
  std::shared_ptr<LoopAnchor> loop_anchor() const { return loop_anchor_.lock(); }

  ~Function();

 private:
  Function();
  Variable output_handle(size_t i);
  // Registers this function with the producers of its inputs and owns their loop
  // anchors (see LoopAnchor).
  void link_inputs();
  void link_input(const Variable& in);
  // Makes the edges that close loops in the graph below this function non-owning.
  void own_loops_acyclically();
  std::vector<Variable> leaves(VariableKind kind);
  std::vector<Variable> leaves_in_order();

  FunctionKind kind_ = FunctionKind::Primitive;
  const OpDef* op_ = nullptr;
  std::string op_name_, name_, uid_;
  std::vector<Variable> inputs_;
  std::vector<std::shared_ptr<VariableImpl>> outputs_;
  Dictionary attributes_;
  Dictionary custom_attributes_;
  FunctionPtr root_;  // composite: root; block: the inner composite
  std::vector<std::pair<Variable, Variable>> block_map_;
  template <class Make>
  static std::shared_ptr<void> load_or_make(std::atomic<std::shared_ptr<void>>& slot, Make&& make) {
    std::shared_ptr<void> have = slot.load();
    if (have) return have;
    std::shared_ptr<void> made = make();
    return slot.compare_exchange_strong(have, made) ? made : have;  // on failure `have` is the winner's
  }
  std::atomic<std::shared_ptr<void>> op_state_;
  std::atomic<std::shared_ptr<void>> plan_cache_;
  std::shared_ptr<UserFunctionBackend> user_;
  bool outputs_alias_inputs_ = false;                      // Combine: its outputs are its inputs
  std::weak_ptr<LoopAnchor> loop_anchor_;                  // set on the functions of a loop
  std::vector<std::shared_ptr<LoopAnchor>> held_anchors_;  // loops this function is built on
  std::vector<std::weak_ptr<Function>> consumers_;         // functions reading this one's outputs
  friend class Variable;
};

}  // namespace cntk
