// Training: schedules, learners, the Trainer, and CTF minibatch sources.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.InteropServices;

namespace CNTK
{
    /// <summary>A hyper-parameter as a step function of the samples (or sweeps) seen, with the
    /// reference minibatch size its values were set for (0: as is, per minibatch).</summary>
    public class TrainingParameterScheduleDouble : NativeObject
    {
        internal TrainingParameterScheduleDouble(IntPtr h) : base(h, Native.cntk_schedule_release) { }

        public TrainingParameterScheduleDouble(double value, uint minibatchSize = 0)
            : base(Create(new[] { value }, null, 0, minibatchSize), Native.cntk_schedule_release) { }

        // Each pair (count, value): the value holds for count epochs of epochSize samples (epochSize
        // 0: count sweeps); the last value holds from then on.
        public TrainingParameterScheduleDouble(VectorPairSizeTDouble schedule, uint epochSize = FullDataSweep, uint minibatchSize = IgnoredMinibatchSize)
            : base(Create(schedule.Select(p => p.second).ToArray(), schedule.Select(p => (UIntPtr)p.first).ToArray(), epochSize, minibatchSize), Native.cntk_schedule_release) { }

        public const uint FullDataSweep = 0;
        public const uint IgnoredMinibatchSize = 0;

        static IntPtr Create(double[] values, UIntPtr[] counts, uint epochSize, uint minibatchSize)
        {
            IntPtr h;
            Native.Check(Native.cntk_schedule_create(values, counts, (UIntPtr)values.Length, (UIntPtr)epochSize, (UIntPtr)minibatchSize, out h));
            return h;
        }

        internal static TrainingParameterScheduleDouble FromTimeConstants(double[] values, UIntPtr[] counts, uint epochSize)
        {
            IntPtr h;
            Native.Check(Native.cntk_schedule_momentum_as_time_constant(values, counts, (UIntPtr)values.Length, (UIntPtr)epochSize, out h));
            return new TrainingParameterScheduleDouble(h);
        }

        public bool IsSweepBased() { return Info().Item1 == 0; }
        public uint GetMinibatchSize() { return Info().Item2; }

        Tuple<uint, uint> Info()
        {
            UIntPtr epoch, mb;
            Native.Check(Native.cntk_schedule_info(Handle, out epoch, out mb));
            return Tuple.Create((uint)epoch, (uint)mb);
        }

        public double this[uint count] { get { double v; Native.Check(Native.cntk_schedule_value_at(Handle, (UIntPtr)count, out v)); return v; } }
        public double GetScheduleValue(uint count) { return this[count]; }
    }

    public class PairSizeTDouble
    {
        public uint first { get; set; }
        public double second { get; set; }
        public PairSizeTDouble() { }
        public PairSizeTDouble(uint t, double u) { first = t; second = u; }
    }

    public class VectorPairSizeTDouble : List<PairSizeTDouble>
    {
        public VectorPairSizeTDouble() { }
        public VectorPairSizeTDouble(IEnumerable<PairSizeTDouble> pairs) : base(pairs) { }
    }

    /// <summary>CNTK's AdditionalLearningOptions.</summary>
    public class AdditionalLearningOptions
    {
        public double l1RegularizationWeight = 0.0;
        public double l2RegularizationWeight = 0.0;
        public double gradientClippingThresholdPerSample = double.PositiveInfinity;
        public bool gradientClippingWithTruncation = true;

        internal Native.LearnerOptions ToNative()
        {
            var o = new Native.LearnerOptions();
            o.StructSize = (UIntPtr)Marshal.SizeOf(typeof(Native.LearnerOptions));
            o.L1 = l1RegularizationWeight;
            o.L2 = l2RegularizationWeight;
            o.ClippingThreshold = double.IsInfinity(gradientClippingThresholdPerSample) ? 0 : gradientClippingThresholdPerSample;
            o.ClippingWithTruncation = gradientClippingWithTruncation ? 1 : 0;
            return o;
        }
    }

