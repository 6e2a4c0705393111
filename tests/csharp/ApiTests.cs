// Checks of the C# API's own behaviour that CNTK's examples do not reach: errors arrive as the
// exceptions CNTK's C# API raised, disposed objects and nulls raise instead of crashing, values
// round-trip, graphs save, load, clone and are searched by name. Prints "ok <name>" per check and
// "ApiTests passed" at the end; exits non-zero at the first failure.
using System;
using System.Collections.Generic;
using System.Linq;
using CNTK;

namespace OpenCNTK.CSharpTests
{
    static class ApiTests
    {
        static int checks;

        static void Check(bool condition, string what)
        {
            if (!condition) throw new Exception("check failed: " + what);
            checks++;
            Console.WriteLine("ok " + what);
        }

        static void Throws<E>(Action action, string what) where E : Exception
        {
            try
            {
                action();
            }
            catch (E e)
            {
                Check(e.GetType() == typeof(E) || e is E, what + " raises " + typeof(E).Name + ": " + e.Message.Split('\n')[0]);
                return;
            }
            catch (Exception e)
            {
                throw new Exception(what + ": expected " + typeof(E).Name + ", got " + e.GetType().Name + ": " + e.Message);
            }
            throw new Exception(what + ": expected " + typeof(E).Name + ", nothing was raised");
        }

