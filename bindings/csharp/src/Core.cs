// The basic vocabulary: native handle lifetime, devices, data types, shapes and axes.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;

namespace CNTK
{
    /// <summary>An object that owns one handle of the native library; Dispose releases it
    /// (a finalizer does when Dispose is not called). Using a disposed object raises
    /// ObjectDisposedException.</summary>
    public abstract class NativeObject : IDisposable
    {
        IntPtr handle;
        readonly Action<IntPtr> release;

        internal NativeObject(IntPtr handle, Action<IntPtr> release)
        {
            if (handle == IntPtr.Zero) throw new ArgumentNullException("handle", "the native library returned no object");
            this.handle = handle;
            this.release = release;
        }

        internal IntPtr Handle
        {
            get
            {
                if (handle == IntPtr.Zero) throw new ObjectDisposedException(GetType().Name);
                return handle;
            }
        }

        public void Dispose()
        {
            Dispose(true);
            GC.SuppressFinalize(this);
        }

        protected virtual void Dispose(bool disposing)
        {
            IntPtr h = Interlocked.Exchange(ref handle, IntPtr.Zero);
            if (h != IntPtr.Zero) release(h);
        }

        ~NativeObject() { Dispose(false); }

        internal static IntPtr HandleOf(NativeObject o, string what)
        {
            if (o == null) throw new ArgumentNullException(what);
            return o.Handle;
        }
    }

    public enum DeviceKind { CPU = 0, GPU = 1 }

    public enum DataType { Unknown = 0, Float = 1, Double = 2, UChar = 3, Float16 = 4, Int8 = 5, Int16 = 6 }

    public enum VariableKind { Input = 0, Output = 1, Parameter = 2, Constant = 3, Placeholder = 4 }

    public enum ParameterCloningMethod { Clone = 0, Share = 1, Freeze = 2 }

    public enum PoolingType { Max = 0, Average = 1 }

    public enum ModelFormat { CNTKv2 = 0, ONNX = 1 }

    internal static class Types
    {
        internal static DataType Of<T>()
        {
            if (typeof(T) == typeof(float)) return DataType.Float;
            if (typeof(T) == typeof(double)) return DataType.Double;
            throw new ArgumentException("only float and double data are supported, not " + typeof(T).Name);
        }
    }

    /// <summary>A compute device. OpenCNTK computes on the CPU; asking for a GPU raises.</summary>
    public sealed class DeviceDescriptor
    {
        readonly DeviceKind kind;
        readonly int id;

        DeviceDescriptor(DeviceKind kind, int id) { this.kind = kind; this.id = id; }

        public static DeviceDescriptor CPUDevice { get { return new DeviceDescriptor(DeviceKind.CPU, 0); } }

        public static DeviceDescriptor GPUDevice(int deviceId)
        {
            Native.Check(Native.cntk_device_check((int)DeviceKind.GPU, deviceId));
            return new DeviceDescriptor(DeviceKind.GPU, deviceId);
        }

        public static DeviceDescriptor UseDefaultDevice() { return CPUDevice; }

        public static IList<DeviceDescriptor> AllDevices() { return new List<DeviceDescriptor> { CPUDevice }; }

        public DeviceKind Type { get { return kind; } }
        public uint Id { get { return (uint)id; } }

        public override bool Equals(object obj)
        {
            var d = obj as DeviceDescriptor;
            return d != null && d.kind == kind && d.id == id;
        }

        public override int GetHashCode() { return ((int)kind << 16) ^ id; }

        public override string ToString() { return kind == DeviceKind.CPU ? "CPU" : "GPU[" + id + "]"; }
    }

    /// <summary>A tensor shape in CNTK's order: the first dimension is the fastest-varying one
    /// (the reverse of NumPy's order, which the engine keeps).</summary>
    public class NDShape
    {
        public const int InferredDimension = -1;
        public const int FreeDimension = -3;
        readonly int[] dims;

