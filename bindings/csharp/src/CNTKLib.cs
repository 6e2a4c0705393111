// CNTKLib: CNTK's static functions that build ops, initializers and schedules. Each op is
// one catalogue op of the engine, created by its CNTK name with CNTK's attribute keys
// through cntk_function_primitive. Shapes and static axes are given in CNTK's order and
// turned into the engine's (NumPy) order here: dimensions reversed, static axis i becoming
// the engine's axis -(i + 1), per-axis lists reversed, and the operands of Times swapped.
using System;
using System.Collections.Generic;
using System.Linq;

namespace CNTK
{
    /// <summary>A list of flags (CNTK's SWIG vector type); a bool[] converts to it.</summary>
    public class BoolVector : List<bool>
    {
        public BoolVector() { }
        public BoolVector(IEnumerable<bool> values) : base(values) { }
        public static implicit operator BoolVector(bool[] values) { return new BoolVector(values); }
    }

    public class AxisVector : List<Axis>
    {
        public AxisVector() { }
        public AxisVector(IEnumerable<Axis> axes) : base(axes) { }
        public static implicit operator AxisVector(Axis[] axes) { return new AxisVector(axes); }
    }

    public class IntVector : List<int>
    {
        public IntVector() { }
        public IntVector(IEnumerable<int> values) : base(values) { }
        public static implicit operator IntVector(int[] values) { return new IntVector(values); }
    }

    public static partial class CNTKLib
    {
        public const double DefaultParamInitScale = 1.0;
        public const int SentinelValueForInferParamInitRank = int.MaxValue;
        public const uint SentinelValueForAutoSelectRandomSeed = uint.MaxValue;

        // ---------------------------------------------------------------- plumbing

        internal static Function Op(string op, Variable[] inputs, CNTKDictionary attributes, string name)
        {
            IntPtr[] handles = Variable.Handles(inputs, "operand");
            IntPtr h;
            try
            {
                Native.Check(Native.cntk_function_primitive(op, handles, (UIntPtr)handles.Length,
                    attributes == null ? IntPtr.Zero : attributes.Handle, name ?? "", out h));
            }
            finally
            {
                if (attributes != null) attributes.Dispose();
            }
            return new Function(h);
        }

        static Function Op(string op, Variable x, string name) { return Op(op, new[] { x }, null, name); }
        static Function Op(string op, Variable a, Variable b, string name) { return Op(op, new[] { a, b }, null, name); }

        static CNTKDictionary Attrs() { return new CNTKDictionary(); }

        // A CNTK axis in the engine's terms: static axis i counts from the end.
        internal static Axis EngineAxis(Axis axis)
        {
            if (axis == null) throw new ArgumentNullException("axis");
            return axis.IsStatic ? new Axis(-(axis.StaticAxisIndex() + 1)) : axis;
        }

        static long[] Dims(NDShape shape, string what)
        {
            if (shape == null) throw new ArgumentNullException(what);
            return shape.ToEngine();
        }

        // ---------------------------------------------------------------- variables

        public static Variable InputVariable(NDShape shape, DataType dataType, string name = "", IList<Axis> dynamicAxes = null)
        {
            return Variable.InputVariable(shape, dataType, name, dynamicAxes);
        }

        public static Variable InputVariable(NDShape shape, bool isSparse, DataType dataType, string name = "", IList<Axis> dynamicAxes = null)
        {
            return Variable.InputVariable(shape, dataType, name, dynamicAxes, isSparse);
        }

        public static Variable InputVariable(NDShape shape, DataType dataType, bool needsGradient, string name = "", IList<Axis> dynamicAxes = null)
        {
            return Variable.InputVariable(shape, dataType, name, dynamicAxes, false, needsGradient);
        }

        public static Variable PlaceholderVariable(NDShape shape, IList<Axis> dynamicAxes) { return Variable.PlaceholderVariable(shape, dynamicAxes); }
        public static Variable PlaceholderVariable(NDShape shape, string name, IList<Axis> dynamicAxes) { return Variable.PlaceholderVariable(shape, name, dynamicAxes); }
        public static Variable PlaceholderVariable() { return Variable.PlaceholderVariable(); }

        public static Function Combine(IList<Variable> operands, string name = "") { return Function.Combine(operands, name); }
        public static Function Alias(Variable operand, string name = "") { return Function.Alias(operand, name); }
        public static Function AsComposite(Function rootFunction, string name = "") { return Function.AsComposite(rootFunction, name); }

