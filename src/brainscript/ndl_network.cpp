// NDLNetworkBuilder's network (ndl.h): the NDL written out as BrainScript (ndl.cpp) and built by
// the BrainScript evaluator. Apart from ndl.cpp so that reading NDL text needs no engine.
#include "brainscript/ndl.h"

namespace cntk::brainscript {

namespace {

// Evaluates the generated description; an error in it names the NDL line it was written from.
template <typename Build>
auto at_ndl_lines(const NdlTranslation& t, Build build) {
  try {
    return build();
  } catch (const ConfigError& e) {
    const TextLocation& at = e.location;
    if (at.valid() && at.source->path == "BrainScriptNetworkBuilder" && at.line < t.origins.size() &&
        t.origins[at.line].valid())
      throw ConfigError("NDL", e.message, t.origins[at.line]);
    throw;
  }
}

DataType precision(const ConfigRecord& config) {
  return config.get("precision", "float") == "double" ? DataType::Double : DataType::Float;
}

}  // namespace

Network build_ndl_network(const ConfigRecord& command) {
  const NdlTranslation t = translate_ndl(command);
  EvaluationOptions options;
  options.dtype = precision(command);
  return at_ndl_lines(t, [&] { return build_network(t.source, options); });
}

std::map<std::string, Variable> build_inline_ndl(const std::shared_ptr<const ConfigRecord>& config,
                                                 const std::shared_ptr<const SourceFile>& script,
                                                 const std::vector<InlineNdlStatement>& statements,
                                                 const std::map<std::string, Variable>& given) {
  std::vector<std::string> names;
  EvaluationOptions options;
  options.dtype = precision(*config);
  for (const auto& [name, node] : given) {
    options.given_nodes[inline_given_name(names.size())] = node;
    names.push_back(name);
  }
  const NdlTranslation t = translate_inline_ndl(config, script, statements, names);
  // The statement's name: what precedes its '='.
  const std::string& last = statements.back().text;
  const size_t eq = last.find('=');
  std::string name = last.substr(0, eq);
  name.erase(0, name.find_first_not_of(" \t"));
  name.erase(name.find_last_not_of(" \t") + 1);
  // The record's members, its brackets blanked so that lines keep their numbers.
  std::string members = t.source;
  members[members.find('[')] = ' ';
  members[members.rfind(']')] = ' ';
  return at_ndl_lines(
      t, [&] { return evaluate_member_nodes(parse_record(members, "BrainScriptNetworkBuilder"), name, options); });
}

}  // namespace cntk::brainscript
