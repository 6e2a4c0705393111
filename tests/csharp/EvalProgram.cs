// Runs the evaluation examples of CNTK's CNTKLibraryCSEvalExamples.cs that need only a model file
// and arrays (the ATIS slot tagger fed one-hot, batched and sparse sequences):
//   mono EvalExamples.exe <folder with atis.dnn, query.wl, slots.wl>
// The image examples need CNTK's ResNet-20 model and sample images, which are not available.
using System;
using CNTK;
using CNTKLibraryCSEvalExamples;

namespace OpenCNTK.CSharpTests
{
    static class EvalProgram
    {
        static int Main(string[] args)
        {
            Console.WriteLine("======== Evaluate model using C# CPUOnly Build ========");
            CNTKLibraryManagedExamples.ExampleTestDataDir = args.Length > 0 ? args[0] : ".";
            CNTKLibraryManagedExamples.Setup();
            CNTKLibraryManagedExamples.EvaluationSingleSequenceUsingOneHot(DeviceDescriptor.CPUDevice);
            CNTKLibraryManagedExamples.EvaluationBatchOfSequencesUsingOneHot(DeviceDescriptor.CPUDevice);
            CNTKLibraryManagedExamples.EvaluationSingleSequenceUsingSparse(DeviceDescriptor.CPUDevice);
            Console.WriteLine("======== Evaluation completes. ========");
            return 0;
        }
    }
}