        // ---------------------------------------------------------------- elementwise

        public static Function Plus(Variable leftOperand, Variable rightOperand, string name = "") { return Op("Plus", leftOperand, rightOperand, name); }
        public static Function Minus(Variable leftOperand, Variable rightOperand, string name = "") { return Op("Minus", leftOperand, rightOperand, name); }
        public static Function ElementTimes(Variable leftOperand, Variable rightOperand, string name = "") { return Op("ElementTimes", leftOperand, rightOperand, name); }
        public static Function ElementDivide(Variable leftOperand, Variable rightOperand, string name = "") { return Op("ElementDivide", leftOperand, rightOperand, name); }
        public static Function ElementMax(Variable leftOperand, Variable rightOperand, string name = "") { return Op("ElementMax", leftOperand, rightOperand, name); }
        public static Function ElementMin(Variable leftOperand, Variable rightOperand, string name = "") { return Op("ElementMin", leftOperand, rightOperand, name); }
        public static Function Negate(Variable operand, string name = "") { return Op("Negate", operand, name); }
        public static Function Sigmoid(Variable operand, string name = "") { return Op("StableSigmoid", operand, name); }
        public static Function Tanh(Variable operand, string name = "") { return Op("Tanh", operand, name); }
        public static Function ReLU(Variable operand, string name = "") { return Op("ReLU", operand, name); }
        public static Function Exp(Variable operand, string name = "") { return Op("Exp", operand, name); }
        public static Function Log(Variable operand, string name = "") { return Op("Log", operand, name); }
        public static Function Sqrt(Variable operand, string name = "") { return Op("Sqrt", operand, name); }
        public static Function Square(Variable operand, string name = "") { return ElementTimes(operand, operand, name); }
        public static Function Abs(Variable operand, string name = "") { return Op("Abs", operand, name); }
        public static Function Reciprocal(Variable operand, string name = "") { return Op("Reciprocal", operand, name); }
        public static Function Floor(Variable operand, string name = "") { return Op("Floor", operand, name); }

        // Without an axis: over all static axes of each sample, as CNTK's.
        public static Function Softmax(Variable operand, string name = "") { return Op("Softmax", operand, name); }
        public static Function Softmax(Variable operand, Axis axis, string name = "")
        {
            return Op("Softmax", new[] { operand }, Attrs().SetAxis("axis", EngineAxis(axis)), name);
        }

        public static Function LogSoftmax(Variable operand, string name = "") { return LogSoftmax(operand, new Axis(0), name); }
        public static Function LogSoftmax(Variable operand, Axis axis, string name = "")
        {
            return Op("LogSoftmax", new[] { operand }, Attrs().SetAxis("axis", EngineAxis(axis)), name);
        }

        // Zeroes each element with probability dropoutRate in training (the rest scaled by
        // 1 / (1 - dropoutRate)); evaluation passes the operand through.
        public static Function Dropout(Variable operand, double dropoutRate, uint seed = SentinelValueForAutoSelectRandomSeed, string name = "")
        {
            if (!(dropoutRate >= 0 && dropoutRate < 1)) throw new ArgumentOutOfRangeException("dropoutRate", "Dropout: the rate must be in [0, 1)");
            ulong s = seed;
            if (seed == SentinelValueForAutoSelectRandomSeed) Native.Check(Native.cntk_next_random_seed(out s));
            return Op("Dropout", new[] { operand }, Attrs().Set("rngSeed", (long)s).Set("rngOffset", 0L).Set("dropoutRate", dropoutRate), name);
        }

        // ---------------------------------------------------------------- linear algebra, shapes

        public static Function Splice(IList<Variable> operands, Axis axis, string name = "")
        {
            if (operands == null) throw new ArgumentNullException("operands");
            return Op("Splice", operands.ToArray(), Attrs().SetAxis("axis", EngineAxis(axis)), name);
        }

        public static Function Slice(Variable operand, AxisVector axis, IntVector beginIndex, IntVector endIndex, string name = "")
        {
            return Slice(operand, axis, beginIndex, endIndex, new IntVector(Enumerable.Repeat(1, axis == null ? 0 : axis.Count)), name);
        }

