// Data: NDArrayView (a dense or sparse tensor) and Value (a batch, or a batch of sequences).
using System;
using System.Collections.Generic;
using System.Linq;

namespace CNTK
{
    /// <summary>A tensor on a device. Shapes are in CNTK's order; data is laid out with the
    /// first dimension fastest (which is the engine's row-major order over the reversed shape).</summary>
    public class NDArrayView : NativeObject
    {
        internal NDArrayView(IntPtr h) : base(h, Native.cntk_ndarray_release) { }

        public NDArrayView(NDShape viewShape, float[] dataBuffer, DeviceDescriptor device, bool readOnly = false)
            : base(CreateDense(viewShape, dataBuffer), Native.cntk_ndarray_release) { }

        public NDArrayView(NDShape viewShape, double[] dataBuffer, DeviceDescriptor device, bool readOnly = false)
            : base(CreateDense(viewShape, dataBuffer), Native.cntk_ndarray_release) { }

        // A sparse array in CNTK's CSC layout: column j (one sample) holds the entries
        // colStarts[j] .. colStarts[j+1] of rowIndices / nonZeroValues.
        public NDArrayView(NDShape viewShape, int[] colStarts, int[] rowIndices, float[] nonZeroValues, DeviceDescriptor device, bool readOnly = false)
            : base(CreateSparse(viewShape, colStarts, rowIndices, nonZeroValues, null), Native.cntk_ndarray_release) { }

        public NDArrayView(NDShape viewShape, int[] colStarts, int[] rowIndices, double[] nonZeroValues, DeviceDescriptor device, bool readOnly = false)
            : base(CreateSparse(viewShape, colStarts, rowIndices, null, nonZeroValues), Native.cntk_ndarray_release) { }

        static void CheckCount(NDShape shape, int count)
        {
            if (shape == null) throw new ArgumentNullException("viewShape");
            if (shape.TotalSize != count)
                throw new ArgumentOutOfRangeException(null, "NDArrayView: the shape " + shape.AsString() + " needs " + shape.TotalSize + " values, got " + count);
        }

        static IntPtr CreateDense(NDShape shape, float[] data)
        {
            if (data == null) throw new ArgumentNullException("dataBuffer");
            CheckCount(shape, data.Length);
            long[] dims = shape.ToEngine();
            IntPtr h;
            Native.Check(Native.cntk_ndarray_create_dense((int)DataType.Float, dims, (UIntPtr)dims.Length, data, out h));
            return h;
        }

        static IntPtr CreateDense(NDShape shape, double[] data)
        {
            if (data == null) throw new ArgumentNullException("dataBuffer");
            CheckCount(shape, data.Length);
            long[] dims = shape.ToEngine();
            IntPtr h;
            Native.Check(Native.cntk_ndarray_create_dense_d((int)DataType.Double, dims, (UIntPtr)dims.Length, data, out h));
            return h;
        }

        static IntPtr CreateSparse(NDShape shape, int[] colStarts, int[] rowIndices, float[] f, double[] d)
        {
            if (shape == null) throw new ArgumentNullException("viewShape");
            if (colStarts == null) throw new ArgumentNullException("colStarts");
            if (rowIndices == null) throw new ArgumentNullException("rowIndices");
            long[] dims = shape.ToEngine();
            int nnz = rowIndices.Length;
            if ((f != null ? f.Length : d.Length) != nnz)
                throw new ArgumentOutOfRangeException(null, "NDArrayView: rowIndices and nonZeroValues differ in length");
            IntPtr h;
            long[] starts = colStarts.Select(x => (long)x).ToArray(), idx = rowIndices.Select(x => (long)x).ToArray();
            if (f != null) Native.Check(Native.cntk_ndarray_create_sparse((int)DataType.Float, dims, (UIntPtr)dims.Length, starts, idx, f, (UIntPtr)nnz, out h));
            else Native.Check(Native.cntk_ndarray_create_sparse_d((int)DataType.Double, dims, (UIntPtr)dims.Length, starts, idx, d, (UIntPtr)nnz, out h));
            return h;
        }

        public static NDArrayView RandomUniform<T>(NDShape shape, double rangeBegin, double rangeEnd, uint seed, DeviceDescriptor device)
        {
            long[] dims = shape.ToEngine();
            IntPtr h;
            Native.Check(Native.cntk_ndarray_random_uniform((int)Types.Of<T>(), dims, (UIntPtr)dims.Length, rangeBegin, rangeEnd, seed, out h));
            return new NDArrayView(h);
        }

