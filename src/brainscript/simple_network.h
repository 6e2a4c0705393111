// CNTK's SimpleNetworkBuilder (the feed-forward `SIMPLENET` kind) as BrainScript: the block's
// keys become a network description with CNTK's node names (features, MeanOfFeatures,
// InvStdOfFeatures, MVNormalizedFeatures, W0, B0, H1, ..., HLast, labels, the criterion named
// after its type, Eval<criterion>, Prior, LogOfPrior, ScaledLogLikelihood, PosteriorProb).
#pragma once
#include <string>

#include "brainscript/config.h"

namespace cntk::brainscript {

// The BrainScript record for a SimpleNetworkBuilder block; NotImplementedError for the
// recurrent and class-based kinds and for dropout nodes.
std::string simple_network_source(const ConfigRecord& block);

}  // namespace cntk::brainscript