        public NDShape() { dims = new int[0]; }
        public NDShape(int numAxes, int dimension) { dims = Enumerable.Repeat(dimension, numAxes).ToArray(); }
        public NDShape(int numAxes) : this(numAxes, InferredDimension) { }
        internal NDShape(int[] dimensions) { dims = (int[])dimensions.Clone(); }

        public static NDShape CreateNDShape(IEnumerable<int> dimensions) { return new NDShape(dimensions.ToArray()); }
        public static implicit operator NDShape(int[] dimensions) { return new NDShape(dimensions); }
        public static NDShape Unknown() { return new NDShape(new[] { -2 }); }

        public int Rank { get { return dims.Length; } }
        public IList<int> Dimensions { get { return Array.AsReadOnly(dims); } }
        public int this[int axis] { get { return dims[axis]; } }
        public bool IsUnknown { get { return dims.Length == 1 && dims[0] == -2; } }
        public bool HasInferredDimension { get { return dims.Contains(InferredDimension); } }
        public bool HasFreeDimension { get { return dims.Contains(FreeDimension); } }

        public int TotalSize
        {
            get
            {
                if (HasInferredDimension || HasFreeDimension)
                    throw new ArgumentOutOfRangeException(null, "NDShape.TotalSize: the shape " + AsString() + " has unknown dimensions");
                int n = 1;
                foreach (int d in dims) n *= d;
                return n;
            }
        }

        public NDShape SubShape(int beginAxisId = 0) { return SubShape(beginAxisId, Rank); }
        public NDShape SubShape(int beginAxisId, int endAxisId) { return new NDShape(dims.Skip(beginAxisId).Take(endAxisId - beginAxisId).ToArray()); }
        public NDShape AppendShape(NDShape shape) { return new NDShape(dims.Concat(shape.dims).ToArray()); }

        // The engine's dimensions (NumPy order).
        internal long[] ToEngine() { return dims.Reverse().Select(d => (long)d).ToArray(); }
        internal static NDShape FromEngine(long[] engineDims) { return new NDShape(engineDims.Reverse().Select(d => (int)d).ToArray()); }

        public string AsString() { return "[" + string.Join(" x ", dims) + "]"; }
        public override string ToString() { return AsString(); }

        public override bool Equals(object obj)
        {
            var s = obj as NDShape;
            return !ReferenceEquals(s, null) && s.dims.SequenceEqual(dims);
        }

        public override int GetHashCode() { return dims.Aggregate(17, (h, d) => h * 31 + d); }
        public static bool operator ==(NDShape a, NDShape b) { return ReferenceEquals(a, b) || (!ReferenceEquals(a, null) && a.Equals(b)); }
        public static bool operator !=(NDShape a, NDShape b) { return !(a == b); }
    }

    /// <summary>An axis: a static axis by index (CNTK's order), a dynamic axis (batch, sequence),
    /// or one of the markers for all static axes / all axes.</summary>
    public class Axis : NativeObject
    {
        internal Axis(IntPtr h) : base(h, Native.cntk_axis_release) { }


        public Axis(int staticAxisIdx) : base(Create(staticAxisIdx), Native.cntk_axis_release) { }

        static IntPtr Create(int index)
        {
            IntPtr h;
            Native.Check(Native.cntk_axis_static(index, out h));
            return h;
        }

        public static Axis DefaultBatchAxis() { IntPtr h; Native.Check(Native.cntk_axis_default_batch(out h)); return new Axis(h); }
        public static Axis DefaultDynamicAxis() { IntPtr h; Native.Check(Native.cntk_axis_default_dynamic(out h)); return new Axis(h); }
        public static Axis AllStaticAxes() { IntPtr h; Native.Check(Native.cntk_axis_all_static(out h)); return new Axis(h); }
        public static Axis AllAxes() { IntPtr h; Native.Check(Native.cntk_axis_all(out h)); return new Axis(h); }
        public static Axis OperandSequenceAxis() { IntPtr h; Native.Check(Native.cntk_axis_operand_sequence(out h)); return new Axis(h); }
        public static Axis NewUniqueDynamicAxis(string axisNamePrefix, bool isOrderedDynamicAxis = true)
        {
            IntPtr h;
            Native.Check(Native.cntk_axis_new_unique_dynamic(axisNamePrefix, isOrderedDynamicAxis ? 1 : 0, out h));
            return new Axis(h);
        }

