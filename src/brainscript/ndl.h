// CNTK's Network Description Language (the NDLNetworkBuilder block), written out as a
// BrainScript description and built by the BrainScript evaluator, so that NDL's functions are
// the evaluator's primitives (one node table).
//
// NDL is what CNTK's configs used before BrainScript: `run=section` names the block of
// statements to build, `load=a:b` blocks of macros, `ndlMacros=f1+f2` and
// `networkDescription=f.ndl` files holding either. A statement is `name = Function(args,
// key=value)`, `name = value` or a role list (`FeatureNodes=(a, b)`, LabelNodes,
// CriterionNodes/CriteriaNodes, EvalNodes, OutputNodes); `tag=feature|label|criterion|eval|output`
// on a call puts its node in that role. A macro is `M(a, b) { ... }` (also `[ ... ]` and `= [ ... ]`
// bodies) whose value is its member named M or else its last statement, or `M(a, b) = expr`.
// Names are case-insensitive; `x.y.z` reaches into macro instances, whose nodes are named by
// their path (`L1.BFF.FF.P`), as CNTK named them.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "brainscript/config.h"
#include "brainscript/evaluator.h"

namespace cntk::brainscript {

// The BrainScript record (text) for the NDLNetworkBuilder visible from `command`, and for each
// of its lines the NDL place it was written from (invalid where none). Errors are ConfigErrors
// ("NDL error") naming the NDL file, line and column. Reads text only (ndl.cpp); building the
// network is ndl_network.cpp's.
struct NdlTranslation {
  std::string source;
  std::vector<TextLocation> origins;
};
NdlTranslation translate_ndl(const ConfigRecord& command);
std::string ndl_network_source(const ConfigRecord& command);

// Builds the network of the NDLNetworkBuilder visible from `command` (precision from the
// config); evaluation errors name the NDL line they come from.
Network build_ndl_network(const ConfigRecord& command);

// MEL's in-line NDL: statements of a MEL script (`name = value`, `name = Function(...)`), read
// with the macros of the ndlMacros `config` sees, where the names in `given` (a model's nodes,
// dotted names included, any case) are nodes made elsewhere. The i-th given name is bound to
// the BrainScript name inline_given_name(i).
struct InlineNdlStatement {
  std::string text;
  size_t line = 0;  // 0-based, in the script
};
NdlTranslation translate_inline_ndl(const std::shared_ptr<const ConfigRecord>& config,
                                    const std::shared_ptr<const SourceFile>& script,
                                    const std::vector<InlineNdlStatement>& statements,
                                    const std::vector<std::string>& given);
std::string inline_given_name(size_t i);

// The nodes the last of `statements` makes, by name (a macro instance's nodes by their paths,
// `L2.W`); none when it is a number or a string. `given` as for translate_inline_ndl,
// with its nodes.
std::map<std::string, Variable> build_inline_ndl(const std::shared_ptr<const ConfigRecord>& config,
                                                 const std::shared_ptr<const SourceFile>& script,
                                                 const std::vector<InlineNdlStatement>& statements,
                                                 const std::map<std::string, Variable>& given);

}  // namespace cntk::brainscript