        public static Function Slice(Variable operand, AxisVector axis, IntVector beginIndex, IntVector endIndex, IntVector strides, string name = "")
        {
            if (axis == null || beginIndex == null || endIndex == null || strides == null) throw new ArgumentNullException("axis");
            if (axis.Count == 0 || beginIndex.Count != axis.Count || endIndex.Count != axis.Count || strides.Count != axis.Count)
                throw new ArgumentOutOfRangeException(null, "Slice: axis, beginIndex, endIndex and strides need the same positive length");
            var attrs = Attrs();
            if (axis.Count == 1)
                attrs.SetAxis("axis", EngineAxis(axis[0])).Set("beginIndex", (long)beginIndex[0]).Set("endIndex", (long)endIndex[0]).Set("sliceStrides", (long)strides[0]);
            else
                attrs.SetAxes("axisVec", axis.Select(EngineAxis)).SetInts("beginIndexVec", beginIndex.Select(i => (long)i))
                    .SetInts("endIndexVec", endIndex.Select(i => (long)i)).SetInts("sliceStridesVec", strides.Select(i => (long)i));
            return Op("Slice", new[] { operand }, attrs, name);
        }

        // CNTK's Times(W, x) with W [out, in] (CNTK order) is the engine's x @ W: operands swapped.
        public static Function Times(Variable leftOperand, Variable rightOperand, string name = "") { return Times(leftOperand, rightOperand, 1, -1, name); }
        public static Function Times(Variable leftOperand, Variable rightOperand, uint outputRank, string name = "") { return Times(leftOperand, rightOperand, outputRank, -1, name); }
        public static Function Times(Variable leftOperand, Variable rightOperand, uint outputRank, int inferInputRankToMap, string name = "")
        {
            return Op("Times", new[] { rightOperand, leftOperand },
                Attrs().Set("outputRank", (long)outputRank).Set("inferInputRankToMap", (long)inferInputRankToMap), name);
        }

        public static Function Reshape(Variable operand, NDShape newShape, string name = "")
        {
            return Op("Reshape", new[] { operand }, Attrs().SetInts("newShape", Dims(newShape, "newShape")), name);
        }

        public static Function TransposeAxes(Variable operand, Axis axis1, Axis axis2, string name = "")
        {
            return Op("TransposeAxes", new[] { operand }, Attrs().SetAxis("axis1", EngineAxis(axis1)).SetAxis("axis2", EngineAxis(axis2)), name);
        }

        public static Function ReduceSum(Variable operand, Axis axis, string name = "") { return Reduce("Sum", operand, axis, name); }
        public static Function ReduceMean(Variable operand, Axis axis, string name = "") { return Reduce("Mean", operand, axis, name); }
        public static Function ReduceMax(Variable operand, Axis axis, string name = "") { return Reduce("Max", operand, axis, name); }
        public static Function ReduceMin(Variable operand, Axis axis, string name = "") { return Reduce("Min", operand, axis, name); }
        public static Function ReduceLogSum(Variable operand, Axis axis, string name = "") { return Reduce("LogSum", operand, axis, name); }

        static Function Reduce(string op, Variable operand, Axis axis, string name)
        {
            return Op("ReduceElements", new[] { operand },
                Attrs().Set("reductionOpName", op).SetAxis("axis", EngineAxis(axis)).Set("reductionKeepDimensions", true), name);
        }

        // ---------------------------------------------------------------- losses, metrics

        public static Function CrossEntropyWithSoftmax(Variable prediction, Variable labels, string name = "") { return CrossEntropyWithSoftmax(prediction, labels, new Axis(0), name); }
        public static Function CrossEntropyWithSoftmax(Variable prediction, Variable labels, Axis axis, string name = "")
        {
            return Op("CrossEntropyWithSoftmax", new[] { prediction, labels }, Attrs().SetAxis("axis", EngineAxis(axis)), name);
        }

        public static Function ClassificationError(Variable prediction, Variable labels, string name = "")
        {
            return Op("ClassificationError", prediction, labels, name);
        }

        // 1 unless the label's class is among the topN highest predictions.
        public static Function ClassificationError(Variable prediction, Variable labels, uint topN, string name = "")
        {
            if (topN < 1) throw new ArgumentOutOfRangeException("topN", "ClassificationError: topN must be positive");
            if (topN == 1) return ClassificationError(prediction, labels, name);
            return Op("ClassificationError", new Variable[] { prediction, labels, Constant.Scalar(prediction.DataType, topN) }, null, name);
        }

