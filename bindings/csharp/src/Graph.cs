// The graph: Variable (and its kinds Parameter, Constant), Function.
using System;
using System.Collections.Generic;
using System.Linq;

namespace CNTK
{
    /// <summary>A node of the graph that carries data. Two Variable objects of the same
    /// variable are equal and hash alike (dictionaries of arguments rely on it).</summary>
    public class Variable : NativeObject
    {
        internal Variable(IntPtr h) : base(h, Native.cntk_variable_release) { }

        /// <summary>The single output of a function.</summary>
        public Variable(Function function) : base(OutputHandle(function), Native.cntk_variable_release) { }

        static IntPtr OutputHandle(Function function)
        {
            if (function == null) throw new ArgumentNullException("function");
            using (Variable output = function.Output)
            {
                IntPtr h;
                Native.Check(Native.cntk_variable_clone_handle(output.Handle, out h));
                return h;
            }
        }

        // Wraps a native variable handle as the matching managed kind.
        internal static Variable Wrap(IntPtr h)
        {
            int kind;
            Native.Check(Native.cntk_variable_get_kind(h, out kind));
            switch ((VariableKind)kind)
            {
                case VariableKind.Parameter: return new Parameter(h);
                case VariableKind.Constant: return new Constant(h);
                default: return new Variable(h);
            }
        }

        internal static IntPtr[] Handles(IEnumerable<Variable> vars, string what)
        {
            if (vars == null) throw new ArgumentNullException(what);
            return vars.Select(v => HandleOf(v, what)).ToArray();
        }

        // CNTK lists dynamic axes with the batch axis last; the engine lists it first.
        static IntPtr[] AxisHandles(IEnumerable<Axis> axes) { return axes == null ? null : axes.Reverse().Select(a => HandleOf(a, "dynamicAxes")).ToArray(); }

        // CNTK's default for input variables: a sequence axis and the batch axis.
        static IList<Axis> DefaultInputAxes() { return new List<Axis> { Axis.DefaultDynamicAxis(), Axis.DefaultBatchAxis() }; }

        public static Variable InputVariable(NDShape shape, DataType dataType, string name = "", IList<Axis> dynamicAxes = null, bool isSparse = false, bool needsGradient = false)
        {
            if (shape == null) throw new ArgumentNullException("shape");
            long[] dims = shape.ToEngine();
            IntPtr[] axes = AxisHandles(dynamicAxes ?? DefaultInputAxes());
            IntPtr h;
            Native.Check(Native.cntk_variable_input(dims, (UIntPtr)dims.Length, (int)dataType, isSparse ? 1 : 0, needsGradient ? 1 : 0, axes, (UIntPtr)(axes == null ? 0 : axes.Length), name ?? "", out h));
            return new Variable(h);
        }

        public static Variable PlaceholderVariable(NDShape shape, IList<Axis> dynamicAxes)
        {
            return PlaceholderVariable(shape, "", dynamicAxes);
        }

        public static Variable PlaceholderVariable(NDShape shape, string name, IList<Axis> dynamicAxes)
        {
            long[] dims = shape.ToEngine();
            IntPtr[] axes = AxisHandles(dynamicAxes) ?? new IntPtr[0];
            IntPtr h;
            Native.Check(Native.cntk_variable_placeholder(dims, (UIntPtr)dims.Length, axes, (UIntPtr)axes.Length, name ?? "", out h));
            return new Variable(h);
        }

        public static Variable PlaceholderVariable() { return PlaceholderVariable(NDShape.Unknown(), new List<Axis>()); }

        public static implicit operator Variable(Function function) { return function == null ? null : function.Output; }

        public Function ToFunction()
        {
            IntPtr h;
            Native.Check(Native.cntk_function_combine(new[] { Handle }, (UIntPtr)1, "", out h));
            return new Function(h);
        }