        public NDShape Shape { get { return NDShape.FromEngine(Native.GetDims(Handle, Native.cntk_ndarray_shape)); } }
        public DataType DataType { get { int t; Native.Check(Native.cntk_ndarray_dtype(Handle, out t)); return (DataType)t; } }
        public bool IsSparse { get { int s; Native.Check(Native.cntk_ndarray_is_sparse(Handle, out s)); return s != 0; } }
        public DeviceDescriptor Device { get { return DeviceDescriptor.CPUDevice; } }

        public NDArrayView DeepClone(bool readOnly = false)
        {
            IntPtr h;
            Native.Check(Native.cntk_ndarray_deep_clone(Handle, out h));
            return new NDArrayView(h);
        }

        public NDArrayView DeepClone(DeviceDescriptor device, bool readOnly = false) { return DeepClone(readOnly); }

        internal int ElementCount { get { long n = 1; foreach (long d in Native.GetDims(Handle, Native.cntk_ndarray_shape)) n *= d; return (int)n; } }

        // All elements (densified), first dimension fastest.
        public IList<float> GetDenseFloat() { var a = new float[ElementCount]; Native.Check(Native.cntk_ndarray_copy_to(Handle, (int)DataType.Float, a, (UIntPtr)a.Length)); return a; }
        public IList<double> GetDenseDouble() { var a = new double[ElementCount]; Native.Check(Native.cntk_ndarray_copy_to_d(Handle, (int)DataType.Double, a, (UIntPtr)a.Length)); return a; }

        public void CopyFrom(float[] data) { Native.Check(Native.cntk_ndarray_copy_from(Handle, (int)DataType.Float, data, (UIntPtr)data.Length)); }
        public void CopyFrom(double[] data) { Native.Check(Native.cntk_ndarray_copy_from_d(Handle, (int)DataType.Double, data, (UIntPtr)data.Length)); }
    }

    /// <summary>The data of one variable in one call: a batch of samples, or a batch of
    /// sequences of differing lengths (kept with a mask).</summary>
    public class Value : NativeObject
    {
        internal Value(IntPtr h) : base(h, Native.cntk_value_release) { }

        public Value(NDArrayView value) : base(CreateBatch(value), Native.cntk_value_release) { }

        static IntPtr CreateBatch(NDArrayView data)
        {
            IntPtr h;
            Native.Check(Native.cntk_value_create_batch(HandleOf(data, "value"), out h));
            return h;
        }

        static NDArrayView Dense<T>(NDShape shape, T[] data)
        {
            if (typeof(T) == typeof(float)) return new NDArrayView(shape, (float[])(object)data, DeviceDescriptor.CPUDevice);
            if (typeof(T) == typeof(double)) return new NDArrayView(shape, (double[])(object)data, DeviceDescriptor.CPUDevice);
            throw new ArgumentException("only float and double data are supported, not " + typeof(T).Name);
        }

        static int SampleSize(NDShape sampleShape)
        {
            if (sampleShape == null) throw new ArgumentNullException("sampleShape");
            return sampleShape.TotalSize;
        }

        // `count` samples of `sampleShape` as an array [count, *sample] (CNTK order: sample first).
        static NDArrayView Samples<T>(NDShape sampleShape, T[] data, string what)
        {
            int size = SampleSize(sampleShape);
            if (size == 0 || data.Length % size != 0)
                throw new ArgumentOutOfRangeException(null, what + ": " + data.Length + " values are not a whole number of samples of shape " + sampleShape.AsString());
            return Dense(sampleShape.AppendShape(new[] { data.Length / size }), data);
        }

        static Value FromSequences(IList<NDArrayView> sequences, IEnumerable<bool> starts, bool sequential)
        {
            try
            {
                IntPtr h;
                int[] flags = starts == null ? null : starts.Select(b => b ? 1 : 0).ToArray();
                if (flags != null && flags.Length != sequences.Count)
                    throw new ArgumentOutOfRangeException(null, "Value: " + flags.Length + " sequence start flags for " + sequences.Count + " sequences");
                Native.Check(Native.cntk_value_create_sequences(sequences.Select(s => s.Handle).ToArray(), flags, (UIntPtr)sequences.Count, sequential ? 1 : 0, out h));
                return new Value(h);
            }
            finally
            {
                foreach (var s in sequences) s.Dispose();
            }
        }

