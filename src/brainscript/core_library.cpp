// The BrainScript library that network descriptions see (what `include 'cntk.core.bs'` reads):
// CNTK.core.bs's names, defined here over the evaluator's built-in primitives (evaluator.cpp).
#include "brainscript/evaluator.h"

namespace cntk::brainscript {

const std::string& core_library_source() {
  static const std::string source = R"BS(
Identity (x) = x
# CNTK.core.bs's order (the primitive, as CNTK2.Clip, takes the input first)
Clip (minValue, maxValue, x) = __primitives.Clip (x, minValue, maxValue)
SparseInput (dims, dynamicAxis = '') = Input (dims, sparse = true, dynamicAxis = dynamicAxis)
# images [W x H x C] (CHW, cuDNN's layout) or channel-fastest [C x W x H] (HWC, CNTK's legacy one)
ImageInput (imageWidth, imageHeight, imageChannels, imageLayout = 'CHW', sparse = false, dynamicAxis = '') =
    if imageLayout == 'CHW' || imageLayout == 'cudnn' then Input ((imageWidth : imageHeight : imageChannels), sparse = sparse, dynamicAxis = dynamicAxis)
    else if imageLayout == 'HWC' || imageLayout == 'legacy' then Input ((imageChannels : imageWidth : imageHeight), sparse = sparse, dynamicAxis = dynamicAxis)
    else Fail ("ImageInput: imageLayout must be 'CHW' or 'HWC', not '" + imageLayout + "'")
SparseImageInput (imageWidth, imageHeight, imageChannels, imageLayout = 'CHW', dynamicAxis = '') =
    ImageInput (imageWidth, imageHeight, imageChannels, imageLayout = imageLayout, sparse = true, dynamicAxis = dynamicAxis)
Pass (x) = x
Sigmoid1 (x) = Sigmoid (x)
Square (x) = x .* x
SumElements (x) = ReduceSum (x)
LearnableParameter = Parameter
ReconcileMBLayout = ReconcileDynamicAxis
Cosine (x) = Cos (x)
# x / invStdDev + mean (CNTK's node refused gradients; here they flow)
PerDimMeanVarDeNormalization (x, mean, invStdDev) = ElementDivide (x, invStdDev) + mean
# As CNTK.core.bs wrote it, numLayers and bidirectional are not passed on (one forward layer).
RNNStack (x, W, hiddenSize = 10, numLayers = 1, bidirectional = false, rnnMode = 'lstm') =
    OptimizedRNNStack (W, x, hiddenSize, numLayers = 1, bidirectional = false, recurrentOp = rnnMode)
ConstantFromString (literal) = ParameterTensor ((0), initFromLiteral = literal, learningRateMultiplier = 0)
ColumnwiseCrossProduct = KhatriRaoProduct
# Each sequence's steps in reverse order: step t takes step n-1-t, found by the count of steps
# from t to the end (CNTK 2.7 no longer had the node; its v1 predecessor took one sequence only).
TimeReverse (vectorSequence) = GatherPacked (PackedIndex (vectorSequence, _StepsLeft (vectorSequence) - 1), vectorSequence)
_StepsLeft (x) = [ n = BS.Constants.OnesLike (x) + FutureValue (0, n, defaultHiddenActivation = 0) ].n
ConstantTensor (val, shape) = ParameterTensor (shape, initValue = val, learningRateMultiplier = 0)
PerDimMeanVarNormalization (x, mean, invStdDev) = (x - mean) .* invStdDev
MeanVarNorm (x) = PerDimMeanVarNormalization (x, Mean (x), InvStdDev (x))
LogPrior (labels) = Log (Mean (labels))
Ceil (x) = Negate (Floor (Negate (x)))
Round (x) = Floor (x + 0.5)
# Shapes; axes count from 1, first-fastest.
Transpose (x) = TransposeDimensions (x, 1, 2)
ReshapeDimension (x, axis, tensorShape) = NewReshape (x, tensorShape, beginAxis = axis, endAxis = axis + 1)
FlattenDimensions (x, axis, num) = NewReshape (x, 0, beginAxis = axis, endAxis = axis + num)
SplitDimension (x, axis, N) = ReshapeDimension (x, axis, 0 : N)
RowSlice (beginIndex, numRows, input) = Slice (beginIndex, beginIndex + numRows, input)
RowStack (inputs, axis = 1) = Splice (inputs, axis = axis)
Delay = PastValue
Scale (scalarScalingFactor, matrix) = scalarScalingFactor .* matrix
DiagTimes (diagonalMatrixAsColumnVector, matrix) = diagonalMatrixAsColumnVector .* matrix
ColumnElementTimes (aVectorSequence, anotherVectorSequence) = aVectorSequence .* anotherVectorSequence
SumColumnElements (z) = ReduceSum (z, axis = 1)
RowRepeat (input, numRepeats) = Splice (Repeat (numRepeats, input), axis = 1)
CastAs (type, data) = ReconcileDynamicAxis (data, type)
# Shift (input, fromOffset, boundaryValue, boundaryMode, dim): step t takes step t + fromOffset of
# its sequence, boundaryValue where that is outside it. boundaryMode 'context' (-1) read across
# the truncation cuts of a longer sequence, which the delays here also do.
Shift (input, fromOffset, boundaryValue, boundaryMode = -1, dim = -1) =
    if dim != -1 then _NotImplemented ('Shift along a static axis (dim = ' + Format (dim, '') + ')')
    else if fromOffset < 0 then PastValue (0, input, timeStep = -fromOffset, initialState = boundaryValue)
    else if fromOffset > 0 then FutureValue (0, input, timeStep = fromOffset, initialState = boundaryValue)
    else input
_PastValue = PastValue
_FutureValue = FutureValue
# CNTK2: the library's names with the main input first (`_`) and `shape` for dims, as
# CNTK.core.bs declared them; primitives by their `__primitives` names, as the record's own
# members shadow them.
CNTK2 = [
    DynamicAxis () = __primitives.DynamicAxis ()
    Input (shape, dynamicAxis = '') = __primitives.Input (shape, dynamicAxis = dynamicAxis)
    Reshape (_, shape, beginAxis = 0, endAxis = 0) = NewReshape (_, shape, beginAxis = beginAxis, endAxis = endAxis)
    Slice (_, beginIndex, endIndex, axis = 1) = __primitives.Slice (beginIndex, endIndex, _, axis = axis)
    Splice (_, axis = 1) = __primitives.Splice (_, axis = axis)
    TransposeDimensions (_, axis1, axis2) = __primitives.TransposeDimensions (_, axis1, axis2)
    Times (x, y, outputRank = 1, inferInputRankToMap = -1) =
        __primitives.Times (x, y, outputRank = outputRank, inferInputRankToMap = inferInputRankToMap)
    Abs (_) = __primitives.Abs (_)
    Ceil (_) = __primitives.Negate (__primitives.Floor (__primitives.Negate (_)))
    Clip (_, minValue, maxValue) = __primitives.Clip (_, minValue, maxValue)
    ElementDivide (_, y) = __primitives.ElementDivide (_, y)
    ElementTimes (_, y) = __primitives.ElementTimes (_, y)
    Exp (_) = __primitives.Exp (_)
    Floor (_) = __primitives.Floor (_)
    Log (_) = __primitives.Log (_)
    Minus (_, y) = __primitives.Minus (_, y)
    Plus (_, y) = __primitives.Plus (_, y)
    Round (_) = __primitives.Floor (_ + 0.5)
    Sqrt (_) = __primitives.Sqrt (_)
    Square (_) = _ .* _
    Tanh (_) = __primitives.Tanh (_)
    StraightThrough (_) = __primitives.StraightThrough (_)
    ReduceSum (_, axis = None) = __primitives.ReduceSum (_, axis = axis)
    ReduceLogSum (_, axis = None) = __primitives.ReduceLogSum (_, axis = axis)
    ReduceMean (_, axis = None) = __primitives.ReduceMean (_, axis = axis)
    ReduceMin (_, axis = None) = __primitives.ReduceMin (_, axis = axis)
    ReduceMax (_, axis = None) = __primitives.ReduceMax (_, axis = axis)
    FutureValue (_, shape, timeStep = 1, defaultHiddenActivation = 0.1) =
        _FutureValue (shape, _, timeStep = timeStep, defaultHiddenActivation = defaultHiddenActivation)
    PastValue (_, shape, timeStep = 1, defaultHiddenActivation = 0.1) =
        _PastValue (shape, _, timeStep = timeStep, defaultHiddenActivation = defaultHiddenActivation)
    ReLU (_) = __primitives.ReLU (_)
    Relu = ReLU
    Sigmoid (_) = __primitives.Sigmoid (_)
    Softmax (_) = __primitives.Softmax (_)
    Dropout (_) = __primitives.Dropout (_)
    CrossEntropyWithSoftmax (labelSequence, outProbVectorSequence, axis = 0) =
        if axis == 0 then __primitives.CrossEntropyWithSoftmax (labelSequence, outProbVectorSequence)
        else _NotImplemented ('CNTK2.CrossEntropyWithSoftmax along an axis')
    ClassificationError (labelSequence, outVectorSequence, topN = 1, axis = 0) =
        if axis == 0 && topN == 1 then __primitives.ClassificationError (labelSequence, outVectorSequence)
        else _NotImplemented ('CNTK2.ClassificationError with topN or axis')
    ErrorPrediction = ClassificationError
    Less (_, y) = __primitives.Less (_, y)
    Equal (_, y) = __primitives.Equal (_, y)
    Greater (_, y) = __primitives.Greater (_, y)
    GreaterEqual (_, y) = __primitives.GreaterEqual (_, y)
    NotEqual (_, y) = __primitives.NotEqual (_, y)
    LessEqual (_, y) = __primitives.LessEqual (_, y)
    Pass (_) = _
    Identity = Pass
]
# Criteria and norms, one value per sample.
CrossEntropy (refProbVectorSequence, outProbVectorSequence) = Negate (ReduceSum (refProbVectorSequence .* Log (outProbVectorSequence)))
CosDistance (a, b) = ElementDivide (ReduceSum (a .* b), Sqrt (ReduceSum (a .* a) .* ReduceSum (b .* b)))
MatrixL1Reg (matrix) = ReduceSum (Abs (matrix))
MatrixL2Reg (matrix) = Sqrt (ReduceSum (matrix .* matrix))
# Plain numbers.
Sign (x) = if x > 0 then 1 else if x < 0 then -1 else 0
Min (a, b) = if a < b then a else b
Max (a, b) = if a > b then a else b
Fac (n) = if n > 1 then n * Fac (n - 1) else 1
None = BS.Constants.None
Inferred = 0
# CNTK's classic building blocks: an affine map, and its sigmoid.
BFF (in, rows, cols) = [ W = Parameter (rows, cols) ; B = Parameter (rows, 1, initValue = 0) ; z = W * in + B ]
SBFF (in, rows, cols) = [ Eh = Sigmoid (BFF (in, rows, cols).z) ]
# Layers return their apply function; their parameters are made once, when first applied.
# A projection of the whole input (mapRank: all but its last mapRank axes; inputRank: its first
# inputRank axes) to outDim, which may be a tensor shape.
LinearLayer {outDim, bias = true, init = 'glorotUniform', initValueScale = 1, inputRank = None, mapRank = None,
             initBias = 0} = [
    inputShape = if BS.Constants.IsNone (inputRank) then Inferred
                 else if !BS.Constants.IsNone (mapRank) then Fail ("LinearLayer: give inputRank or mapRank, not both")
                 else Repeat (inputRank, Inferred)
    W = ParameterTensor {_ConcatArrays (outDim, inputShape), init = init, initValueScale = initValueScale}
    b = ParameterTensor {outDim, initValue = initBias}
    outputRank = Length (outDim)
    inferInputRankToMap = if !BS.Constants.IsNone (inputRank) then -1
                          else if BS.Constants.IsNone (mapRank) then 0 else mapRank
    apply (x) = if bias then Times (W, x, outputRank = outputRank, inferInputRankToMap = inferInputRankToMap) + b
                else Times (W, x, outputRank = outputRank, inferInputRankToMap = inferInputRankToMap)
].apply
DenseLayer {outDim, bias = true, activation = Identity, init = 'glorotUniform', initValueScale = 1, inputRank = None,
            mapRank = None, initBias = 0} = [
    linear = LinearLayer {outDim, bias = bias, init = init, initValueScale = initValueScale, inputRank = inputRank,
                          mapRank = mapRank, initBias = initBias}
    apply (x) = activation (linear (x))
].apply
EmbeddingLayer {outDim, init = 'glorotUniform', initValueScale = 1, embeddingPath = '', transpose = false} = [
    # transpose: E is [vocabulary x outDim] (a file of one row per word), applied as E' * x
    shape = if transpose then (Inferred : outDim) else (outDim : Inferred)
    E = if embeddingPath == '' then ParameterTensor {shape, init = init, initValueScale = initValueScale}
        else ParameterTensor {shape, initFromFilePath = embeddingPath, learningRateMultiplier = 0}
    apply (x) = if transpose then TransposeTimes (E, x) else E * x
].apply
# CNTK's deprecated form of EmbeddingLayer: a [embeddingDim x inputDim] lookup, fixed unless
# learningRateWeight (from embeddingPath, a file of one row per word, or random with initFrom).
Embedding (embeddingDim, input, inputDim = input.dim, initFrom = '', embeddingPath = '', sparseInput = false,
           learningRateWeight = 0.0) =
    if !sparseInput then _NotImplemented ('Embedding with sparseInput = false (a lookup by index)')
    else Transpose (Parameter (inputDim, embeddingDim, learningRateMultiplier = learningRateWeight, init = initFrom,
                               initFromFilePath = embeddingPath)) * input
LayerStack {n, c} = Sequential (array[0..n-1] (c))
# f[i] of the one input, combined by combineFunction (which takes the array of results)
Parallel (arrayOfFunctions, combineFunction) = [
    fs = if IsArray (arrayOfFunctions) then arrayOfFunctions else (arrayOfFunctions : None)
    apply (x) = combineFunction (array[0..Length (fs) - 1] (i => fs[i] (x)))
].apply
MergeBinary (arrayOfFunctions, combineFunction) =
    if Length (arrayOfFunctions) != 2 then Fail ("MergeBinary: two functions are needed")
    else [ apply (x, y) = combineFunction (arrayOfFunctions[0] (x), arrayOfFunctions[1] (y)) ].apply
# Convolution and pooling; filterShape and stride list the spatial axes width first.
ConvolutionalLayer {numOutputChannels, filterShape, activation = Identity, init = 'glorotUniform',
                    initValueScale = 1, stride = 1, pad = false, lowerPad = 0, upperPad = 0, bias = true} = [
    W = ParameterTensor {_ConcatArrays (filterShape, (0 : numOutputChannels)), init = init,
                         initValueScale = initValueScale, initOutputRank = -1, initFilterRank = Length (filterShape)}
    b = ParameterTensor {_ConcatArrays (Repeat (Length (filterShape), 1), numOutputChannels), initValue = 0}
    apply (x) = [
        c = Convolution (W, x, filterShape, mapDims = numOutputChannels, stride = stride,
                         autoPadding = _ConcatArrays (Repeat (Length (filterShape), pad), false),
                         lowerPad = lowerPad, upperPad = upperPad)
        out = if bias then activation (c + b) else activation (c)
    ].out
].apply
# Transposed convolution; its kernel is [filter x numOutputChannels x numInputChannels].
ConvolutionTransposeLayer {numOutputChannels, filterShape, numInputChannels, bias = true, activation = Identity,
                           init = 'glorotUniform', initValueScale = 0.001, initBias = 0, stride = 1, pad = false,
                           lowerPad = 0, upperPad = 0, outputShape = None, dilation = 1} = [
    kernelShape = _ConcatArrays (filterShape, numOutputChannels)
    W = ParameterTensor {_ConcatArrays (kernelShape, numInputChannels), init = init, initValueScale = initValueScale}
    b = ParameterTensor {_ConcatArrays (Repeat (Length (filterShape), 1), numOutputChannels), initValue = initBias}
    apply (x) = [
        c = ConvolutionTranspose (W, x, kernelShape, mapDims = numInputChannels, stride = stride, autoPadding = pad,
                                  lowerPad = lowerPad, upperPad = upperPad, outputShape = outputShape, dilation = dilation)
        out = if bias then activation (c + b) else activation (c)
    ].out
].apply
# A fixed transposed convolution whose kernel interpolates each channel bilinearly (init 'bilinear').
BilinearUpsamplingLayer {numChannels, kernelSize, stride} = [
    kernelShape = (kernelSize : kernelSize : numChannels)
    W = ParameterTensor {_ConcatArrays (kernelShape, numChannels), init = 'bilinear', learningRateMultiplier = 0}
    apply (x) = ConvolutionTranspose (W, x, kernelShape, mapDims = numChannels, stride = stride, autoPadding = false)
].apply
# CNTK's legacy pooling nodes: a window and a step over width and height, no padding (images CHW,
# or HWC stored channel-fastest as ImageInput lays them out).
MaxPooling (input, windowWidth, windowHeight, horizontalSubsample, verticalSubsample, imageLayout = 'CHW') =
    _LegacyPooling ('max', input, windowWidth, windowHeight, horizontalSubsample, verticalSubsample, imageLayout)
AveragePooling (input, windowWidth, windowHeight, horizontalSubsample, verticalSubsample, imageLayout = 'CHW') =
    _LegacyPooling ('average', input, windowWidth, windowHeight, horizontalSubsample, verticalSubsample, imageLayout)
_LegacyPooling (kind, input, w, h, sw, sh, imageLayout) =
    if imageLayout == 'CHW' || imageLayout == 'cudnn'
    then Pooling (input, kind, (w : h : 1), stride = (sw : sh : 1), autoPadding = false)
    else if imageLayout == 'HWC' || imageLayout == 'legacy'
    then Pooling (input, kind, (1 : w : h), stride = (1 : sw : sh), autoPadding = false)
    else Fail ("MaxPooling/AveragePooling: imageLayout must be 'CHW' or 'HWC', not '" + imageLayout + "'")
MaxUnpoolingLayer {filterShape, stride = 1, pad = false, lowerPad = 0, upperPad = 0} = [
    apply (unpoolInput, poolInput) = MaxUnpooling (unpoolInput, poolInput, filterShape, stride = stride, autoPadding = pad,
                                                   lowerPad = lowerPad, upperPad = upperPad)
].apply
MaxPoolingLayer {filterShape, stride = 1, pad = false, lowerPad = 0, upperPad = 0, ceilOutDim = false} = [
    apply (x) = Pooling (x, 'max', filterShape, stride = stride, autoPadding = pad, lowerPad = lowerPad,
                         upperPad = upperPad, ceilOutDim = ceilOutDim)
].apply
AveragePoolingLayer {filterShape, stride = 1, pad = false, lowerPad = 0, upperPad = 0, ceilOutDim = false,
                     includePad = false} = [
    apply (x) = Pooling (x, 'average', filterShape, stride = stride, autoPadding = pad, lowerPad = lowerPad,
                         upperPad = upperPad, ceilOutDim = ceilOutDim, includePad = includePad)
].apply
# Batch normalization: per element (spatialRank 0) or per channel (spatialRank > 0); the running
# mean and variance are constants that training passes update.
BatchNormalizationLayer {spatialRank = 0, initialScale = 1, normalizationTimeConstant = 5000,
                         blendTimeConstant = 0, epsilon = 0.00001} = [
    scale = ParameterTensor {0, initValue = initialScale}
    bias = ParameterTensor {0, initValue = 0}
    runMean = ParameterTensor {0, initValue = 0, learningRateMultiplier = 0}
    runVariance = ParameterTensor {0, initValue = 0, learningRateMultiplier = 0}
    apply (x) = BatchNormalization (x, scale, bias, runMean, runVariance, spatialRank > 0,
                                    normalizationTimeConstant = normalizationTimeConstant,
                                    blendTimeConstant = blendTimeConstant, epsilon = epsilon)
].apply
# Layer normalization over all of a sample's elements, with a learned scalar gain and bias.
LayerNormalizationLayer {initScale = 1, initBias = 0} = [
    gain = ParameterTensor {(1), initValue = initScale}
    bias = ParameterTensor {(1), initValue = initBias}
    apply (x) = [
        centred = x - ReduceMean (x)
        normalized = ElementDivide (centred, Sqrt (ReduceMean (centred .* centred)))
        out = normalized .* gain + bias
    ].out
].apply
# A learned positive scalar factor: a softplus sharpened by `steepness`, 1 at its initial value.
StabilizerLayer {steepness = 4} = [
    param = ParameterTensor {(1), initValue = 0.99537863}
    apply (x) = (Log (1 + Exp (steepness .* param)) / steepness) .* x
].apply
FeatureMVNLayer {} = MeanVarNorm
LogPriorLayer {} = LogPrior
DelayLayer {T = 1, defaultHiddenActivation = 0} = [
    apply (x) = if T > 0 then PastValue (0, x, timeStep = T, defaultHiddenActivation = defaultHiddenActivation)
                else if T < 0 then FutureValue (0, x, timeStep = -T, defaultHiddenActivation = defaultHiddenActivation)
                else x
].apply
# LSTM layers over BS.RNNs.LSTMBlock, or, with allowOptimizedEngine where CNTK used it (no
# projection, peepholes, stabilizers, trained initial state or backward direction), one
# OptimizedRNNStack whose weights are in cuDNN's layout and whose states start at 0.
RecurrentLSTMLayer {outputDim, cellShape = None, goBackwards = false, usePeepholes = false, trainInitialState = false,
                    init = 'glorotUniform', initValueScale = 1, enableSelfStabilization = false,
                    allowOptimizedEngine = false} =
    if allowOptimizedEngine && BS.Constants.IsNone (cellShape) && !goBackwards && !usePeepholes && !trainInitialState
       && !enableSelfStabilization
    then _OptimizedLSTM (outputDim, 1, init, initValueScale)
    else [
        previousHook = if trainInitialState
                       then (if goBackwards then BS.RNNs.NextHCWithTrainedInitialState {} else BS.RNNs.PreviousHCWithTrainedInitialState {})
                       else (if goBackwards then BS.RNNs.NextHC else BS.RNNs.PreviousHC)
        lstm = BS.RNNs.LSTMBlock {outputDim, cellShape = cellShape, usePeepholes = usePeepholes, init = init,
                                  initValueScale = initValueScale, enableSelfStabilization = enableSelfStabilization}
        apply (x) = [
            prevState = previousHook (state)
            state = lstm (x, prevState)
        ].state.h
    ].apply
_OptimizedLSTM (dim, layers, init, initValueScale) = [
    W = ParameterTensor {(0 : 0), initFilterRank = 0, initOutputRank = -1, init = init, initValueScale = initValueScale}
    apply (x) = OptimizedRNNStack (W, x, dim, numLayers = layers)
].apply
_AllEqual (arr) = Length (arr) < 2 || (arr[0] == arr[1] && _AllEqual (arr << 1))
RecurrentLSTMLayerStack {layerDims, cellShapes = None, usePeepholes = false, init = 'glorotUniform', initValueScale = 1,
                         enableSelfStabilization = false, allowOptimizedEngine = false} =
    if allowOptimizedEngine && BS.Constants.IsNone (cellShapes) && !usePeepholes && !enableSelfStabilization
       && _AllEqual (layerDims)
    then _OptimizedLSTM (layerDims[0], Length (layerDims), init, initValueScale)
    else LayerStack {Length (layerDims), i => RecurrentLSTMLayer {layerDims[i],
        cellShape = if BS.Constants.IsNone (cellShapes) then None else cellShapes[i], usePeepholes = usePeepholes,
        init = init, initValueScale = initValueScale, enableSelfStabilization = enableSelfStabilization}}
BS = [
    Constants = [
        Zero = 0
        One = 1
        True = 1
        False = 0
        None = [| |]
        IsNone (x) = IsSameObject (x, None)
        OnesTensor (dims) = ConstantTensor (1, dims)
        # a scalar 0 (or 1) at every step of x
        ZeroesLike (x) = ReduceSum (Slice (0, 1, x) .* 0)
        ZeroSequenceLike = ZeroesLike
        OnesLike (x) = ZeroesLike (x) + 1
    ]
    Boolean = [
        True = 1
        False = 0
        And (a, b) = a .* b
        Or (a, b) = a + b - a .* b
        Xor (a, b) = a + b - 2 * (a .* b)
        Not (x) = 1 - x
        If (cond, thenVal, elseVal) = __primitives.If (cond, thenVal, elseVal)
        # flips its 0/1 state at each step where clk is 1
        Toggle (clk, initialValue = False) = [
            state = Xor (PastValue (1, state, defaultHiddenActivation = initialValue), clk)
        ].state
    ]
    # Positions within the sequence: 0/1 flags per step, and the neighbouring steps.
    Loop = [
        IsFirst (x) = _IsWithin (x, 1)
        IsLast (x) = _IsWithin (x, -1)
        IsFirstN (N, x) = _IsWithin (x, N)
        IsLastN (N, x) = _IsWithin (x, -N)
        Previous (x, initialState = None) = PastValue (0, x, initialState = initialState)
        Next (x, initialState = None) = FutureValue (0, x, initialState = initialState)
        PreviousOrDefault (x, defaultValue = 0) = PastValue (0, x, initialState = defaultValue)
        NextOrDefault (x, defaultValue = 0) = FutureValue (0, x, initialState = defaultValue)
        Iteration (x) = [ n = Constants.OnesLike (x) + PastValue (0, n, defaultHiddenActivation = 0) ].n
        Count (x) = Sequences.Last (Iteration (x))
    ]
    Sequences = [
        First (x) = Slice (0, 1, x, axis = -1)
        Last (x) = Slice (-1, 0, x, axis = -1)
        # the steps of x where cond is nonzero, as a new sequence; and back to cond's length (zeros elsewhere)
        Gather (cond, x) = GatherPacked (PackedIndex (x, Where (cond)), x)
        Scatter (cond, y) = ScatterPacked (cond, PackedIndex (cond, Where (cond)), y)
        Map (f, x) = f (x)
        Reverse (x) = TimeReverse (x)
        FoldL (binaryOp, x0, x) = Last (_Fold (PastValue, binaryOp, x0, x))
        FoldR (binaryOp, x0, x) = First (_Fold (FutureValue, binaryOp, x0, x))
        _Fold (delay, binaryOp, x0, x) = [ acc = binaryOp (x, delay (0, acc, initialState = x0)) ].acc
        # the last N steps at each sequence's end as one [dim x N] value (most recent first),
        # and `valid`, 1 where the sequence had that step; axis > 2 puts the N steps there
        PastValueWindow (N, in, axis = 2) = [
            isLast = Loop.IsLast (in)  # one condition, so that the gathered steps share a sequence axis
            lastOf (x) = Gather (isLast, x)
            ones = Constants.OnesLike (in)
            delayed (x, t) = if t == 0 then x else PastValue (x.dim, x, timeStep = t, defaultHiddenActivation = 0)
            window (x) = [
                stacked = RowStack (array[0..N-1] (t => lastOf (delayed (x, t))))
                out = if axis == 2 then SplitDimension (stacked, 1, N)
                      else if axis > 2 then TransposeDimensions (SplitDimension (stacked, 1, N), 2, axis)
                      else Fail ("PastValueWindow: axis must be 2 or more")
            ].out
            value = window (in)
            valid = window (ones)
        ]
        # a one-step value repeated along the sequence `type`
        BroadcastSequenceAs (type, data1) = [
            padded = Scatter (Loop.IsFirst (type), data1)
            out = Boolean.If (Loop.IsFirst (type), padded, PastValue (0, out, defaultHiddenActivation = 0))
        ].out
    ]
    Parameters = [
        # CNTK gave all of these the random seed 1: equal shapes start equal.
        WeightParam (outputDim, inputDim) = ParameterTensor ((outputDim : inputDim), init = 'uniform', randomSeed = 1)
        DiagWeightParam (outputDim) = ParameterTensor ((outputDim), init = 'uniform', randomSeed = 1)
        BiasParam (dim) = ParameterTensor ((dim), initValue = 0)
        ScalarParam () = BiasParam (1)
        # x times a learned positive factor per element (a softplus of steepness 4, 1 at first)
        StabilizeElements (x, inputDim = x.dim, enabled = true) =
            if enabled
            then (Log (1 + Exp (4 .* ParameterTensor ((inputDim), initValue = 0.99537863))) / 4) .* x
            else x
        Stabilize (x, enabled = true) = StabilizeElements (x, inputDim = 1, enabled = enabled)
    ]
    RNNs = [
        # One LSTM step as a layer: apply (x, prevState) gives [ h ; c ; dim ]. Gates are one stacked
        # projection in CNTK's order (input, cell candidate, forget, output); a cellShape other than
        # outputDim projects h; peepholes feed the cell to the gates.
        LSTMBlock {outputDim, cellShape = None, usePeepholes = false, init = 'glorotUniform', initValueScale = 1,
                   enableSelfStabilization = false} = [
            cellDim = if Constants.IsNone (cellShape) then outputDim else cellShape
            W = ParameterTensor {(4 * cellDim : Inferred), init = init, initValueScale = initValueScale}
            A = ParameterTensor {(4 * cellDim : Inferred), init = init, initValueScale = initValueScale}
            H = ParameterTensor {(4 * cellDim : outputDim), init = init, initValueScale = initValueScale}
            B = ParameterTensor {(4 * cellDim), initValue = 0}
            Ci = ParameterTensor {(cellDim), init = init, initValueScale = initValueScale}
            Cf = ParameterTensor {(cellDim), init = init, initValueScale = initValueScale}
            Co = ParameterTensor {(cellDim), init = init, initValueScale = initValueScale}
            Wmr = ParameterTensor {(outputDim : cellDim), init = init, initValueScale = initValueScale}
            stabilizer = if enableSelfStabilization then StabilizerLayer {} else Identity
            Sdh = stabilizer ; Sdc = stabilizer ; Sct = stabilizer ; Sht = stabilizer
            apply (x, prevState, aux = None) = [
                dhs = Sdh (prevState.h)
                dcs = Sdc (prevState.c)
                proj = if Constants.IsNone (aux) then B + W * x + H * dhs else B + W * x + H * dhs + A * aux
                gate (k) = Slice (k * cellDim, (k + 1) * cellDim, proj)
                peep (v, cell, C) = if usePeepholes then v + C .* cell else v
                it = Sigmoid (peep (gate (0), dcs, Ci))
                ft = Sigmoid (peep (gate (2), dcs, Cf))
                c = ft .* prevState.c + it .* Tanh (gate (1))
                ot = Sigmoid (peep (gate (3), Sct (c), Co))
                ht = ot .* Tanh (c)
                h = if outputDim != cellDim then Wmr * Sht (ht) else ht
                dim = outputDim
                _cellDim = cellDim
            ]
        ].apply
        # LSTM step with projection, every gate with parameters of its own (CNTK's LSTMP).
        LSTMP (outputDim, x, prevState, cellDim = outputDim, aux = Constants.None, auxDim = aux.dim,
               enableSelfStabilization = false, inputDim = 0) = [
            S (v) = Parameters.Stabilize (v, enabled = enableSelfStabilization)
            dhs = S (prevState.h)
            dcs = S (prevState.c)
            B () = Parameters.BiasParam (cellDim)
            W () = Parameters.WeightParam (cellDim, 0)
            A () = Parameters.WeightParam (cellDim, auxDim)
            H () = Parameters.WeightParam (cellDim, outputDim)
            C () = Parameters.DiagWeightParam (cellDim)
            input () = if Constants.IsNone (aux) then B () + W () * x else B () + W () * x + A () * aux
            it = Sigmoid (input () + H () * dhs + C () .* dcs)
            ft = Sigmoid (input () + H () * dhs + C () .* dcs)
            c = ft .* prevState.c + it .* Tanh (input () + H () * dhs)
            ot = Sigmoid (input () + H () * dhs + C () .* S (c))
            ht = ot .* Tanh (c)
            h = if outputDim != cellDim then Parameters.WeightParam (outputDim, cellDim) * S (ht) else ht
            dim = outputDim
            _cellDim = cellDim
        ]
        # GRU step (CNTK's: update gate z, reset gate r, each with parameters of its own); c is
        # its candidate, for callers written for LSTM states.
        GRU (outputDim, x, prevState, cellDim = outputDim, inputDim = x.dim, aux = Constants.None, auxDim = aux.dim,
             enableSelfStabilization = false) = [
            S (v) = Parameters.Stabilize (v, enabled = enableSelfStabilization)
            dhs = S (prevState.h)
            B () = Parameters.BiasParam (outputDim)
            W () = Parameters.WeightParam (outputDim, inputDim)
            A () = Parameters.WeightParam (outputDim, auxDim)
            H () = Parameters.WeightParam (outputDim, outputDim)
            input () = if Constants.IsNone (aux) then B () + W () * x else B () + W () * x + A () * aux
            zt = Sigmoid (input () + H () * dhs)
            rt = Sigmoid (input () + H () * dhs)
            c = Tanh (input () + H () * (dhs .* rt))
            h = (1 - zt) .* c + zt .* dhs
            dim = outputDim
            _cellDim = outputDim
        ]
        # The previous (next) step's h and c of a state, for the recurrent forms below. The
        # delays take their dimensions from the state record (its dim and _cellDim).
        PreviousHC (state, initialState = None, layerIndex = 0) = _DelayHC (PastValue, state, initialState)
        NextHC (state, initialState = None, layerIndex = 0) = _DelayHC (FutureValue, state, initialState)
        _DelayHC (delay, state, initialState) = [
            given = !Constants.IsNone (initialState)
            h = delay (state.dim, state.h, initialState = if given then initialState.h else None)
            c = delay (state._cellDim, state.c, initialState = if given then initialState.c else None)
            dim = state.dim
            _cellDim = state._cellDim
        ]
        # ... starting from learned states (of `shape`; 0: the state's own)
        PreviousHCWithTrainedInitialState {shape = (0)} = [
            apply (state) = PreviousHC (state, initialState = _TrainedHC (shape, state))
        ].apply
        NextHCWithTrainedInitialState {shape = (0)} = [
            apply (state) = NextHC (state, initialState = _TrainedHC (shape, state))
        ].apply
        _TrainedHC (shape, state) = [
            inferred = !IsArray (shape) && shape == 0
            h = ParameterTensor {if inferred then state.dim else shape, initValue = 0}
            c = ParameterTensor {if inferred then state._cellDim else shape, initValue = 0}
        ]
        NoAuxInputHook (input, state) = Constants.None
        RecurrentLSTMP (outputDim, x, cellDim = None, inputDim = 0, previousHook = PreviousHC,
                        augmentInputHook = NoAuxInputHook, augmentInputDim = 0, layerIndex = 0,
                        enableSelfStabilization = false) = [
            prevState = previousHook (state, layerIndex = layerIndex)
            state = LSTMP (outputDim, x, prevState, cellDim = if Constants.IsNone (cellDim) then outputDim else cellDim,
                           aux = augmentInputHook (x, prevState), auxDim = augmentInputDim,
                           enableSelfStabilization = enableSelfStabilization)
        ].state
        RecurrentGRU (outputDim, x, cellDim = outputDim, inputDim = x.dim, previousHook = PreviousHC,
                      augmentInputHook = NoAuxInputHook, augmentInputDim = 0, layerIndex = 0,
                      enableSelfStabilization = false) = [
            prevState = previousHook (state, layerIndex = layerIndex)
            state = GRU (outputDim, x, prevState, inputDim = inputDim, aux = augmentInputHook (x, prevState),
                         auxDim = augmentInputDim, enableSelfStabilization = enableSelfStabilization)
        ].state
        # Stacks: arrays of the layers' states (the last one's .h is the output).
        RecurrentLSTMPStack (layerDims, input, cellDims = None, inputDim = 0, previousHook = PreviousHC,
                             augmentInputHook = NoAuxInputHook, augmentInputDim = 0, enableSelfStabilization = false) = [
            layer (i, v) = RecurrentLSTMP (layerDims[i], v,
                cellDim = if Constants.IsNone (cellDims) then layerDims[i] else cellDims[i], previousHook = previousHook,
                augmentInputHook = if i == 0 then augmentInputHook else NoAuxInputHook,
                augmentInputDim = if i == 0 then augmentInputDim else 0, layerIndex = i,
                enableSelfStabilization = enableSelfStabilization)
            layers = _Stack (layerDims, input, layer, enableSelfStabilization)
        ].layers
        RecurrentGRUStack (layerDims, input, cellDims = layerDims, inputDim = input.dim, previousHook = PreviousHC,
                           augmentInputHook = NoAuxInputHook, augmentInputDim = 0, enableSelfStabilization = false) = [
            layer (i, v) = RecurrentGRU (layerDims[i], v, previousHook = previousHook,
                augmentInputHook = if i == 0 then augmentInputHook else NoAuxInputHook,
                augmentInputDim = if i == 0 then augmentInputDim else 0, layerIndex = i,
                enableSelfStabilization = enableSelfStabilization)
            layers = _Stack (layerDims, input, layer, enableSelfStabilization)
        ].layers
        # Bidirectional stacks: each layer a forward and a backward recurrence, spliced.
        RecurrentBidirectionalLSTMPStack (layerDims, input, cellDims = layerDims, inputDim = input.dim,
                                          previousHook = PreviousHC, nextHook = NextHC, enableSelfStabilization = false) = [
            layer (i, v) = _Bidirectional (
                RecurrentLSTMP (layerDims[i], v, cellDim = cellDims[i], previousHook = previousHook, layerIndex = i,
                                enableSelfStabilization = enableSelfStabilization),
                RecurrentLSTMP (layerDims[i], v, cellDim = cellDims[i], previousHook = nextHook, layerIndex = i,
                                enableSelfStabilization = enableSelfStabilization))
            layers = _Stack (layerDims, input, layer, enableSelfStabilization)
        ].layers
        RecurrentBidirectionalGRUStack (layerDims, input, cellDims = layerDims, inputDim = input.dim,
                                        previousHook = PreviousHC, nextHook = NextHC, enableSelfStabilization = false) = [
            layer (i, v) = _Bidirectional (
                RecurrentGRU (layerDims[i], v, previousHook = previousHook, layerIndex = i,
                              enableSelfStabilization = enableSelfStabilization),
                RecurrentGRU (layerDims[i], v, previousHook = nextHook, layerIndex = i,
                              enableSelfStabilization = enableSelfStabilization))
            layers = _Stack (layerDims, input, layer, enableSelfStabilization)
        ].layers
        _Bidirectional (fwd, bwd) = [
            h = Splice ((fwd.h : bwd.h), axis = 1)
            c = Splice ((fwd.c : bwd.c), axis = 1)
            dim = fwd.dim + bwd.dim
        ]
        # layer i gets the input (i = 0) or the stabilized h of layer i - 1
        _Stack (layerDims, input, layer, stabilize) = [
            layers[i:0..Length (layerDims) - 1] =
                layer (i, if i == 0 then input else Parameters.Stabilize (layers[i - 1].h, enabled = stabilize))
        ].layers
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
