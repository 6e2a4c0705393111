// P/Invoke declarations of OpenCNTK's C API (include/cntk/c_api.h) and the status check that
// turns a failing call into the exception CNTK's C# API raised for it.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace CNTK
{
    internal static class Native
    {
        const string Lib = "cntk_c";

        // ---------------------------------------------------------------- errors
        [DllImport(Lib)] internal static extern int cntk_api_version();
        [DllImport(Lib)] internal static extern IntPtr cntk_last_error();

        // CNTK's C# API (SWIG) raised ArgumentOutOfRangeException for the engine's invalid-argument
        // errors (shapes, types, values), ArgumentNullException for a null object, and
        // ApplicationException for every other engine error (I/O included).
        internal static void Check(int status)
        {
            if (status == 0) return;
            string message = Marshal.PtrToStringAnsi(cntk_last_error()) ?? "";
            switch (status)
            {
                case 2: case 3: case 7: throw new ArgumentOutOfRangeException(null, message);
                case 6: throw new ArgumentNullException(null, message);
                case 4: throw new NotImplementedException(message);
                default: throw new ApplicationException(message);
            }
        }

        // Two-call string outputs.
        internal delegate int StringGetter(IntPtr h, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        internal static string GetString(IntPtr h, StringGetter get)
        {
            UIntPtr n;
            Check(get(h, null, UIntPtr.Zero, out n));
            var buffer = new byte[(int)n + 1];
            Check(get(h, buffer, (UIntPtr)buffer.Length, out n));
            return Encoding.UTF8.GetString(buffer, 0, (int)n);
        }

        internal delegate int HandleListGetter(IntPtr[] items, UIntPtr capacity, out UIntPtr count);
        internal static IntPtr[] GetHandles(HandleListGetter get)
        {
            UIntPtr n;
            Check(get(null, UIntPtr.Zero, out n));
            var items = new IntPtr[(int)n];
            Check(get(items, (UIntPtr)items.Length, out n));
            return items;
        }

        internal delegate int DimsGetter(IntPtr h, long[] dims, UIntPtr capacity, out UIntPtr rank);
        internal static long[] GetDims(IntPtr h, DimsGetter get)
        {
            UIntPtr n;
            Check(get(h, null, UIntPtr.Zero, out n));
            var dims = new long[(int)n];
            Check(get(h, dims, (UIntPtr)dims.Length, out n));
            return dims;
        }

        // ---------------------------------------------------------------- devices, random
        [DllImport(Lib)] internal static extern int cntk_device_check(int kind, int id);
        [DllImport(Lib)] internal static extern int cntk_set_fixed_random_seed(ulong seed);
        [DllImport(Lib)] internal static extern int cntk_next_random_seed(out ulong seed);

        // ---------------------------------------------------------------- NDArrayView
        [DllImport(Lib)] internal static extern int cntk_ndarray_create_dense(int dtype, long[] dims, UIntPtr rank, float[] data, out IntPtr result);
        [DllImport(Lib, EntryPoint = "cntk_ndarray_create_dense")] internal static extern int cntk_ndarray_create_dense_d(int dtype, long[] dims, UIntPtr rank, double[] data, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_ndarray_create_filled(int dtype, long[] dims, UIntPtr rank, double value, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_ndarray_create_sparse(int dtype, long[] dims, UIntPtr rank, long[] rowStarts, long[] colIndices, float[] values, UIntPtr nnz, out IntPtr result);
        [DllImport(Lib, EntryPoint = "cntk_ndarray_create_sparse")] internal static extern int cntk_ndarray_create_sparse_d(int dtype, long[] dims, UIntPtr rank, long[] rowStarts, long[] colIndices, double[] values, UIntPtr nnz, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_ndarray_random_uniform(int dtype, long[] dims, UIntPtr rank, double low, double high, ulong seed, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_ndarray_release(IntPtr a);
        [DllImport(Lib)] internal static extern int cntk_ndarray_dtype(IntPtr a, out int dtype);
        [DllImport(Lib)] internal static extern int cntk_ndarray_shape(IntPtr a, long[] dims, UIntPtr capacity, out UIntPtr rank);
        [DllImport(Lib)] internal static extern int cntk_ndarray_is_sparse(IntPtr a, out int sparse);
        [DllImport(Lib)] internal static extern int cntk_ndarray_copy_to(IntPtr a, int dtype, float[] buffer, UIntPtr capacity);
        [DllImport(Lib, EntryPoint = "cntk_ndarray_copy_to")] internal static extern int cntk_ndarray_copy_to_d(IntPtr a, int dtype, double[] buffer, UIntPtr capacity);
        [DllImport(Lib)] internal static extern int cntk_ndarray_copy_from(IntPtr a, int dtype, float[] data, UIntPtr count);
        [DllImport(Lib, EntryPoint = "cntk_ndarray_copy_from")] internal static extern int cntk_ndarray_copy_from_d(IntPtr a, int dtype, double[] data, UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_ndarray_deep_clone(IntPtr a, out IntPtr result);

        // ---------------------------------------------------------------- Value
        [DllImport(Lib)] internal static extern int cntk_value_create_batch(IntPtr data, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_value_create_sequences(IntPtr[] sequences, int[] starts, UIntPtr count, int sequential, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_value_create_one_hot(int dtype, long numClasses, long[] indices, long[] lengths, UIntPtr count, int[] starts, int sequential, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_value_release(IntPtr v);
        [DllImport(Lib)] internal static extern int cntk_value_data(IntPtr v, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_value_shape(IntPtr v, long[] dims, UIntPtr capacity, out UIntPtr rank);
        [DllImport(Lib)] internal static extern int cntk_value_dtype(IntPtr v, out int dtype);
        [DllImport(Lib)] internal static extern int cntk_value_is_sparse(IntPtr v, out int sparse);
        [DllImport(Lib)] internal static extern int cntk_value_unpack(IntPtr v, IntPtr layout, int dtype, long[] lengths, UIntPtr lengthsCapacity, out UIntPtr numSequences, float[] buffer, UIntPtr bufferCapacity, out UIntPtr total);
        [DllImport(Lib, EntryPoint = "cntk_value_unpack")] internal static extern int cntk_value_unpack_d(IntPtr v, IntPtr layout, int dtype, long[] lengths, UIntPtr lengthsCapacity, out UIntPtr numSequences, double[] buffer, UIntPtr bufferCapacity, out UIntPtr total);
        [DllImport(Lib)] internal static extern int cntk_value_unpack_one_hot(IntPtr v, IntPtr layout, long[] lengths, UIntPtr lengthsCapacity, out UIntPtr numSequences, long[] indices, UIntPtr indicesCapacity, out UIntPtr total);

        // ---------------------------------------------------------------- Axis
        [DllImport(Lib)] internal static extern int cntk_axis_static(int index, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_axis_default_batch(out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_axis_default_dynamic(out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_axis_all_static(out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_axis_all(out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_axis_operand_sequence(out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_axis_new_unique_dynamic(string name, int ordered, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_axis_release(IntPtr a);
        [DllImport(Lib)] internal static extern int cntk_axis_info(IntPtr a, out int kind, out int staticIndex, out int ordered);
        [DllImport(Lib)] internal static extern int cntk_axis_name(IntPtr a, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern int cntk_axis_equal(IntPtr a, IntPtr b, out int equal);

        // ---------------------------------------------------------------- Dictionary
        [DllImport(Lib)] internal static extern int cntk_dict_create(out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_dict_release(IntPtr d);
        [DllImport(Lib)] internal static extern int cntk_dict_set_bool(IntPtr d, string key, int value);
        [DllImport(Lib)] internal static extern int cntk_dict_set_int(IntPtr d, string key, long value);
        [DllImport(Lib)] internal static extern int cntk_dict_set_double(IntPtr d, string key, double value);
        [DllImport(Lib)] internal static extern int cntk_dict_set_string(IntPtr d, string key, string value);
        [DllImport(Lib)] internal static extern int cntk_dict_set_shape(IntPtr d, string key, long[] dims, UIntPtr rank);
        [DllImport(Lib)] internal static extern int cntk_dict_set_axis(IntPtr d, string key, IntPtr axis);
        [DllImport(Lib)] internal static extern int cntk_dict_set_axes(IntPtr d, string key, IntPtr[] axes, UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_dict_set_bools(IntPtr d, string key, int[] values, UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_dict_set_ints(IntPtr d, string key, long[] values, UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_dict_set_ndarray(IntPtr d, string key, IntPtr value);

        // ---------------------------------------------------------------- Variable
        [DllImport(Lib)] internal static extern int cntk_variable_input(long[] dims, UIntPtr rank, int dtype, int isSparse, int needsGradient, IntPtr[] axes, UIntPtr numAxes, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_parameter(IntPtr value, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_parameter_init(long[] dims, UIntPtr rank, int dtype, IntPtr init, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_constant(IntPtr value, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_constant_filled(long[] dims, UIntPtr rank, int dtype, double value, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_placeholder(long[] dims, UIntPtr rank, IntPtr[] axes, UIntPtr numAxes, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_variable_release(IntPtr v);
        [DllImport(Lib)] internal static extern int cntk_variable_clone_handle(IntPtr v, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_get_kind(IntPtr v, out int kind);
        [DllImport(Lib)] internal static extern int cntk_variable_shape(IntPtr v, long[] dims, UIntPtr capacity, out UIntPtr rank);
        [DllImport(Lib)] internal static extern int cntk_variable_dtype(IntPtr v, out int dtype);
        [DllImport(Lib)] internal static extern int cntk_variable_is_sparse(IntPtr v, out int sparse);
        [DllImport(Lib)] internal static extern int cntk_variable_needs_gradient(IntPtr v, out int needs);
        [DllImport(Lib)] internal static extern int cntk_variable_name(IntPtr v, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern int cntk_variable_uid(IntPtr v, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern int cntk_variable_dynamic_axes(IntPtr v, IntPtr[] axes, UIntPtr capacity, out UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_variable_owner(IntPtr v, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_value(IntPtr v, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_variable_set_value(IntPtr v, IntPtr value);
        [DllImport(Lib)] internal static extern int cntk_variable_equal(IntPtr a, IntPtr b, out int equal);
        [DllImport(Lib)] internal static extern int cntk_variable_hash(IntPtr v, out ulong hash);

        // ---------------------------------------------------------------- Function
        [DllImport(Lib)] internal static extern int cntk_function_primitive(string op, IntPtr[] inputs, UIntPtr count, IntPtr attributes, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_as_block(IntPtr composite, IntPtr[] placeholders, IntPtr[] arguments, UIntPtr count, string opName, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_combine(IntPtr[] outputs, UIntPtr count, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_alias(IntPtr operand, string name, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_function_release(IntPtr f);
        [DllImport(Lib)] internal static extern int cntk_function_name(IntPtr f, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern int cntk_function_set_name(IntPtr f, string name);
        [DllImport(Lib)] internal static extern int cntk_function_uid(IntPtr f, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern int cntk_function_op_name(IntPtr f, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern int cntk_function_kind(IntPtr f, out int kind);
        [DllImport(Lib)] internal static extern int cntk_function_root(IntPtr f, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_variables(IntPtr f, int which, IntPtr[] result, UIntPtr capacity, out UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_function_find_by_name(IntPtr f, string name, int nested, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_find_all_with_name(IntPtr f, string name, int nested, IntPtr[] result, UIntPtr capacity, out UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_function_clone(IntPtr f, int method, IntPtr[] from, IntPtr[] to, UIntPtr count, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_replace_placeholders(IntPtr f, IntPtr[] placeholders, IntPtr[] values, UIntPtr count, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_equal(IntPtr a, IntPtr b, out int equal);
        [DllImport(Lib)] internal static extern int cntk_function_evaluate(IntPtr f, IntPtr[] arguments, IntPtr[] values, UIntPtr numArguments, IntPtr[] outputs, UIntPtr numOutputs, IntPtr[] results);
        [DllImport(Lib)] internal static extern int cntk_function_forward(IntPtr f, IntPtr[] arguments, IntPtr[] values, UIntPtr numArguments, IntPtr[] outputs, UIntPtr numOutputs, IntPtr[] results, out IntPtr state);
        [DllImport(Lib)] internal static extern int cntk_function_backward(IntPtr state, IntPtr[] roots, IntPtr[] rootGradients, UIntPtr numRoots, IntPtr[] wrt, UIntPtr numWrt, IntPtr[] gradients);
        [DllImport(Lib)] internal static extern void cntk_backprop_state_release(IntPtr s);
        [DllImport(Lib)] internal static extern int cntk_function_save(IntPtr f, string path);
        [DllImport(Lib)] internal static extern int cntk_function_load(string path, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_save_bytes(IntPtr f, byte[] buffer, UIntPtr capacity, out UIntPtr length);
        [DllImport(Lib)] internal static extern int cntk_function_load_bytes(byte[] bytes, UIntPtr length, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_function_restore(IntPtr f, string path);

        // ---------------------------------------------------------------- learners
        [DllImport(Lib)] internal static extern int cntk_schedule_create(double[] values, UIntPtr[] counts, UIntPtr count, UIntPtr epochSize, UIntPtr minibatchSize, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_schedule_momentum_as_time_constant(double[] values, UIntPtr[] counts, UIntPtr count, UIntPtr epochSize, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_schedule_release(IntPtr s);
        [DllImport(Lib)] internal static extern int cntk_schedule_value_at(IntPtr s, UIntPtr count, out double value);
        [DllImport(Lib)] internal static extern int cntk_schedule_info(IntPtr s, out UIntPtr epochSize, out UIntPtr minibatchSize);

        [StructLayout(LayoutKind.Sequential)]
        internal struct LearnerOptions
        {
            public UIntPtr StructSize;
            public double L1;
            public double L2;
            public double ClippingThreshold;
            public int ClippingWithTruncation;
            public int HasMinibatchSize;
            public UIntPtr MinibatchSize;
        }

        [DllImport(Lib)] internal static extern int cntk_learner_create(string kind, IntPtr[] parameters, UIntPtr count, IntPtr lr, IntPtr momentum, IntPtr varianceMomentum, IntPtr extra, ref LearnerOptions options, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_learner_release(IntPtr l);
        [DllImport(Lib)] internal static extern int cntk_learner_learning_rate(IntPtr l, out double value);
        [DllImport(Lib)] internal static extern int cntk_learner_reset_learning_rate(IntPtr l, IntPtr schedule);
        [DllImport(Lib)] internal static extern int cntk_learner_samples_seen(IntPtr l, out UIntPtr count);

        // ---------------------------------------------------------------- Trainer
        [DllImport(Lib)] internal static extern int cntk_trainer_create(IntPtr model, IntPtr loss, IntPtr evaluation, IntPtr[] learners, UIntPtr count, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_trainer_release(IntPtr t);
        [DllImport(Lib)] internal static extern int cntk_trainer_train_minibatch(IntPtr t, IntPtr[] arguments, IntPtr[] values, UIntPtr count, int sweepEnd, out int updated);
        [DllImport(Lib)] internal static extern int cntk_trainer_test_minibatch(IntPtr t, IntPtr[] arguments, IntPtr[] values, UIntPtr count, out double average);
        [DllImport(Lib)] internal static extern int cntk_trainer_previous_minibatch_loss_average(IntPtr t, out double value);
        [DllImport(Lib)] internal static extern int cntk_trainer_previous_minibatch_evaluation_average(IntPtr t, out double value);
        [DllImport(Lib)] internal static extern int cntk_trainer_previous_minibatch_sample_count(IntPtr t, out UIntPtr value);
        [DllImport(Lib)] internal static extern int cntk_trainer_total_samples_seen(IntPtr t, out UIntPtr value);
        [DllImport(Lib)] internal static extern int cntk_trainer_save_checkpoint(IntPtr t, string path);
        [DllImport(Lib)] internal static extern int cntk_trainer_restore_checkpoint(IntPtr t, string path);

        // ---------------------------------------------------------------- MinibatchSource
        [StructLayout(LayoutKind.Sequential)]
        internal struct StreamConfig
        {
            public IntPtr Name;
            public IntPtr Alias;
            public UIntPtr Dim;
            public int IsSparse;
        }

        [DllImport(Lib)] internal static extern int cntk_minibatch_source_ctf(string path, StreamConfig[] streams, UIntPtr count, ulong maxSamples, int randomize, UIntPtr window, ulong seed, out IntPtr result);
        [StructLayout(LayoutKind.Sequential)]
        internal struct SourceConfig
        {
            public UIntPtr StructSize;
            public ulong MaxSamples;
            public ulong MaxSweeps;
            public int Randomize;
            public UIntPtr WindowInChunks;
            public UIntPtr WindowInSamples;
            public ulong Seed;
            public int FrameMode;
            public UIntPtr TruncationLength;
        }

        [DllImport(Lib)] internal static extern int cntk_minibatch_source_create_ctf(IntPtr[] paths, IntPtr[] streams, UIntPtr[] numStreams, UIntPtr numFiles, ref SourceConfig config, out IntPtr result);
        [DllImport(Lib)] internal static extern void cntk_minibatch_source_release(IntPtr s);
        [DllImport(Lib)] internal static extern int cntk_minibatch_source_num_streams(IntPtr s, out UIntPtr count);
        [DllImport(Lib)] internal static extern int cntk_minibatch_source_stream(IntPtr s, UIntPtr index, byte[] name, UIntPtr capacity, out UIntPtr length, out int dtype, out UIntPtr dim, out int isSparse);
        [DllImport(Lib)] internal static extern int cntk_minibatch_source_next(IntPtr s, UIntPtr size, UIntPtr partitions, UIntPtr index, out IntPtr result);
        [DllImport(Lib)] internal static extern int cntk_minibatch_source_mean_inv_stddev(IntPtr s, UIntPtr[] streams, UIntPtr count, IntPtr[] means, IntPtr[] invStdDevs);
        [DllImport(Lib)] internal static extern void cntk_minibatch_release(IntPtr m);
        [DllImport(Lib)] internal static extern int cntk_minibatch_stream(IntPtr m, UIntPtr index, out IntPtr value, out UIntPtr numSequences, out UIntPtr numSamples, out int sweepEnd);
    }
}