        // The sum of squared differences over all static axes, one scalar per sample (a composition,
        // as in CNTK's Python API: the engine has no SquaredError primitive).
        public static Function SquaredError(Variable prediction, Variable targets, string name = "")
        {
            Function diff = Minus(prediction, targets);
            return Op("ReduceElements", new Variable[] { ElementTimes(diff, diff) },
                Attrs().Set("reductionOpName", "Sum").SetAxis("axis", Axis.AllStaticAxes()).Set("reductionKeepDimensions", false), name);
        }

        // ---------------------------------------------------------------- normalization

        public static Function PerDimMeanVarianceNormalize(Variable operand, NDArrayView mean, NDArrayView invStdDev, string name = "")
        {
            return PerDimMeanVarianceNormalize(operand, new Constant(mean), new Constant(invStdDev), name);
        }

        // (operand - mean) * invStdDev, as a block so that it saves and prints as one op.
        public static Function PerDimMeanVarianceNormalize(Variable operand, Variable mean, Variable invStdDev, string name = "")
        {
            var x = Variable.PlaceholderVariable(new NDShape(new[] { -2 }), new List<Axis>());
            var m = Variable.PlaceholderVariable(new NDShape(new[] { -2 }), new List<Axis>());
            var s = Variable.PlaceholderVariable(new NDShape(new[] { -2 }), new List<Axis>());
            Function body = ElementTimes(Minus(x, m), s);
            IntPtr[] ph = Variable.Handles(new[] { x, m, s }, "placeholder");
            IntPtr[] args = Variable.Handles(new[] { operand, mean, invStdDev }, "operand");
            IntPtr h;
            Native.Check(Native.cntk_function_as_block(body.Handle, ph, args, (UIntPtr)3, "PerDimMeanVarianceNormalize", name ?? "", out h));
            return new Function(h);
        }

        // ---------------------------------------------------------------- convolution, pooling

        public static Function Convolution(Variable convolutionMap, Variable operand, NDShape strides = null, BoolVector sharing = null,
            BoolVector autoPadding = null, NDShape dilation = null, uint reductionRank = 1, uint groups = 1,
            uint maxTempMemSizeInSamples = 0, bool sequential = false, string name = "")
        {
            if (sequential) throw new NotImplementedException("Convolution: sequential convolution is not available through the C# API yet");
            var attrs = Attrs()
                .SetInts("strides", Dims(strides ?? new[] { 1 }, "strides"))
                .SetBools("sharing", (sharing ?? new BoolVector { true }).AsEnumerable().Reverse())
                .SetBools("autoPadding", (autoPadding ?? new BoolVector { true }).AsEnumerable().Reverse())
                .SetInts("dilation", Dims(dilation ?? new[] { 1 }, "dilation"))
                .Set("reductionRank", (long)reductionRank).Set("groups", (long)groups)
                .Set("maxTempMemSizeInSamples", (long)maxTempMemSizeInSamples).Set("transpose", false).Set("sequential", false);
            return Op("Convolution", new[] { convolutionMap, operand }, attrs, name);
        }

        public static Function Pooling(Variable operand, PoolingType poolingType, NDShape poolingWindowShape, NDShape strides = null,
            BoolVector autoPadding = null, bool ceilOutDim = false, bool includePad = false, string name = "")
        {
            var attrs = Attrs()
                .Set("poolingType", (long)poolingType)
                .SetInts("poolingWindowShape", Dims(poolingWindowShape, "poolingWindowShape"))
                .SetInts("strides", Dims(strides ?? new[] { 1 }, "strides"))
                .SetBools("autoPadding", (autoPadding ?? new BoolVector { false }).AsEnumerable().Reverse())
                .Set("ceilOutDim", ceilOutDim).Set("includePad", includePad);
            return Op("Pooling", new[] { operand }, attrs, name);
        }

        // ---------------------------------------------------------------- sequences

        public static Function PastValue(Variable operand, uint offset = 1, string name = "") { return Delay("PastValue", operand, null, offset, name); }
        public static Function PastValue(Variable operand, Variable initialState, uint offset = 1, string name = "") { return Delay("PastValue", operand, initialState, offset, name); }
        public static Function FutureValue(Variable operand, uint offset = 1, string name = "") { return Delay("FutureValue", operand, null, offset, name); }
        public static Function FutureValue(Variable operand, Variable initialState, uint offset = 1, string name = "") { return Delay("FutureValue", operand, initialState, offset, name); }

