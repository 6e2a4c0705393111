// NDLNetworkBuilder's network (ndl.h): the NDL written out as BrainScript (ndl.cpp) and built by
// the BrainScript evaluator. Apart from ndl.cpp so that reading NDL text needs no engine.
#include "brainscript/ndl.h"

namespace cntk::brainscript {

Network build_ndl_network(const ConfigRecord& command) {
  const NdlTranslation t = translate_ndl(command);
  EvaluationOptions options;
  options.dtype = command.get("precision", "float") == "double" ? DataType::Double : DataType::Float;
  try {
    return build_network(t.source, options);
  } catch (const ConfigError& e) {
    // An error in the generated description names the NDL line it was written from.
    const TextLocation& at = e.location;
    if (at.valid() && at.source->path == "BrainScriptNetworkBuilder" && at.line < t.origins.size() &&
        t.origins[at.line].valid())
      throw ConfigError("NDL", e.message, t.origins[at.line]);
    throw;
  }
}

}  // namespace cntk::brainscript