        public NDShape Shape { get { return NDShape.FromEngine(Native.GetDims(Handle, Native.cntk_variable_shape)); } }
        public DataType DataType { get { int t; Native.Check(Native.cntk_variable_dtype(Handle, out t)); return (DataType)t; } }
        public DataType GetDataType() { return DataType; }
        public string Name { get { return Native.GetString(Handle, Native.cntk_variable_name); } }
        public string Uid { get { return Native.GetString(Handle, Native.cntk_variable_uid); } }
        public VariableKind Kind { get { int k; Native.Check(Native.cntk_variable_get_kind(Handle, out k)); return (VariableKind)k; } }
        public bool IsInput { get { return Kind == VariableKind.Input; } }
        public bool IsOutput { get { return Kind == VariableKind.Output; } }
        public bool IsParameter { get { return Kind == VariableKind.Parameter; } }
        public bool IsConstant { get { return Kind == VariableKind.Constant; } }
        public bool IsPlaceholder { get { return Kind == VariableKind.Placeholder; } }
        public bool IsSparse { get { int s; Native.Check(Native.cntk_variable_is_sparse(Handle, out s)); return s != 0; } }
        public bool NeedsGradient { get { int s; Native.Check(Native.cntk_variable_needs_gradient(Handle, out s)); return s != 0; } }

        public IList<Axis> DynamicAxes
        {
            get
            {
                IntPtr self = Handle;
                return Native.GetHandles((IntPtr[] items, UIntPtr cap, out UIntPtr n) => Native.cntk_variable_dynamic_axes(self, items, cap, out n))
                    .Reverse().Select(h => new Axis(h)).ToList();
            }
        }

        /// <summary>The function producing an output variable; null for other kinds.</summary>
        public Function Owner
        {
            get
            {
                IntPtr h;
                Native.Check(Native.cntk_variable_owner(Handle, out h));
                return h == IntPtr.Zero ? null : new Function(h);
            }
        }

        // Operators CNTK's C# API defines on variables.
        public static Function operator +(Variable left, Variable right) { return CNTKLib.Plus(left, right); }
        public static Function operator -(Variable left, Variable right) { return CNTKLib.Minus(left, right); }
        public static Function operator *(Variable left, Variable right) { return CNTKLib.Times(left, right); }

        public override bool Equals(object obj)
        {
            var v = obj as Variable;
            if (ReferenceEquals(v, null)) return false;
            int eq;
            Native.Check(Native.cntk_variable_equal(Handle, v.Handle, out eq));
            return eq != 0;
        }

        public override int GetHashCode()
        {
            ulong h;
            Native.Check(Native.cntk_variable_hash(Handle, out h));
            return h.GetHashCode();
        }

        public override string ToString() { return Kind + "('" + Name + "', " + Shape.AsString() + ")"; }
    }

    /// <summary>A trainable tensor.</summary>
    public class Parameter : Variable
    {
        internal Parameter(IntPtr h) : base(h) { }

        public Parameter(NDArrayView value, string name = "") : base(FromValue(value, name)) { }

        public Parameter(NDShape shape, DataType dataType, double initValue, DeviceDescriptor device, string name = "")
            : base(Filled(shape, dataType, initValue, name)) { }

        public Parameter(NDShape shape, float initValue, DeviceDescriptor device, string name = "")
            : base(Filled(shape, DataType.Float, initValue, name)) { }

        public Parameter(NDShape shape, double initValue, DeviceDescriptor device, string name = "")
            : base(Filled(shape, DataType.Double, initValue, name)) { }

        public Parameter(NDShape shape, DataType dataType, CNTKDictionary initializer, DeviceDescriptor device, string name = "")
            : base(FromInitializer(shape, dataType, initializer, name)) { }

        public Parameter(NDShape shape, DataType dataType, CNTKDictionary initializer) : this(shape, dataType, initializer, DeviceDescriptor.CPUDevice, "") { }

        public Parameter(Variable variable) : base(CloneParameter(variable)) { }

