// Reader blocks: the `reader` of a train, test or write command (CNTK's reader configuration)
// as the engine's MinibatchSource over its deserializers.
//
//   reader = [ readerType = "CNTKTextFormatReader" ; file = ... ; input = [ x = [ dim ; format ] ] ]
//   reader = [ readerType = "CNTKBinaryReader" ; file = ... ; input = [ x = [ alias ] ] ]
//   reader = [ deserializers = ( [ type = "CNTKTextFormatDeserializer" ; file ; input ] : [ ... ] ) ]
//
// Deserializers other than CNTK's text and binary formats raise NotImplementedError naming them.
#pragma once
#include <memory>
#include <vector>

#include "brainscript/config.h"
#include "cntk/evaluation.h"
#include "cntk/function.h"
#include "io/minibatch_source.h"

namespace cntk::brainscript {

struct Reader {
  std::unique_ptr<io::MinibatchSource> source;
  size_t sweep_samples = 0;  // samples in one sweep of the primary deserializer's data
};

// The command's `reader` block. Streams take the dtype (and, where the sizes agree, the shape) of
// the network input of the same name. `randomize_default` applies when the block has no
// `randomize`; `max_sweeps` bounds the data (io::kInfinitelyRepeat: no bound).
Reader make_reader(const ConfigRecord& command, const std::vector<Variable>& inputs, bool randomize_default,
                   uint64_t max_sweeps);

// Worker `index` of `parts`'s share of a whole minibatch, every parts-th sequence from the
// index-th (CNTK's decimation when training in parallel without distributed reading). Dense
// streams only; sparse ones raise NotImplementedError.
io::Minibatch decimate(const io::Minibatch& mb, size_t parts, size_t index);

// The minibatch's data for each network input, by stream name (empty for an empty minibatch).
VariableValues arguments_for(const io::MinibatchSource& source, const io::Minibatch& mb,
                             const std::vector<Variable>& inputs);

}  // namespace cntk::brainscript