        static int Main(string[] argv)
        {
            var device = DeviceDescriptor.CPUDevice;
            var x = Variable.InputVariable(new int[] { 3 }, DataType.Float, "x");
            var y = Variable.InputVariable(new int[] { 2 }, DataType.Float, "y");
            var w = new Parameter(new int[] { 2, 3 }, DataType.Float, CNTKLib.GlorotUniformInitializer(1.0, CNTKLib.SentinelValueForInferParamInitRank, CNTKLib.SentinelValueForInferParamInitRank, 1), device, "w");
            var b = new Parameter(new int[] { 2 }, 0.5f, device, "b");
            Function z = CNTKLib.Plus(CNTKLib.Times(w, x, "times"), b, "z");

            // Shapes in CNTK's order, the engine's reversed underneath.
            Check(w.Shape.Dimensions.SequenceEqual(new[] { 2, 3 }), "Parameter shape in CNTK order");
            Check(z.Output.Shape.Dimensions.SequenceEqual(new[] { 2 }), "Times(W[2x3], x[3]) has shape [2]");
            Check(x.DynamicAxes.Count == 2 && x.DynamicAxes[1].Name == Axis.DefaultBatchAxis().Name, "InputVariable has CNTK's default sequence and batch axes");

            // Evaluate against a hand computation: z = W x + b.
            float[] wv = w.Value.GetDenseFloat().ToArray();  // first dimension fastest: wv[i + 2 * j] = W[i, j]
            var input = new float[] { 1, 2, 3, -1, 0, 1 };
            var outputs = new Dictionary<Variable, Value> { { z.Output, null } };
            z.Evaluate(new Dictionary<Variable, Value> { { x, Value.CreateBatch(new int[] { 3 }, input, device) } }, outputs, device);
            var result = outputs[z.Output].GetDenseData<float>(z.Output);
            Check(result.Count == 2 && result.All(r => r.Count == 2), "GetDenseData gives one list per sample");
            bool close = true;
            for (int s = 0; s < 2; ++s)
                for (int i = 0; i < 2; ++i)
                {
                    float expected = 0.5f;
                    for (int j = 0; j < 3; ++j) expected += wv[i + 2 * j] * input[s * 3 + j];
                    close &= Math.Abs(result[s][i] - expected) < 1e-5;
                }
            Check(close, "Evaluate computes W x + b");

            // Sequences and one-hot data round-trip.
            var seq = Value.CreateBatchOfSequences<float>(new int[] { 2 }, new[] { new float[] { 1, 2, 3, 4, 5, 6 }, new float[] { 7, 8 } }, device);
            var back = seq.GetDenseData<float>(y);
            Check(back.Count == 2 && back[0].SequenceEqual(new float[] { 1, 2, 3, 4, 5, 6 }) && back[1].SequenceEqual(new float[] { 7, 8 }), "CreateBatchOfSequences round-trips through GetDenseData");
            var onehot = Value.CreateBatchOfSequences<float>(4, new[] { new[] { 3, 0 }, new[] { 1 } }, device);
            var hot = onehot.GetOneHotData(Variable.InputVariable(new int[] { 4 }, DataType.Float));
            Check(hot.Count == 2 && hot[0].SequenceEqual(new[] { 3, 0 }) && hot[1].SequenceEqual(new[] { 1 }), "one-hot sequences round-trip through GetOneHotData");
            Check(onehot.IsSparse, "one-hot values are sparse");

            // Save/load (file and bytes), find by name, clone.
            var loaded = Function.Load(z.Save(), device);
            Check(loaded.FindByName("times") != null && loaded.FindByName("nothing") == null, "FindByName after loading from bytes");
            var clone = z.Clone(ParameterCloningMethod.Clone);
            Check(clone.Parameters().Count == 2 && !clone.Parameters()[0].Equals(w) && !clone.Parameters()[0].Equals(b), "Clone copies the parameters");
            var shared = z.Clone(ParameterCloningMethod.Share);
            Check(shared.Parameters().Contains(w), "Clone with Share keeps the parameters");
            var combined = Function.Combine(new List<Variable> { z, CNTKLib.Sigmoid(z) }, "both");
            Check(combined.Outputs.Count == 2 && combined.Arguments.Single().Equals(x), "Combine: two outputs, one argument");

            // Ops with axes: CNTK's static axis 0 is the fastest-varying one.
            var m = Variable.InputVariable(new int[] { 3, 2 }, DataType.Float, "m", new List<Axis> { Axis.DefaultBatchAxis() });
            var mData = Value.CreateBatch(new int[] { 3, 2 }, new float[] { 1, 2, 3, 4, 5, 6 }, device);  // columns (1,2,3), (4,5,6)
            Func<Function, IList<float>> eval = f =>
            {
                var o = new Dictionary<Variable, Value> { { f.Output, null } };
                f.Evaluate(new Dictionary<Variable, Value> { { m, mData } }, o, device);
                return o[f.Output].GetDenseData<float>(f.Output)[0];
            };
            var rs = CNTKLib.ReduceSum(m, new Axis(0));
            Check(rs.Output.Shape.Dimensions.SequenceEqual(new[] { 1, 2 }) && eval(rs).SequenceEqual(new float[] { 6, 15 }), "ReduceSum over axis 0 sums each column");
            var sl = CNTKLib.Slice(m, new AxisVector { new Axis(1) }, new int[] { 1 }, new int[] { 2 });
            Check(sl.Output.Shape.Dimensions.SequenceEqual(new[] { 3, 1 }) && eval(sl).SequenceEqual(new float[] { 4, 5, 6 }), "Slice along axis 1 keeps the second column");
            var sp = CNTKLib.Splice(new List<Variable> { m, m }, new Axis(1));
            Check(sp.Output.Shape.Dimensions.SequenceEqual(new[] { 3, 4 }) && eval(sp).SequenceEqual(new float[] { 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6 }), "Splice along axis 1 appends columns");
            var tr = CNTKLib.TransposeAxes(m, new Axis(0), new Axis(1));
            Check(tr.Output.Shape.Dimensions.SequenceEqual(new[] { 2, 3 }) && eval(tr).SequenceEqual(new float[] { 1, 4, 2, 5, 3, 6 }), "TransposeAxes swaps the axes");
            var rsh = CNTKLib.Reshape(m, new int[] { 6 });
            Check(rsh.Output.Shape.Dimensions.SequenceEqual(new[] { 6 }) && eval(rsh).SequenceEqual(new float[] { 1, 2, 3, 4, 5, 6 }), "Reshape keeps the element order");
            var sm = eval(CNTKLib.Softmax(m));
            Check(Math.Abs(sm.Sum() - 1) < 1e-5 && sm[5] > sm[0], "Softmax without an axis normalizes the whole sample");
            var smAxis = eval(CNTKLib.Softmax(m, new Axis(0)));
            Check(Math.Abs(smAxis[0] + smAxis[1] + smAxis[2] - 1) < 1e-5 && Math.Abs(smAxis[3] + smAxis[4] + smAxis[5] - 1) < 1e-5, "Softmax along axis 0 normalizes each column");
            Check(eval(CNTKLib.Dropout(m, 0.5)).SequenceEqual(new float[] { 1, 2, 3, 4, 5, 6 }), "Dropout passes data through in evaluation");
            var scores = Variable.InputVariable(new int[] { 4 }, DataType.Float, "scores", new List<Axis> { Axis.DefaultBatchAxis() });
            var target = Variable.InputVariable(new int[] { 4 }, DataType.Float, "target", new List<Axis> { Axis.DefaultBatchAxis() });
            var top2 = CNTKLib.ClassificationError(scores, target, 2);
            var topOut = new Dictionary<Variable, Value> { { top2.Output, null } };
            top2.Evaluate(new Dictionary<Variable, Value> {
                { scores, Value.CreateBatch(new int[] { 4 }, new float[] { 0.1f, 0.5f, 0.3f, 0.1f, 0.9f, 0.05f, 0.03f, 0.02f }, device) },
                { target, Value.CreateBatch<float>(4, new[] { 2, 3 }, device) } }, topOut, device);
            var topErr = topOut[top2.Output].GetDenseData<float>(top2.Output);
            Check(topErr[0][0] == 0 && topErr[1][0] == 1, "ClassificationError with topN 2: second-best is right, fourth is wrong");
            Throws<NotImplementedException>(() => z.Save("model.onnx", ModelFormat.ONNX), "Save as ONNX");

            // Errors arrive as CNTK's C# exceptions, with the engine's message.
            Throws<ArgumentOutOfRangeException>(() => CNTKLib.Plus(x, y), "Plus of [3] and [2]");
            Throws<ArgumentOutOfRangeException>(() => z.Evaluate(new Dictionary<Variable, Value> { { x, Value.CreateBatch(new int[] { 2 }, new float[] { 1, 2 }, device) } }, new Dictionary<Variable, Value> { { z.Output, null } }, device), "Evaluate with [2] data for a [3] input");
            Throws<ArgumentOutOfRangeException>(() => Value.CreateBatch(new int[] { 3 }, new float[] { 1, 2 }, device), "CreateBatch with a partial sample");
            Throws<ApplicationException>(() => Function.Load("/nonexistent/model.cntk", device), "Load of a missing file");
            Throws<ArgumentOutOfRangeException>(() => DeviceDescriptor.GPUDevice(0), "GPUDevice(0) without a GPU");
            Throws<ArgumentNullException>(() => CNTKLib.Plus(null, x), "Plus with a null operand");
            Throws<ArgumentNullException>(() => Value.CreateBatch<float>(new int[] { 3 }, null, device), "CreateBatch with null data");
            var disposed = Variable.InputVariable(new int[] { 3 }, DataType.Float, "gone");
            disposed.Dispose();
            disposed.Dispose();
            Throws<ObjectDisposedException>(() => CNTKLib.Tanh(disposed), "an op over a disposed variable");
            var dv = Value.CreateBatch(new int[] { 3 }, input, device);
            dv.Dispose();
            Throws<ObjectDisposedException>(() => dv.GetDenseData<float>(x), "GetDenseData of a disposed value");

            // Training moves the loss down (a trainer over plain values, with sweep end given).
            var loss = CNTKLib.SquaredError(z, y);
            var trainer = Trainer.CreateTrainer(z, loss, null, new List<Learner> { Learner.SGDLearner(z.Parameters(), new TrainingParameterScheduleDouble(0.05, 1)) });
            var args = new Dictionary<Variable, Value> { { x, Value.CreateBatch(new int[] { 3 }, input, device) }, { y, Value.CreateBatch(new int[] { 2 }, new float[] { 1, 0, 0, 1 }, device) } };
            trainer.TrainMinibatch(args, false, device);
            double first = trainer.PreviousMinibatchLossAverage();
            for (int i = 0; i < 50; ++i) trainer.TrainMinibatch(args, false, device);
            Check(trainer.PreviousMinibatchLossAverage() < first / 10 && trainer.TotalNumberOfSamplesSeen() == 102, "SGD on SquaredError: loss " + first + " -> " + trainer.PreviousMinibatchLossAverage());

            // Schedules: (count, value) pairs over epochs of samples.
            var schedule = new TrainingParameterScheduleDouble(new VectorPairSizeTDouble { new PairSizeTDouble(2, 0.1), new PairSizeTDouble(1, 0.01) }, 100);
            Check(schedule[0] == 0.1 && schedule[199] == 0.1 && schedule[200] == 0.01 && schedule[10000] == 0.01 && !schedule.IsSweepBased(), "a piecewise schedule over epochs of 100 samples");
            Check(new TrainingParameterScheduleDouble(0.5, 1).GetMinibatchSize() == 1, "a per-sample schedule has reference minibatch size 1");

            // A composite source over two CTF files joined by sequence id, read once in file order.
            System.IO.File.WriteAllText("api_features.ctf", "0 |f 1 2\n1 |f 3 4\n1 |f 5 6\n2 |f 7 8\n");
            System.IO.File.WriteAllText("api_labels.ctf", "0 |l 1 0\n1 |l 0 1\n2 |l 1 0\n");
            var config = new MinibatchSourceConfig(new List<CNTKDictionary> {
                CNTKLib.CTFDeserializer("api_features.ctf", new StreamConfiguration[] { new StreamConfiguration("features", 2, false, "f") }),
                CNTKLib.CTFDeserializer("api_labels.ctf", new StreamConfiguration[] { new StreamConfiguration("labels", 2, false, "l") }) }, false);
            config.MaxSamples = MinibatchSource.FullDataSweep;
            using (var source = CNTKLib.CreateCompositeMinibatchSource(config))
            {
                var features = source.StreamInfo("features");
                var labelStream = source.StreamInfo("labels");
                var mb = source.GetNextMinibatch(100, device);
                var seqFeatures = Variable.InputVariable(new int[] { 2 }, DataType.Float, "features");
                var data = mb[features].data.GetDenseData<float>(seqFeatures);
                Check(mb[features].numberOfSequences == 3 && mb[features].numberOfSamples == 4 && mb[features].sweepEnd, "a composite source reads 3 sequences, 4 samples, to the sweep's end");
                Check(data.Count == 3 && data[1].SequenceEqual(new float[] { 3, 4, 5, 6 }), "the second sequence has two samples");
                Check(mb[labelStream].data.GetOneHotData(Variable.InputVariable(new int[] { 2 }, DataType.Float, "labels")).Select(l => l[0]).SequenceEqual(new[] { 0, 1, 0 }), "labels joined by sequence id");
                Check(source.GetNextMinibatch(100, device).Count == 0, "one sweep, then no more data");
            }

            // A CNTK v1 model file (argv[0]: CNTK's ResNet-20 for CIFAR-10) loads; its output z is
            // evaluated on a fixed image and the scores printed for the caller to compare with Python.
            if (argv.Length > 0)
            {
                var net = Function.Load(argv[0], device);
                var zr = Function.AsComposite(net.FindByName("z"));
                var image = zr.Arguments.Single();
                var pixels = Enumerable.Range(0, image.Shape.TotalSize).Select(i => (float)(i % 255)).ToArray();
                var scoresOut = new Dictionary<Variable, Value> { { zr.Output, null } };
                zr.Evaluate(new Dictionary<Variable, Value> { { image, Value.CreateBatch(image.Shape, pixels, device) } }, scoresOut, device);
                var v1 = scoresOut[zr.Output].GetDenseData<float>(zr.Output)[0];
                Check(v1.Count == 10 && image.Shape.Dimensions.SequenceEqual(new[] { 32, 32, 3 }), "a CNTK v1 model loads and evaluates");
                Console.WriteLine("v1 scores: " + string.Join(" ", v1.Select(score => score.ToString("R"))));
            }

            Console.WriteLine("ApiTests passed (" + checks + " checks)");
            return 0;
        }
    }
}