        static IntPtr CloneParameter(Variable v)
        {
            if (HandleOf(v, "variable") != IntPtr.Zero && !v.IsParameter)
                throw new ArgumentOutOfRangeException(null, "Parameter: " + v + " is not a parameter");
            IntPtr h;
            Native.Check(Native.cntk_variable_clone_handle(v.Handle, out h));
            return h;
        }

        static IntPtr FromValue(NDArrayView value, string name)
        {
            IntPtr h;
            Native.Check(Native.cntk_variable_parameter(HandleOf(value, "value"), name ?? "", out h));
            return h;
        }

        internal static IntPtr Filled(NDShape shape, DataType dataType, double value, string name)
        {
            using (var init = new CNTKDictionary().Set("type", "constant").Set("value", value))
                return FromInitializer(shape, dataType, init, name);
        }

        static IntPtr FromInitializer(NDShape shape, DataType dataType, CNTKDictionary initializer, string name)
        {
            if (shape == null) throw new ArgumentNullException("shape");
            long[] dims = shape.ToEngine();
            IntPtr h;
            Native.Check(Native.cntk_variable_parameter_init(dims, (UIntPtr)dims.Length, (int)dataType, HandleOf(initializer, "initializer"), name ?? "", out h));
            return h;
        }

        public NDArrayView Value
        {
            get { IntPtr h; Native.Check(Native.cntk_variable_value(Handle, out h)); return new NDArrayView(h); }
        }

        public NDArrayView GetValue() { return Value; }

        public void SetValue(NDArrayView value) { Native.Check(Native.cntk_variable_set_value(Handle, HandleOf(value, "value"))); }
    }

    /// <summary>A tensor that does not train.</summary>
    public class Constant : Variable
    {
        internal Constant(IntPtr h) : base(h) { }

        public Constant(NDArrayView value, string name = "") : base(FromValue(value, name)) { }

        public Constant(NDShape shape, DataType dataType, double initValue, DeviceDescriptor device, string name = "")
            : base(Filled(shape, dataType, initValue, name)) { }

        public Constant(NDShape shape, float initValue, DeviceDescriptor device, string name = "")
            : base(Filled(shape, DataType.Float, initValue, name)) { }

        public Constant(NDShape shape, double initValue, DeviceDescriptor device, string name = "")
            : base(Filled(shape, DataType.Double, initValue, name)) { }

        static IntPtr FromValue(NDArrayView value, string name)
        {
            IntPtr h;
            Native.Check(Native.cntk_variable_constant(HandleOf(value, "value"), name ?? "", out h));
            return h;
        }

        static IntPtr Filled(NDShape shape, DataType dataType, double value, string name)
        {
            if (shape == null) throw new ArgumentNullException("shape");
            long[] dims = shape.ToEngine();
            IntPtr h;
            Native.Check(Native.cntk_variable_constant_filled(dims, (UIntPtr)dims.Length, (int)dataType, value, name ?? "", out h));
            return h;
        }

        public static Constant Scalar<T>(T value, DeviceDescriptor device = null)
        {
            return Scalar(Types.Of<T>(), Convert.ToDouble(value), device);
        }

        public static Constant Scalar(DataType dataType, double value, DeviceDescriptor device = null)
        {
            return new Constant(new NDShape(), dataType, value, device ?? DeviceDescriptor.CPUDevice);
        }

        public NDArrayView Value
        {
            get { IntPtr h; Native.Check(Native.cntk_variable_value(Handle, out h)); return new NDArrayView(h); }
        }

        public NDArrayView GetValue() { return Value; }
    }

    /// <summary>A graph that computes: ops composed over variables.</summary>
    public class Function : NativeObject
    {
        internal Function(IntPtr h) : base(h, Native.cntk_function_release) { }

        /// <summary>The graph that computes a variable (a variable that is no output stands for itself).</summary>
        public static implicit operator Function(Variable variable) { return variable == null ? null : variable.ToFunction(); }

        IList<Variable> List(int which)
        {
            IntPtr self = Handle;
            return Native.GetHandles((IntPtr[] items, UIntPtr cap, out UIntPtr n) => Native.cntk_function_variables(self, which, items, cap, out n))
                .Select(Variable.Wrap).ToList();
        }