    /// <summary>Updates a set of parameters from their gradients.</summary>
    public class Learner : NativeObject
    {
        internal Learner(IntPtr h) : base(h, Native.cntk_learner_release) { }

        internal static Learner Create(string kind, IList<Parameter> parameters, TrainingParameterScheduleDouble learningRate,
            TrainingParameterScheduleDouble momentum, TrainingParameterScheduleDouble varianceMomentum, CNTKDictionary extra,
            AdditionalLearningOptions options)
        {
            IntPtr[] ps = Variable.Handles(parameters == null ? null : parameters.Cast<Variable>(), "parameters");
            var o = (options ?? new AdditionalLearningOptions()).ToNative();
            IntPtr h;
            try
            {
                Native.Check(Native.cntk_learner_create(kind, ps, (UIntPtr)ps.Length, HandleOf(learningRate, "learningRateSchedule"),
                    momentum == null ? IntPtr.Zero : momentum.Handle, varianceMomentum == null ? IntPtr.Zero : varianceMomentum.Handle,
                    extra == null ? IntPtr.Zero : extra.Handle, ref o, out h));
            }
            finally
            {
                if (extra != null) extra.Dispose();
            }
            return new Learner(h);
        }

        static CNTKDictionary UnitGain(bool unitGain) { return new CNTKDictionary().Set("unitGain", unitGain); }

        public static Learner SGDLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule, AdditionalLearningOptions additionalOptions = null)
        {
            return Create("sgd", parameters, learningRateSchedule, null, null, null, additionalOptions);
        }

