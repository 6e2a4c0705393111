// The image helpers CNTK's C# evaluation examples call (CNTK shipped them as a separate source
// file, Examples/Evaluation/ImageExtension, which is not part of the C# API): resizing a bitmap and
// reading its pixels channel by channel. The examples' image functions need a ResNet model and
// images; the tests run only their sequence examples, so these compile the file and are not run.
using System.Collections.Generic;
using System.Drawing;
using System.Drawing.Drawing2D;

namespace CNTKImageProcessing
{
    public static class CNTKImageProcessing
    {
        // The image's pixels as planes (blue, green, red; CNTK's image readers' channel order),
        // each row after row.
        public static List<float> ParallelExtractCHW(this Bitmap image)
        {
            var planes = new List<float>(image.Width * image.Height * 3);
            for (int channel = 0; channel < 3; ++channel)
                for (int row = 0; row < image.Height; ++row)
                    for (int col = 0; col < image.Width; ++col)
                    {
                        Color c = image.GetPixel(col, row);
                        planes.Add(channel == 0 ? c.B : channel == 1 ? c.G : c.R);
                    }
            return planes;
        }

        public static Bitmap Resize(this Bitmap image, int width, int height, bool useHighQuality)
        {
            var result = new Bitmap(width, height);
            using (var g = Graphics.FromImage(result))
            {
                g.InterpolationMode = useHighQuality ? InterpolationMode.HighQualityBicubic : InterpolationMode.Bilinear;
                g.DrawImage(image, new Rectangle(0, 0, width, height));
            }
            return result;
        }
    }
}