        public IList<Variable> Inputs { get { return List(0); } }
        public IList<Variable> Outputs { get { return List(1); } }
        public IList<Variable> Arguments { get { return List(2); } }

        public Variable Output
        {
            get
            {
                var outs = Outputs;
                if (outs.Count != 1)
                    throw new ArgumentOutOfRangeException(null, "Function '" + Name + "' has " + outs.Count + " outputs; use Outputs");
                return outs[0];
            }
        }

        public IList<Parameter> Parameters() { return List(3).Cast<Parameter>().ToList(); }
        public IList<Constant> Constants() { return List(4).Cast<Constant>().ToList(); }
        public IList<Variable> Placeholders() { return List(5); }

        public string Name
        {
            get { return Native.GetString(Handle, Native.cntk_function_name); }
            set { Native.Check(Native.cntk_function_set_name(Handle, value)); }
        }

        public string Uid { get { return Native.GetString(Handle, Native.cntk_function_uid); } }
        public string OpName { get { return Native.GetString(Handle, Native.cntk_function_op_name); } }
        int Kind { get { int k; Native.Check(Native.cntk_function_kind(Handle, out k)); return k; } }
        public bool IsPrimitive { get { return Kind == 0; } }
        public bool IsComposite { get { return Kind == 1; } }
        public bool IsBlock { get { return Kind == 2; } }

        public Function RootFunction
        {
            get { IntPtr h; Native.Check(Native.cntk_function_root(Handle, out h)); return new Function(h); }
        }

        public static Function Combine(IList<Variable> operands, string name = "")
        {
            IntPtr[] outs = Variable.Handles(operands, "operands");
            IntPtr h;
            Native.Check(Native.cntk_function_combine(outs, (UIntPtr)outs.Length, name ?? "", out h));
            return new Function(h);
        }

        public static Function AsComposite(Function rootFunction, string name = "")
        {
            return Combine(rootFunction.Outputs, name);
        }

        public static Function Alias(Variable operand, string name = "")
        {
            IntPtr h;
            Native.Check(Native.cntk_function_alias(HandleOf(operand, "operand"), name ?? "", out h));
            return new Function(h);
        }

        public Function Clone(ParameterCloningMethod parameterCloneMethod = ParameterCloningMethod.Clone)
        {
            return Clone(parameterCloneMethod, new Dictionary<Variable, Variable>());
        }

        public Function Clone(ParameterCloningMethod method, IDictionary<Variable, Variable> replacements)
        {
            IntPtr[] from = Variable.Handles(replacements.Keys, "replacements"), to = Variable.Handles(replacements.Values, "replacements");
            IntPtr h;
            Native.Check(Native.cntk_function_clone(Handle, (int)method, from, to, (UIntPtr)from.Length, out h));
            return new Function(h);
        }

        public Function ReplacePlaceholders(IDictionary<Variable, Variable> placeholderReplacements)
        {
            IntPtr[] from = Variable.Handles(placeholderReplacements.Keys, "placeholderReplacements");
            IntPtr[] to = Variable.Handles(placeholderReplacements.Values, "placeholderReplacements");
            IntPtr h;
            Native.Check(Native.cntk_function_replace_placeholders(Handle, from, to, (UIntPtr)from.Length, out h));
            return new Function(h);
        }

        public Function ReplacePlaceholder(Variable placeholderReplacement)
        {
            var ph = Placeholders();
            if (ph.Count != 1) throw new ArgumentOutOfRangeException(null, "ReplacePlaceholder: the function has " + ph.Count + " placeholders");
            return ReplacePlaceholders(new Dictionary<Variable, Variable> { { ph[0], placeholderReplacement } });
        }

        public Function FindByName(string name, bool nestedSearchInsideBlockFunction = false)
        {
            IntPtr h;
            Native.Check(Native.cntk_function_find_by_name(Handle, name, nestedSearchInsideBlockFunction ? 1 : 0, out h));
            return h == IntPtr.Zero ? null : new Function(h);
        }