        public static Learner MomentumSGDLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
            TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true, AdditionalLearningOptions additionalOptions = null)
        {
            return Create("momentum_sgd", parameters, learningRateSchedule, momentumSchedule, null, UnitGain(unitGain), additionalOptions);
        }

        public static Learner NesterovLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
            TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true, AdditionalLearningOptions additionalOptions = null)
        {
            return Create("nesterov", parameters, learningRateSchedule, momentumSchedule, null, UnitGain(unitGain), additionalOptions);
        }

        public static Learner AdamLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
            TrainingParameterScheduleDouble momentumSchedule, bool unitGain = true, TrainingParameterScheduleDouble varianceMomentumSchedule = null,
            double epsilon = 1e-8, bool adamax = false, AdditionalLearningOptions additionalOptions = null)
        {
            return Create(adamax ? "adamax" : "adam", parameters, learningRateSchedule, momentumSchedule, varianceMomentumSchedule,
                UnitGain(unitGain).Set("epsilon", epsilon), additionalOptions);
        }

        public static Learner AdaGradLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
            bool needAveMultiplier = true, AdditionalLearningOptions additionalOptions = null)
        {
            return Create("adagrad", parameters, learningRateSchedule, null, null, new CNTKDictionary().Set("needAveMultiplier", needAveMultiplier), additionalOptions);
        }

        public static Learner RMSPropLearner(IList<Parameter> parameters, TrainingParameterScheduleDouble learningRateSchedule,
            double gamma, double inc, double dec, double max, double min, bool needAveMultiplier = true, AdditionalLearningOptions additionalOptions = null)
        {
            var extra = new CNTKDictionary().Set("gamma", gamma).Set("inc", inc).Set("dec", dec).Set("max", max).Set("min", min).Set("needAveMultiplier", needAveMultiplier);
            return Create("rmsprop", parameters, learningRateSchedule, null, null, extra, additionalOptions);
        }

        public double LearningRate() { double v; Native.Check(Native.cntk_learner_learning_rate(Handle, out v)); return v; }
        public void ResetLearningRate(TrainingParameterScheduleDouble learningRateSchedule) { Native.Check(Native.cntk_learner_reset_learning_rate(Handle, HandleOf(learningRateSchedule, "learningRateSchedule"))); }
        public uint TotalNumberOfSamplesSeen() { UIntPtr n; Native.Check(Native.cntk_learner_samples_seen(Handle, out n)); return (uint)n; }
    }

    /// <summary>Trains a model: forward, backward from the loss, learner updates per minibatch.</summary>
    public class Trainer : NativeObject
    {
        readonly Function model, loss, evaluation;

        Trainer(IntPtr h, Function model, Function loss, Function evaluation) : base(h, Native.cntk_trainer_release)
        {
            this.model = model;
            this.loss = loss;
            this.evaluation = evaluation;
        }

        public static Trainer CreateTrainer(Function model, Function lossFunction, Function evaluationFunction, IList<Learner> parameterLearners)
        {
            if (parameterLearners == null) throw new ArgumentNullException("parameterLearners");
            IntPtr[] ls = parameterLearners.Select(l => HandleOf(l, "parameterLearners")).ToArray();
            IntPtr h;
            Native.Check(Native.cntk_trainer_create(model == null ? IntPtr.Zero : model.Handle, HandleOf(lossFunction, "lossFunction"),
                evaluationFunction == null ? IntPtr.Zero : evaluationFunction.Handle, ls, (UIntPtr)ls.Length, out h));
            return new Trainer(h, model, lossFunction, evaluationFunction);
        }

        bool Train(ICollection<Variable> vars, IEnumerable<Value> values, bool sweepEnd)
        {
            IntPtr[] args = Variable.Handles(vars, "arguments");
            IntPtr[] vals = values.Select(v => HandleOf(v, "argument value")).ToArray();
            int updated;
            Native.Check(Native.cntk_trainer_train_minibatch(Handle, args, vals, (UIntPtr)args.Length, sweepEnd ? 1 : 0, out updated));
            return updated != 0;
        }

        [Obsolete("TrainMinibatch() without isSweepEndInarguments is deprecated; use the overload that takes it")]
        public bool TrainMinibatch(IDictionary<Variable, Value> arguments, DeviceDescriptor computeDevice)
        {
            return TrainMinibatch(arguments, false, computeDevice);
        }

        public bool TrainMinibatch(IDictionary<Variable, Value> arguments, bool isSweepEndInArguments, DeviceDescriptor computeDevice)
        {
            if (arguments == null) throw new ArgumentNullException("arguments");
            return Train(arguments.Keys, arguments.Values, isSweepEndInArguments);
        }

        public bool TrainMinibatch(IDictionary<Variable, MinibatchData> arguments, DeviceDescriptor computeDevice)
        {
            if (arguments == null) throw new ArgumentNullException("arguments");
            if (arguments.Values.Any(d => d == null)) throw new ArgumentNullException("arguments", "a minibatch entry is null");
            return Train(arguments.Keys, arguments.Values.Select(d => d.data), arguments.Values.Any(d => d.sweepEnd));
        }

        public double TestMinibatch(IDictionary<Variable, Value> arguments, DeviceDescriptor computeDevice)
        {
            if (arguments == null) throw new ArgumentNullException("arguments");
            IntPtr[] args = Variable.Handles(arguments.Keys, "arguments");
            IntPtr[] vals = arguments.Values.Select(v => HandleOf(v, "argument value")).ToArray();
            double avg;
            Native.Check(Native.cntk_trainer_test_minibatch(Handle, args, vals, (UIntPtr)args.Length, out avg));
            return avg;
        }

        public double TestMinibatch(IDictionary<Variable, MinibatchData> arguments, DeviceDescriptor computeDevice)
        {
            return TestMinibatch(arguments.ToDictionary(kv => kv.Key, kv => kv.Value.data), computeDevice);
        }

        public double PreviousMinibatchLossAverage() { double v; Native.Check(Native.cntk_trainer_previous_minibatch_loss_average(Handle, out v)); return v; }
        public double PreviousMinibatchEvaluationAverage() { double v; Native.Check(Native.cntk_trainer_previous_minibatch_evaluation_average(Handle, out v)); return v; }
        public uint PreviousMinibatchSampleCount() { UIntPtr v; Native.Check(Native.cntk_trainer_previous_minibatch_sample_count(Handle, out v)); return (uint)v; }
        public uint TotalNumberOfSamplesSeen() { UIntPtr v; Native.Check(Native.cntk_trainer_total_samples_seen(Handle, out v)); return (uint)v; }

        public Function Model() { return model; }
        public Function LossFunction() { return loss; }
        public Function EvaluationFunction() { return evaluation; }

        public void SaveCheckpoint(string filePath) { Native.Check(Native.cntk_trainer_save_checkpoint(Handle, filePath)); }
        public void RestoreFromCheckpoint(string filePath) { Native.Check(Native.cntk_trainer_restore_checkpoint(Handle, filePath)); }
    }

    public class StreamConfigurationVector : List<StreamConfiguration>
    {
        public StreamConfigurationVector() { }
        public StreamConfigurationVector(IEnumerable<StreamConfiguration> streams) : base(streams) { }
        public static implicit operator StreamConfigurationVector(StreamConfiguration[] streams) { return new StreamConfigurationVector(streams); }
    }

    public class DictionaryVector : List<CNTKDictionary>
    {
        public DictionaryVector() { }
        public DictionaryVector(IEnumerable<CNTKDictionary> dictionaries) : base(dictionaries) { }
    }

    /// <summary>CNTK's MinibatchSourceConfig: deserializers (CNTKLib.CTFDeserializer) and how to read them.</summary>
    public class MinibatchSourceConfig
    {
        public MinibatchSourceConfig(IList<CNTKDictionary> deserializers, bool randomize = true)
        {
            this.deserializers = new DictionaryVector(deserializers ?? new List<CNTKDictionary>());
            this.randomize = randomize;
        }

        public DictionaryVector deserializers { get; set; }
        public bool randomize { get; set; }
        public ulong MaxSamples { get; set; } = MinibatchSource.InfinitelyRepeat;
        public ulong MaxSweeps { get; set; } = MinibatchSource.InfinitelyRepeat;
        public uint randomizationWindowInChunks { get; set; } = (uint)MinibatchSource.DefaultRandomizationWindowInChunks;
        public uint randomizationWindowInSamples { get; set; }
        public uint randomizationSeed { get; set; }
        public uint truncationLength { get; set; }
        public bool isFrameModeEnabled { get; set; }

        public ulong GetMaxSamples() { return MaxSamples; }
        public void SetMaxSamples(ulong value) { MaxSamples = value; }
        public ulong GetMaxSweeps() { return MaxSweeps; }
        public void SetMaxSweeps(ulong value) { MaxSweeps = value; }
    }

    /// <summary>One stream of a CTF file: its name, sample dimension, sparse or dense, and its
    /// alias in the file (the name when empty).</summary>
    public class StreamConfiguration
    {
        public string m_streamName;
        public int m_dim;
        public bool m_isSparse;
        public string m_streamAlias;
        public bool m_definesMbSize;

        public StreamConfiguration(string streamName, int dim, bool isSparse = false, string streamAlias = "", bool definesMbSize = false)
        {
            m_streamName = streamName;
            m_dim = dim;
            m_isSparse = isSparse;
            m_streamAlias = streamAlias;
            m_definesMbSize = definesMbSize;
        }
    }

    public enum StorageFormat { Dense = 0, SparseCSC = 1, SparseBlockCol = 2 }

    /// <summary>A stream of a minibatch source, as GetNextMinibatch keys its data.</summary>
    public sealed class StreamInformation
    {
        public string m_name { get; internal set; }
        public uint m_id { get; internal set; }
        public StorageFormat m_storageFormat { get; internal set; }
        public DataType m_elementType { get; internal set; }
        public NDShape m_sampleLayout { get; internal set; }

        public override bool Equals(object obj)
        {
            var s = obj as StreamInformation;
            return s != null && s.m_id == m_id && s.m_name == m_name;
        }

        public override int GetHashCode() { return m_name.GetHashCode() ^ (int)m_id; }
        public override string ToString() { return m_name; }
    }

    /// <summary>One stream's part of a minibatch.</summary>
    public class MinibatchData
    {
        public Value data { get; internal set; }
        public uint numberOfSequences { get; internal set; }
        public uint numberOfSamples { get; internal set; }
        public bool sweepEnd { get; internal set; }
    }

    public class UnorderedMapStreamInformationMinibatchData : Dictionary<StreamInformation, MinibatchData> { }

    /// <summary>Reads minibatches from data files (CNTK's CTF format).</summary>
    public class MinibatchSource : NativeObject
    {
        public const ulong InfinitelyRepeat = ulong.MaxValue;
        public const ulong FullDataSweep = ulong.MaxValue - 2;
        public const ulong DefaultRandomizationWindowInChunks = 128;

        readonly List<StreamInformation> streams = new List<StreamInformation>();

        internal MinibatchSource(IntPtr h) : base(h, Native.cntk_minibatch_source_release)
        {
            UIntPtr n;
            Native.Check(Native.cntk_minibatch_source_num_streams(h, out n));
            for (uint i = 0; i < (uint)n; ++i)
            {
                UIntPtr len, dim;
                int dtype, sparse;
                Native.Check(Native.cntk_minibatch_source_stream(h, (UIntPtr)i, null, UIntPtr.Zero, out len, out dtype, out dim, out sparse));
                var name = new byte[(int)len + 1];
                Native.Check(Native.cntk_minibatch_source_stream(h, (UIntPtr)i, name, (UIntPtr)name.Length, out len, out dtype, out dim, out sparse));
                streams.Add(new StreamInformation
                {
                    m_name = System.Text.Encoding.UTF8.GetString(name, 0, (int)len),
                    m_id = i,
                    m_storageFormat = sparse != 0 ? StorageFormat.SparseCSC : StorageFormat.Dense,
                    m_elementType = (DataType)dtype,
                    m_sampleLayout = new[] { (int)dim },
                });
            }
        }

        public static MinibatchSource TextFormatMinibatchSource(string dataFilePath, IList<StreamConfiguration> streamConfigs,
            ulong epochSize = InfinitelyRepeat, bool randomize = true, ulong randomizationWindow = DefaultRandomizationWindowInChunks,
            bool sampleBasedRandomizationWindow = false)
        {
            if (dataFilePath == null) throw new ArgumentNullException("dataFilePath");
            if (streamConfigs == null) throw new ArgumentNullException("streamConfigs");
            if (sampleBasedRandomizationWindow) throw new NotImplementedException("TextFormatMinibatchSource: a randomization window in samples is not supported through the C# API yet");
            var strings = new List<IntPtr>();
            try
            {
                Native.StreamConfig[] configs = Marshal(streamConfigs, strings);
                IntPtr h;
                Native.Check(Native.cntk_minibatch_source_ctf(dataFilePath, configs, (UIntPtr)configs.Length, epochSize, randomize ? 1 : 0, (UIntPtr)randomizationWindow, 0, out h));
                return new MinibatchSource(h);
            }
            finally
            {
                foreach (var p in strings) System.Runtime.InteropServices.Marshal.FreeHGlobal(p);
            }
        }

        // Native stream descriptions; the strings they point to are added to `strings` to be freed.
        static Native.StreamConfig[] Marshal(IList<StreamConfiguration> streamConfigs, List<IntPtr> strings)
        {
            return streamConfigs.Select(c =>
            {
                if (c == null) throw new ArgumentNullException("streamConfigs");
                var s = new Native.StreamConfig();
                s.Name = System.Runtime.InteropServices.Marshal.StringToHGlobalAnsi(c.m_streamName);
                strings.Add(s.Name);
                if (!string.IsNullOrEmpty(c.m_streamAlias))
                {
                    s.Alias = System.Runtime.InteropServices.Marshal.StringToHGlobalAnsi(c.m_streamAlias);
                    strings.Add(s.Alias);
                }
                if (c.m_dim <= 0) throw new ArgumentOutOfRangeException(null, "stream '" + c.m_streamName + "': the dimension must be positive");
                s.Dim = (UIntPtr)c.m_dim;
                s.IsSparse = c.m_isSparse ? 1 : 0;
                return s;
            }).ToArray();
        }

        internal static MinibatchSource Create(MinibatchSourceConfig config)
        {
            if (config == null) throw new ArgumentNullException("configuration");
            if (config.deserializers == null || config.deserializers.Count == 0)
                throw new ArgumentOutOfRangeException(null, "MinibatchSourceConfig: no deserializers");
            var strings = new List<IntPtr>();
            var arrays = new List<IntPtr>();
            try
            {
                var paths = new List<IntPtr>();
                var streams = new List<IntPtr>();
                var counts = new List<UIntPtr>();
                foreach (var d in config.deserializers)
                {
                    object spec;
                    if (d == null || !d.Entries.TryGetValue(CNTKLib.CTFSpecKey, out spec))
                        throw new NotImplementedException("MinibatchSourceConfig: only deserializers made by CNTKLib.CTFDeserializer are supported");
                    var ctf = (Tuple<string, StreamConfigurationVector>)spec;
                    IntPtr path = System.Runtime.InteropServices.Marshal.StringToHGlobalAnsi(ctf.Item1);
                    strings.Add(path);
                    paths.Add(path);
                    Native.StreamConfig[] configs = Marshal(ctf.Item2, strings);
                    int size = System.Runtime.InteropServices.Marshal.SizeOf(typeof(Native.StreamConfig));
                    IntPtr block = System.Runtime.InteropServices.Marshal.AllocHGlobal(size * Math.Max(1, configs.Length));
                    arrays.Add(block);
                    for (int i = 0; i < configs.Length; ++i)
                        System.Runtime.InteropServices.Marshal.StructureToPtr(configs[i], block + i * size, false);
                    streams.Add(block);
                    counts.Add((UIntPtr)configs.Length);
                }
                var c = new Native.SourceConfig();
                c.StructSize = (UIntPtr)System.Runtime.InteropServices.Marshal.SizeOf(typeof(Native.SourceConfig));
                // CNTK: FullDataSweep as the sample count means one sweep.
                bool oneSweep = config.MaxSamples == FullDataSweep;
                c.MaxSamples = oneSweep || config.MaxSamples == InfinitelyRepeat ? 0 : config.MaxSamples;
                c.MaxSweeps = oneSweep ? 1 : config.MaxSweeps == InfinitelyRepeat ? 0 : config.MaxSweeps;
                c.Randomize = config.randomize ? 1 : 0;
                c.WindowInChunks = (UIntPtr)config.randomizationWindowInChunks;
                c.WindowInSamples = (UIntPtr)config.randomizationWindowInSamples;
                c.Seed = config.randomizationSeed;
                c.FrameMode = config.isFrameModeEnabled ? 1 : 0;
                c.TruncationLength = (UIntPtr)config.truncationLength;
                IntPtr h;
                Native.Check(Native.cntk_minibatch_source_create_ctf(paths.ToArray(), streams.ToArray(), counts.ToArray(), (UIntPtr)paths.Count, ref c, out h));
                return new MinibatchSource(h);
            }
            finally
            {
                foreach (var p in strings) System.Runtime.InteropServices.Marshal.FreeHGlobal(p);
                foreach (var p in arrays) System.Runtime.InteropServices.Marshal.FreeHGlobal(p);
            }
        }

        public IList<StreamInformation> StreamInfos() { return streams.AsReadOnly(); }

        public StreamInformation StreamInfo(string streamName)
        {
            var s = streams.FirstOrDefault(i => i.m_name == streamName);
            if (s == null) throw new ArgumentOutOfRangeException(null, "MinibatchSource: no stream named '" + streamName + "'");
            return s;
        }

        public StreamInformation StreamInfo(Variable variableToMatch) { return StreamInfo(variableToMatch.Name); }

        /// <summary>The next minibatch per stream; empty at the end of the data.</summary>
        public UnorderedMapStreamInformationMinibatchData GetNextMinibatch(uint minibatchSizeInSamples, DeviceDescriptor device = null)
        {
            return GetNextMinibatch(0, minibatchSizeInSamples, 1, 0, device);
        }

        public UnorderedMapStreamInformationMinibatchData GetNextMinibatch(uint minibatchSizeInSequences, uint minibatchSizeInSamples, uint numberOfWorkers, uint workerRank, DeviceDescriptor device = null)
        {
            if (minibatchSizeInSequences != 0) throw new NotImplementedException("GetNextMinibatch: a minibatch size in sequences is not supported");
            IntPtr mb;
            Native.Check(Native.cntk_minibatch_source_next(Handle, (UIntPtr)minibatchSizeInSamples, (UIntPtr)numberOfWorkers, (UIntPtr)workerRank, out mb));
            var result = new UnorderedMapStreamInformationMinibatchData();
            if (mb == IntPtr.Zero) return result;
            try
            {
                foreach (var s in streams)
                {
                    IntPtr v;
                    UIntPtr seqs, samples;
                    int sweepEnd;
                    Native.Check(Native.cntk_minibatch_stream(mb, (UIntPtr)s.m_id, out v, out seqs, out samples, out sweepEnd));
                    result[s] = new MinibatchData
                    {
                        data = v == IntPtr.Zero ? null : new Value(v),
                        numberOfSequences = (uint)seqs,
                        numberOfSamples = (uint)samples,
                        sweepEnd = sweepEnd != 0,
                    };
                }
            }
            finally
            {
                Native.cntk_minibatch_release(mb);
            }
            return result;
        }

        /// <summary>Per-dimension mean and inverse standard deviation of each requested dense stream,
        /// read from the source to its end in one pass (entries already holding arrays keep them).</summary>
        public static void ComputeInputPerDimMeansAndInvStdDevs(MinibatchSource minibatchSource,
            IDictionary<StreamInformation, Tuple<NDArrayView, NDArrayView>> computedMeanAndInvStdDevs, DeviceDescriptor device)
        {
            if (minibatchSource == null) throw new ArgumentNullException("minibatchSource");
            if (computedMeanAndInvStdDevs == null) throw new ArgumentNullException("computedMeanAndInvStdDevs");
            var keys = computedMeanAndInvStdDevs.Keys.ToList();
            UIntPtr[] ids = keys.Select(k => (UIntPtr)minibatchSource.StreamInfo(k.m_name).m_id).ToArray();
            var means = new IntPtr[ids.Length];
            var invs = new IntPtr[ids.Length];
            Native.Check(Native.cntk_minibatch_source_mean_inv_stddev(minibatchSource.Handle, ids, (UIntPtr)ids.Length, means, invs));
            for (int i = 0; i < keys.Count; ++i)
            {
                var old = computedMeanAndInvStdDevs[keys[i]];
                var mean = new NDArrayView(means[i]);
                var inv = new NDArrayView(invs[i]);
                if (old != null && old.Item1 != null) { mean.Dispose(); mean = old.Item1; }
                if (old != null && old.Item2 != null) { inv.Dispose(); inv = old.Item2; }
                computedMeanAndInvStdDevs[keys[i]] = new Tuple<NDArrayView, NDArrayView>(mean, inv);
            }
        }
    }
}
