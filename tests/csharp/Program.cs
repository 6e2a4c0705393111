// Runs one of CNTK's C# training examples (compiled unmodified from ../shared/cntk-csharp) the
// way CNTK's CNTKLibraryCSTrainingTest driver does, printing the lines its baselines hold:
//   mono TrainingExamples.exe <TestName> [<data prefix>]
// The data prefix stands for the root of CNTK's repository (TestCommon.TestDataDirPrefix).
using System;
using CNTK;
using CNTK.CSTrainingExamples;

namespace OpenCNTK.CSharpTests
{
    static class Program
    {
        static int Main(string[] args)
        {
            Console.WriteLine("Test CNTKLibraryCSTrainingExamples");
            Console.WriteLine("======== Train model using CPUOnly build ========");
            string test = args.Length > 0 ? args[0] : "";
            TestCommon.TestDataDirPrefix = args.Length > 1 ? args[1] : "../../";
            DeviceDescriptor device = DeviceDescriptor.CPUDevice;
            switch (test)
            {
                case "LogisticRegressionTest":
                    Console.WriteLine($"======== running LogisticRegression.TrainAndEvaluate using {device.Type} ========");
                    LogisticRegression.TrainAndEvaluate(device);
                    break;
                case "SimpleFeedForwardClassifierTest":
                    Console.WriteLine($"======== running SimpleFeedForwardClassifierTest.TrainSimpleFeedForwardClassifier using {device.Type} ========");
                    CNTK.CNTKLibraryCSTrainingTest.SimpleFeedForwardClassifierTest.TrainSimpleFeedForwardClassifier(device);
                    break;
                case "MNISTClassifierTest":
                    Console.WriteLine($"======== running MNISTClassifier.TrainAndEvaluate with Convnet using {device.Type} ========");
                    MNISTClassifier.TrainAndEvaluate(device, true, true);
                    break;
                case "MNISTClassifierMLPTest":
                    Console.WriteLine($"======== running MNISTClassifier.TrainAndEvaluate using {device.Type} with MLP classifier ========");
                    MNISTClassifier.TrainAndEvaluate(device, false, true);
                    break;
                case "LSTMSequenceClassifierTest":
                    Console.WriteLine($"======== running LSTMSequenceClassifier.Train using {device.Type} ========");
                    LSTMSequenceClassifier.Train(device);
                    break;
                default:
                    Console.WriteLine("'{0}' is not a valid test name.", test);
                    return 2;
            }
            Console.WriteLine("======== Train completes. ========");
            return 0;
        }
    }
}