        public static Value CreateBatch<T>(NDShape sampleShape, IEnumerable<T> batch, DeviceDescriptor device, bool readOnly = false)
        {
            if (batch == null) throw new ArgumentNullException("batch");
            using (var data = Samples(sampleShape, batch.ToArray(), "Value.CreateBatch")) return new Value(data);
        }

        public static Value CreateSequence<T>(NDShape sampleShape, IEnumerable<T> sequence, DeviceDescriptor device, bool readOnly = false)
        {
            return CreateSequence(sampleShape, sequence, true, device, readOnly);
        }

        public static Value CreateSequence<T>(NDShape sampleShape, IEnumerable<T> sequence, bool sequenceStartFlag, DeviceDescriptor device, bool readOnly = false)
        {
            if (sequence == null) throw new ArgumentNullException("sequence");
            return FromSequences(new[] { Samples(sampleShape, sequence.ToArray(), "Value.CreateSequence") }, new[] { sequenceStartFlag }, true);
        }

        public static Value CreateBatchOfSequences<T>(NDShape sampleShape, IEnumerable<IEnumerable<T>> batchOfSequences, DeviceDescriptor device, bool readOnly = false)
        {
            return CreateBatchOfSequences(sampleShape, batchOfSequences, null, device, readOnly);
        }

        public static Value CreateBatchOfSequences<T>(NDShape sampleShape, IEnumerable<IEnumerable<T>> batchOfSequences, IEnumerable<bool> sequenceStartFlags, DeviceDescriptor device, bool readOnly = false)
        {
            if (batchOfSequences == null) throw new ArgumentNullException("batchOfSequences");
            var seqs = batchOfSequences.Select(s => Samples(sampleShape, s.ToArray(), "Value.CreateBatchOfSequences")).ToList();
            return FromSequences(seqs, sequenceStartFlags, true);
        }

        static Value OneHot<T>(int dimension, IList<IList<int>> sequences, IEnumerable<bool> starts, bool sequential)
        {
            long[] lengths = sequences.Select(s => (long)s.Count).ToArray();
            long[] indices = sequences.SelectMany(s => s.Select(i => (long)i)).ToArray();
            int[] flags = starts == null ? null : starts.Select(b => b ? 1 : 0).ToArray();
            IntPtr h;
            Native.Check(Native.cntk_value_create_one_hot((int)Types.Of<T>(), dimension, indices, lengths, (UIntPtr)lengths.Length, flags, sequential ? 1 : 0, out h));
            return new Value(h);
        }

        // One-hot data: each int is the index of the sample's hot class.
        public static Value CreateBatch<T>(int dimension, IEnumerable<int> batch, DeviceDescriptor device, bool readOnly = false)
        {
            return OneHot<T>(dimension, batch.Select(i => (IList<int>)new[] { i }).ToList(), null, false);
        }

        public static Value CreateSequence<T>(int dimension, IEnumerable<int> sequence, DeviceDescriptor device, bool readOnly = false)
        {
            return CreateSequence<T>(dimension, sequence, true, device, readOnly);
        }

        public static Value CreateSequence<T>(int dimension, IEnumerable<int> sequence, bool sequenceStartFlag, DeviceDescriptor device, bool readOnly = false)
        {
            return OneHot<T>(dimension, new List<IList<int>> { sequence.ToList() }, new[] { sequenceStartFlag }, true);
        }

        public static Value CreateBatchOfSequences<T>(int dimension, IEnumerable<IEnumerable<int>> batchOfSequences, DeviceDescriptor device, bool readOnly = false)
        {
            return OneHot<T>(dimension, batchOfSequences.Select(s => (IList<int>)s.ToList()).ToList(), null, true);
        }

        public static Value CreateBatchOfSequences<T>(int dimension, IEnumerable<IEnumerable<int>> batchOfSequences, IEnumerable<bool> sequenceStartFlags, DeviceDescriptor device, bool readOnly = false)
        {
            return OneHot<T>(dimension, batchOfSequences.Select(s => (IList<int>)s.ToList()).ToList(), sequenceStartFlags, true);
        }