        static Function Delay(string op, Variable operand, Variable initialState, uint offset, string name)
        {
            if (operand == null) throw new ArgumentNullException("operand");
            Variable init = initialState ?? Constant.Scalar(operand.DataType, 0.0);
            return Op(op, new[] { operand, init }, Attrs().Set("offset", (long)offset), name);
        }

        public static Function SequenceFirst(Variable operand, string name = "") { return SequenceStep(operand, 0, 1, name); }
        public static Function SequenceLast(Variable operand, string name = "") { return SequenceStep(operand, -1, 0, name); }

        // One step of each sequence, without a sequence axis: a one-step slice reduced over the
        // operand's sequence axis.
        static Function SequenceStep(Variable operand, int begin, int end, string name)
        {
            Function slice = Op("SequenceSlice", new[] { operand }, Attrs().Set("beginIndex", (long)begin).Set("endIndex", (long)end), "");
            return Op("ReduceElements", new Variable[] { slice },
                Attrs().Set("reductionOpName", "Sum").SetAxis("axis", Axis.OperandSequenceAxis()).Set("reductionKeepDimensions", true), name);
        }

        // ---------------------------------------------------------------- initializers

        static CNTKDictionary Initializer(string type, double scale, int outputRank, int filterRank, uint seed)
        {
            return new CNTKDictionary().Set("type", type).Set("scale", scale).Set("outputRank", (long)outputRank)
                .Set("filterRank", (long)filterRank).Set("randomSeed", seed == SentinelValueForAutoSelectRandomSeed ? -1L : (long)seed);
        }

        public static CNTKDictionary ConstantInitializer(double value = 0.0) { return new CNTKDictionary().Set("type", "constant").Set("value", value); }
        public static CNTKDictionary UniformInitializer(double scale, uint seed = SentinelValueForAutoSelectRandomSeed) { return Initializer("uniform", scale, SentinelValueForInferParamInitRank, SentinelValueForInferParamInitRank, seed); }

        public static CNTKDictionary NormalInitializer(double scale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, uint seed = SentinelValueForAutoSelectRandomSeed) { return Initializer("normal", scale, outputRank, filterRank, seed); }
        public static CNTKDictionary XavierInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, uint seed = SentinelValueForAutoSelectRandomSeed) { return Initializer("xavier", scale, outputRank, filterRank, seed); }
        public static CNTKDictionary GlorotUniformInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, uint seed = SentinelValueForAutoSelectRandomSeed) { return Initializer("glorot_uniform", scale, outputRank, filterRank, seed); }
        public static CNTKDictionary GlorotNormalInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, uint seed = SentinelValueForAutoSelectRandomSeed) { return Initializer("glorot_normal", scale, outputRank, filterRank, seed); }
        public static CNTKDictionary HeUniformInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, uint seed = SentinelValueForAutoSelectRandomSeed) { return Initializer("he_uniform", scale, outputRank, filterRank, seed); }
        public static CNTKDictionary HeNormalInitializer(double scale = DefaultParamInitScale, int outputRank = SentinelValueForInferParamInitRank, int filterRank = SentinelValueForInferParamInitRank, uint seed = SentinelValueForAutoSelectRandomSeed) { return Initializer("he_normal", scale, outputRank, filterRank, seed); }

        // ---------------------------------------------------------------- readers

        internal const string CTFSpecKey = "__ctf";

        /// <summary>A CTF deserializer for MinibatchSourceConfig.</summary>
        public static CNTKDictionary CTFDeserializer(string fileName, StreamConfigurationVector streams)
        {
            if (fileName == null) throw new ArgumentNullException("fileName");
            if (streams == null) throw new ArgumentNullException("streams");
            var d = new CNTKDictionary().Set("type", "CNTKTextFormatDeserializer").Set("file", fileName);
            d.Entries[CTFSpecKey] = Tuple.Create(fileName, new StreamConfigurationVector(streams));
            return d;
        }

        public static MinibatchSource CreateCompositeMinibatchSource(MinibatchSourceConfig configuration)
        {
            return MinibatchSource.Create(configuration);
        }

        // ---------------------------------------------------------------- random, schedules

        public static void SetFixedRandomSeed(uint value) { Native.Check(Native.cntk_set_fixed_random_seed(value)); }

        public static TrainingParameterScheduleDouble MomentumAsTimeConstantSchedule(double timeConstant)
        {
            return TrainingParameterScheduleDouble.FromTimeConstants(new[] { timeConstant }, null, 0);
        }
    }
}
