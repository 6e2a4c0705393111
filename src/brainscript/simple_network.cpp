// SimpleNetworkBuilder -> BrainScript (see simple_network.h).
#include "brainscript/simple_network.h"

#include <set>

namespace cntk::brainscript {

std::string simple_network_source(const ConfigRecord& b) {
  const std::string kind = b.get("rnnType", "SIMPLENET");
  if (kind != "SIMPLENET")
    throw NotImplementedError("SimpleNetworkBuilder rnnType '" + kind + "' is not implemented yet (SIMPLENET is)");
  if (b.get_bool("addDropoutNodes", false))
    throw NotImplementedError("SimpleNetworkBuilder addDropoutNodes is not implemented yet");
  std::vector<long long> sizes;
  for (const auto& s : b.get_array("layerSizes", {"100"}))
    sizes.push_back((long long)config_to_double(s, "layerSizes"));
  if (sizes.size() < 2) throw ValueError(b.name() + ": layerSizes needs an input and an output size");
  const std::vector<std::string> types = b.get_array("layerTypes", {"Sigmoid"});
  static const std::set<std::string> activations = {"Sigmoid", "Tanh", "RectifiedLinear"};
  for (const auto& t : types)
    if (!activations.count(t))
      throw ValueError(b.name() + ": layerTypes '" + t + "' is not Sigmoid, Tanh or RectifiedLinear");
  const std::string criterion = b.get("trainingCriterion");
  std::string eval = b.get("evalCriterion");
  static const std::set<std::string> criteria = {"CrossEntropyWithSoftmax", "SquareError", "Logistic"};
  if (!criteria.count(criterion))
    throw NotImplementedError("SimpleNetworkBuilder trainingCriterion '" + criterion + "'");
  if (eval == "ErrorPrediction") eval = "ClassificationError";  // CNTK's older name
  if (!criteria.count(eval) && eval != "ClassificationError")
    throw NotImplementedError("SimpleNetworkBuilder evalCriterion '" + eval + "'");
  const std::string init = b.get_bool("uniformInit", true) ? "uniform" : "gaussian";
  const std::string scale = std::to_string(b.get_double("initValueScale", 1.0));
  const size_t hidden = sizes.size() - 2;

  std::string s = "[\n";
  auto line = [&](const std::string& text) { s += "  " + text + "\n"; };
  // CNTK seeds the weights 1, 2, 3, ... in layer order, so the same seeds give CNTK's values.
  auto param = [&](const std::string& name, long long rows, long long cols, size_t seed) {
    line(name + " = __primitives.Parameter (" + std::to_string(rows) + ", " + std::to_string(cols) + ", init = '" +
         init + "', initValueScale = " + scale + ", randomSeed = " + std::to_string(seed) + ")");
  };
  line("features = __primitives.Input (" + std::to_string(sizes[0]) + ")");
  std::string x = "features";
  if (b.get_bool("applyMeanVarNorm", false)) {
    line("MeanOfFeatures = __primitives.Mean (features)");
    line("InvStdOfFeatures = __primitives.InvStdDev (features)");
    line("MVNormalizedFeatures = (features - MeanOfFeatures) .* InvStdOfFeatures");
    x = "MVNormalizedFeatures";
  }
  for (size_t i = 0; i <= hidden; ++i) {
    const std::string w = "W" + std::to_string(i), bias = "B" + std::to_string(i);
    param(w, sizes[i + 1], sizes[i], i + 1);
    line(bias + " = __primitives.Parameter (" + std::to_string(sizes[i + 1]) + ", 1, init = 'fixedValue', value = 0)");
    if (i < hidden) {
      const std::string h = "H" + std::to_string(i + 1);
      line(h + " = __primitives." + types[std::min(i, types.size() - 1)] + " (" + w + " * " + x + " + " + bias + ")");
      x = h;
    } else {
      line("HLast = " + w + " * " + x + " + " + bias);
    }
  }
  line("labels = __primitives.Input (" + std::to_string(sizes.back()) + ")");
  line(criterion + " = __primitives." + criterion + " (labels, HLast)");
  line("Eval" + eval + " = __primitives." + eval + " (labels, HLast)");
  std::string output = "HLast";
  if (b.get_bool("needPrior", false)) {
    line("Prior = __primitives.Mean (labels)");
    line("LogOfPrior = __primitives.Log (Prior)");
    line("ScaledLogLikelihood = HLast - LogOfPrior");
    output = "ScaledLogLikelihood";
  }
  line("PosteriorProb = __primitives.Softmax (HLast)");
  line("featureNodes = (features) ; labelNodes = (labels)");
  line("criterionNodes = (" + criterion + ") ; evaluationNodes = (Eval" + eval + ")");
  line("outputNodes = (" + output + " : PosteriorProb)");
  return s + "]\n";
}

}  // namespace cntk::brainscript
