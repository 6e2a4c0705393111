// The BrainScript library that network descriptions see (what `include 'cntk.core.bs'` reads):
// CNTK.core.bs's names, defined here over the evaluator's built-in primitives (evaluator.cpp).
#include "brainscript/evaluator.h"

namespace cntk::brainscript {

const std::string& core_library_source() {
  static const std::string source = R"BS(
Identity (x) = x
Pass (x) = x
Sigmoid1 (x) = Sigmoid (x)
Square (x) = x .* x
SumElements (x) = ReduceSum (x)
ConstantTensor (val, shape) = ParameterTensor (shape, initValue = val, learningRateMultiplier = 0)
PerDimMeanVarNormalization (x, mean, invStdDev) = (x - mean) .* invStdDev
MeanVarNorm (x) = PerDimMeanVarNormalization (x, Mean (x), InvStdDev (x))
# Layers return their apply function; their parameters are made once, when first applied.
DenseLayer {outDim, bias = true, activation = Identity, init = 'glorotUniform', initValueScale = 1} = [
    W = ParameterTensor {(outDim : 0), init = init, initValueScale = initValueScale}
    b = ParameterTensor {outDim, initValue = 0}
    apply (x) = if bias then activation (W * x + b) else activation (W * x)
].apply
LinearLayer {outDim, bias = true, init = 'glorotUniform', initValueScale = 1} =
    DenseLayer {outDim, bias = bias, init = init, initValueScale = initValueScale}
EmbeddingLayer {outDim, init = 'glorotUniform', initValueScale = 1} = [
    E = ParameterTensor {(outDim : 0), init = init, initValueScale = initValueScale}
    apply (x) = E * x
].apply
# Convolution and pooling; filterShape and stride list the spatial axes width first.
ConvolutionalLayer {numOutputChannels, filterShape, activation = Identity, init = 'glorotUniform',
                    initValueScale = 1, stride = 1, pad = false, bias = true} = [
    W = ParameterTensor {_ConcatArrays (filterShape, (0 : numOutputChannels)), init = init,
                         initValueScale = initValueScale, initOutputRank = -1, initFilterRank = Length (filterShape)}
    b = ParameterTensor {_ConcatArrays (Repeat (Length (filterShape), 1), numOutputChannels), initValue = 0}
    apply (x) = [
        c = Convolution (W, x, filterShape, mapDims = numOutputChannels, stride = stride,
                         autoPadding = _ConcatArrays (Repeat (Length (filterShape), pad), false))
        out = if bias then activation (c + b) else activation (c)
    ].out
].apply
MaxPoolingLayer {filterShape, stride = 1, pad = false} = [
    apply (x) = Pooling (x, 'max', filterShape, stride = stride, autoPadding = pad)
].apply
AveragePoolingLayer {filterShape, stride = 1, pad = false} = [
    apply (x) = Pooling (x, 'average', filterShape, stride = stride, autoPadding = pad)
].apply
# Batch normalization: per element (spatialRank 0) or per channel (spatialRank > 0); the running
# mean and variance are constants that training passes update.
BatchNormalizationLayer {spatialRank = 0, initialScale = 1, normalizationTimeConstant = 0,
                         blendTimeConstant = 0, epsilon = 0.00001} = [
    scale = ParameterTensor {0, initValue = initialScale}
    bias = ParameterTensor {0, initValue = 0}
    runMean = ParameterTensor {0, initValue = 0, learningRateMultiplier = 0}
    runVariance = ParameterTensor {0, initValue = 0, learningRateMultiplier = 0}
    apply (x) = BatchNormalization (x, scale, bias, runMean, runVariance, spatialRank > 0,
                                    normalizationTimeConstant = normalizationTimeConstant,
                                    blendTimeConstant = blendTimeConstant, epsilon = epsilon)
].apply
# LSTM (CNTK's gate order in one stacked projection: input, cell candidate, forget, output).
LSTMBlock {outDim, init = 'glorotUniform', initValueScale = 1} = [
    W = ParameterTensor {(4 * outDim : 0), init = init, initValueScale = initValueScale}
    H = ParameterTensor {(4 * outDim : outDim), init = init, initValueScale = initValueScale}
    b = ParameterTensor {4 * outDim, initValue = 0}
    apply (x, prevH, prevC) = [
        proj = W * x + H * prevH + b
        gate (k) = Slice (k * outDim, (k + 1) * outDim, proj)
        c = Sigmoid (gate (2)) .* prevC + Sigmoid (gate (0)) .* Tanh (gate (1))
        h = Sigmoid (gate (3)) .* Tanh (c)
    ]
].apply
RecurrentLSTMLayer {outDim, goBackwards = false, init = 'glorotUniform', initValueScale = 1} = [
    lstm = LSTMBlock {outDim, init = init, initValueScale = initValueScale}
    apply (x) = [
        prevH = if goBackwards then FutureValue (outDim, state.h, defaultHiddenActivation = 0)
                else PastValue (outDim, state.h, defaultHiddenActivation = 0)
        prevC = if goBackwards then FutureValue (outDim, state.c, defaultHiddenActivation = 0)
                else PastValue (outDim, state.c, defaultHiddenActivation = 0)
        state = lstm (x, prevH, prevC)
    ].state.h
].apply
RecurrentLSTMLayerStack {layerDims, init = 'glorotUniform', initValueScale = 1} =
    Sequential (array[0..Length (layerDims) - 1] (i => RecurrentLSTMLayer {layerDims[i], init = init, initValueScale = initValueScale}))
BS = [
    Boolean = [
        And (a, b) = a .* b
        Or (a, b) = a + b - a .* b
        Not (x) = 1 - x
    ]
    Constants = [
        Zero = 0
        One = 1
    ]
]
)BS";
  return source;
}

namespace {
const std::string* builtin_source(const std::string& name) {
  return name == "cntk.core.bs" ? &core_library_source() : nullptr;
}
// `include 'cntk.core.bs'` finds the library even where no such file is on disk.
[[maybe_unused]] const bool registered = (set_builtin_sources(builtin_source), true);
}  // namespace

}  // namespace cntk::brainscript