        // A sparse sequence in CNTK's CSC layout (one column per sample of dimension `dimension`).
        public static Value CreateSequence<T>(int dimension, int sequenceLength, int[] colStarts, int[] rowIndices, T[] nonZeroValues, DeviceDescriptor device, bool readOnly = false)
        {
            return CreateSequence(new[] { dimension }, sequenceLength, colStarts, rowIndices, nonZeroValues, true, device, readOnly);
        }

        public static Value CreateSequence<T>(NDShape sampleShape, int sequenceLength, int[] colStarts, int[] rowIndices, T[] nonZeroValues, bool sequenceStartFlag, DeviceDescriptor device, bool readOnly = false)
        {
            if (sampleShape == null) throw new ArgumentNullException("sampleShape");
            NDShape shape = sampleShape.AppendShape(new[] { sequenceLength });
            NDArrayView data = typeof(T) == typeof(float)
                ? new NDArrayView(shape, colStarts, rowIndices, (float[])(object)nonZeroValues, device)
                : new NDArrayView(shape, colStarts, rowIndices, (double[])(object)nonZeroValues, device);
            return FromSequences(new[] { data }, new[] { sequenceStartFlag }, true);
        }

        public NDShape Shape { get { return NDShape.FromEngine(Native.GetDims(Handle, Native.cntk_value_shape)); } }
        public DataType DataType { get { int t; Native.Check(Native.cntk_value_dtype(Handle, out t)); return (DataType)t; } }
        public bool IsSparse { get { int s; Native.Check(Native.cntk_value_is_sparse(Handle, out s)); return s != 0; } }
        public DeviceDescriptor Device { get { return DeviceDescriptor.CPUDevice; } }

        public NDArrayView Data
        {
            get { IntPtr h; Native.Check(Native.cntk_value_data(Handle, out h)); return new NDArrayView(h); }
        }

        /// <summary>The data per sequence (per sample for a variable without a sequence axis),
        /// padding removed, each sequence's samples one after another.</summary>
        public IList<IList<T>> GetDenseData<T>(Variable outputVariable)
        {
            IntPtr layout = HandleOf(outputVariable, "outputVariable");
            int dt = (int)Types.Of<T>();
            UIntPtr n, total;
            if (typeof(T) == typeof(float)) Native.Check(Native.cntk_value_unpack(Handle, layout, dt, null, UIntPtr.Zero, out n, null, UIntPtr.Zero, out total));
            else Native.Check(Native.cntk_value_unpack_d(Handle, layout, dt, null, UIntPtr.Zero, out n, null, UIntPtr.Zero, out total));
            var lengths = new long[(int)n];
            T[] all = new T[(int)total];
            if (typeof(T) == typeof(float)) Native.Check(Native.cntk_value_unpack(Handle, layout, dt, lengths, n, out n, (float[])(object)all, total, out total));
            else Native.Check(Native.cntk_value_unpack_d(Handle, layout, dt, lengths, n, out n, (double[])(object)all, total, out total));
            int sample = Math.Max(1, outputVariable.Shape.TotalSize);
            var result = new List<IList<T>>();
            int offset = 0;
            foreach (long len in lengths)
            {
                int count = (int)len * sample;
                var seq = new T[count];
                Array.Copy(all, offset, seq, 0, count);
                offset += count;
                result.Add(new List<T>(seq));
            }
            return result;
        }

        /// <summary>The hot class index of each sample, per sequence.</summary>
        public IList<IList<int>> GetOneHotData(Variable outputVariable)
        {
            IntPtr layout = HandleOf(outputVariable, "outputVariable");
            UIntPtr n, total;
            Native.Check(Native.cntk_value_unpack_one_hot(Handle, layout, null, UIntPtr.Zero, out n, null, UIntPtr.Zero, out total));
            var lengths = new long[(int)n];
            var all = new long[(int)total];
            Native.Check(Native.cntk_value_unpack_one_hot(Handle, layout, lengths, n, out n, all, total, out total));
            var result = new List<IList<int>>();
            int offset = 0;
            foreach (long len in lengths)
            {
                result.Add(all.Skip(offset).Take((int)len).Select(x => (int)x).ToList());
                offset += (int)len;
            }
            return result;
        }
    }
}