        public IList<Function> FindAllWithName(string name, bool nestedSearchInsideBlockFunction = false)
        {
            IntPtr self = Handle;
            return Native.GetHandles((IntPtr[] items, UIntPtr cap, out UIntPtr n) =>
                    Native.cntk_function_find_all_with_name(self, name, nestedSearchInsideBlockFunction ? 1 : 0, items, cap, out n))
                .Select(h => new Function(h)).ToList();
        }

        /// <summary>Computes the outputs named in `outputs` (their values null on the way in)
        /// from `arguments`.</summary>
        public void Evaluate(IDictionary<Variable, Value> arguments, IDictionary<Variable, Value> outputs, DeviceDescriptor computeDevice)
        {
            Evaluate(arguments, outputs, false, computeDevice);
        }

        public void Evaluate(IDictionary<Variable, Value> arguments, IDictionary<Variable, Value> outputs, bool createPersistentOutputValues, DeviceDescriptor computeDevice)
        {
            if (arguments == null) throw new ArgumentNullException("arguments");
            if (outputs == null) throw new ArgumentNullException("outputs");
            IntPtr[] args = Variable.Handles(arguments.Keys, "arguments");
            IntPtr[] vals = arguments.Values.Select(v => HandleOf(v, "argument value")).ToArray();
            var outVars = outputs.Keys.ToList();
            IntPtr[] outs = Variable.Handles(outVars, "outputs");
            var results = new IntPtr[outs.Length];
            Native.Check(Native.cntk_function_evaluate(Handle, args, vals, (UIntPtr)args.Length, outs, (UIntPtr)outs.Length, results));
            for (int i = 0; i < outVars.Count; ++i) outputs[outVars[i]] = new Value(results[i]);
        }

        public void Save(string filepath)
        {
            Native.Check(Native.cntk_function_save(Handle, filepath));
        }

        public byte[] Save()
        {
            UIntPtr n;
            Native.Check(Native.cntk_function_save_bytes(Handle, null, UIntPtr.Zero, out n));
            var bytes = new byte[(int)n];
            Native.Check(Native.cntk_function_save_bytes(Handle, bytes, (UIntPtr)bytes.Length, out n));
            return bytes;
        }

        // Model files: CNTK's v2 format (CNTK v1 .dnn/.cmf files load too); ONNX is not available.
        public void Save(string filepath, ModelFormat format)
        {
            CheckFormat(format);
            Save(filepath);
        }

        public static Function Load(string filepath, DeviceDescriptor computeDevice, ModelFormat format)
        {
            CheckFormat(format);
            return Load(filepath, computeDevice);
        }

        static void CheckFormat(ModelFormat format)
        {
            if (format != ModelFormat.CNTKv2) throw new NotImplementedException("model format " + format + " is not available in OpenCNTK's C# API");
        }

        public static Function Load(string filepath, DeviceDescriptor computeDevice)
        {
            IntPtr h;
            Native.Check(Native.cntk_function_load(filepath, out h));
            return new Function(h);
        }

        public static Function Load(byte[] modelBuffer, DeviceDescriptor computeDevice)
        {
            if (modelBuffer == null) throw new ArgumentNullException("modelBuffer");
            IntPtr h;
            Native.Check(Native.cntk_function_load_bytes(modelBuffer, (UIntPtr)modelBuffer.Length, out h));
            return new Function(h);
        }

        public void Restore(string filepath) { Native.Check(Native.cntk_function_restore(Handle, filepath)); }

        public override bool Equals(object obj)
        {
            var f = obj as Function;
            if (f == null) return false;
            int eq;
            Native.Check(Native.cntk_function_equal(Handle, f.Handle, out eq));
            return eq != 0;
        }

        public override int GetHashCode() { return Uid.GetHashCode(); }
        public override string ToString() { return OpName + "('" + Name + "')"; }
    }
}