        int Kind { get { int k, i, o; Native.Check(Native.cntk_axis_info(Handle, out k, out i, out o)); return k; } }

        public string Name { get { return Native.GetString(Handle, Native.cntk_axis_name); } }
        public bool IsStatic { get { return Kind == 0; } }
        public bool IsDynamic { get { return Kind == 1; } }
        public bool IsOrdered { get { int k, i, o; Native.Check(Native.cntk_axis_info(Handle, out k, out i, out o)); return o != 0; } }

        public int StaticAxisIndex(bool checkStaticAxis = true)
        {
            int k, i, o;
            Native.Check(Native.cntk_axis_info(Handle, out k, out i, out o));
            if (checkStaticAxis && k != 0) throw new ArgumentOutOfRangeException(null, "Axis '" + Name + "' is not a static axis");
            return i;
        }

        public override bool Equals(object obj)
        {
            var a = obj as Axis;
            if (a == null) return false;
            int eq;
            Native.Check(Native.cntk_axis_equal(Handle, a.Handle, out eq));
            return eq != 0;
        }

        public override int GetHashCode() { return Name.GetHashCode(); }
        public override string ToString() { return Name; }
    }

    /// <summary>CNTK's string-keyed bag of values; here the initializer specs that CNTKLib's
    /// *Initializer functions return.</summary>
    public class CNTKDictionary : NativeObject
    {
        public CNTKDictionary() : base(Create(), Native.cntk_dict_release) { }

        static IntPtr Create()
        {
            IntPtr h;
            Native.Check(Native.cntk_dict_create(out h));
            return h;
        }

        // Kept on the managed side too, so that initializers can be read back and combined.
        internal readonly Dictionary<string, object> Entries = new Dictionary<string, object>();

        internal CNTKDictionary Set(string key, object value)
        {
            Entries[key] = value;
            if (value is bool) Native.Check(Native.cntk_dict_set_bool(Handle, key, (bool)value ? 1 : 0));
            else if (value is int || value is long) Native.Check(Native.cntk_dict_set_int(Handle, key, Convert.ToInt64(value)));
            else if (value is double || value is float) Native.Check(Native.cntk_dict_set_double(Handle, key, Convert.ToDouble(value)));
            else if (value is string) Native.Check(Native.cntk_dict_set_string(Handle, key, (string)value));
            else throw new ArgumentException("CNTKDictionary: unsupported value type " + value.GetType().Name);
            return this;
        }

        internal CNTKDictionary SetShape(string key, long[] dims)
        {
            Native.Check(Native.cntk_dict_set_shape(Handle, key, dims, (UIntPtr)dims.Length));
            return this;
        }

        internal CNTKDictionary SetAxis(string key, Axis axis)
        {
            Native.Check(Native.cntk_dict_set_axis(Handle, key, HandleOf(axis, key)));
            return this;
        }

        internal CNTKDictionary SetAxes(string key, IEnumerable<Axis> axes)
        {
            IntPtr[] h = axes.Select(a => HandleOf(a, key)).ToArray();
            Native.Check(Native.cntk_dict_set_axes(Handle, key, h, (UIntPtr)h.Length));
            return this;
        }

        internal CNTKDictionary SetBools(string key, IEnumerable<bool> values)
        {
            int[] v = values.Select(b => b ? 1 : 0).ToArray();
            Native.Check(Native.cntk_dict_set_bools(Handle, key, v, (UIntPtr)v.Length));
            return this;
        }

        internal CNTKDictionary SetInts(string key, IEnumerable<long> values)
        {
            long[] v = values.ToArray();
            Native.Check(Native.cntk_dict_set_ints(Handle, key, v, (UIntPtr)v.Length));
            return this;
        }

        public bool Contains(string key) { return Entries.ContainsKey(key); }
    }
}
