// BrainScript evaluation: expression trees (parser.h) -> values, network nodes built with the
// engine's graph API.
//
// Values are numbers, strings, booleans, records (members evaluated lazily, once, in the
// record's scope; lookups go outwards through enclosing records and lambda scopes), arrays
// (`a:b:c` from 0, `array[a..b](i => e)` from a, items lazy), lambdas (closures; named
// parameters with defaults), nodes (a cntk::Variable) and built-in functions. Infix operators
// on nodes build graph ops: `A * B` is CNTK's Times (a matrix product in BrainScript's
// column-major dimension order), `.*` ElementTimes, `+`/`-` with broadcasting.
//
// Dimensions: BrainScript lists a tensor's dimensions first-fastest (column-major, CNTK's
// native order); the engine stores shapes in NumPy order, so a BrainScript (d0, d1) tensor is an
// engine shape (d1, d0).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "brainscript/parser.h"
#include "cntk/function.h"

namespace cntk::brainscript {

struct Value;
using ValuePtr = std::shared_ptr<const Value>;
struct Record;
using RecordPtr = std::shared_ptr<Record>;

// A network as `new ComputationNetwork [ ... ]` describes it: its nodes by name and its roles.
// A statistic of an input that CNTK computes over the training data before training (its
// PreComputedNodes: Mean, InvStdDev): `value` is a Constant that the train action fills.
struct PrecomputedStatistic {
  enum class Kind { Mean, InvStdDev } kind;
  Variable input;
  Variable value;
};

struct Network {
  FunctionPtr model;                      // all role nodes combined
  std::map<std::string, Variable> nodes;  // named nodes of the description (member paths)
  std::vector<Variable> features, labels, criteria, evaluations, outputs;
  std::vector<PrecomputedStatistic> statistics;
};

struct EvaluationOptions {
  DataType dtype = DataType::Float;
  std::vector<std::string> include_paths;
  std::map<std::string, Variable> given_nodes;  // global names bound to nodes made elsewhere
};

// Evaluates `members` (a "[]" tree, e.g. from parse_record) and returns the value of member
// `name`. Errors are ConfigErrors naming the source place of the failing expression.
ValuePtr evaluate_member(const ExpressionPtr& members, const std::string& name, const EvaluationOptions& options = {});

// The nodes member `name` holds, by member path: the member's node (`name`), or every node of
// a record at any depth (`name.a.b`); none for a number, string or boolean.
std::map<std::string, Variable> evaluate_member_nodes(const ExpressionPtr& members, const std::string& name,
                                                      const EvaluationOptions& options = {});

// What the BrainScriptNetworkBuilder key of a command does: `source` is a `[ ... ]`/`{ ... }`
// record of network members (or a `( ... )` expression yielding a network), evaluated with the
// BrainScript library (core_library.bs) in scope.
Network build_network(const std::string& source, const EvaluationOptions& options = {});

// Sets the rate of every Dropout node of `model` (CNTK's SGD dropoutRate, per epoch).
void set_dropout_rate(const FunctionPtr& model, double rate);

// Accessors for values (ValueError naming `what` when the kind differs).
double as_number(const ValuePtr& v, const std::string& what);
const std::string& as_string(const ValuePtr& v, const std::string& what);
Variable as_node(const ValuePtr& v, const std::string& what);
std::shared_ptr<const Network> as_network(const ValuePtr& v, const std::string& what);

// The BrainScript library's source (what `include 'cntk.core.bs'` reads).
const std::string& core_library_source();

}  // namespace cntk::brainscript
