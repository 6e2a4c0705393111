// What CNTK's LearnableParameter and TraceNode computed themselves, for the primitives
// (primitives.cpp): parameter values read from CNTK's text matrix format (a file or a string
// literal), the bilinear upsampling kernel, and the Trace pass-through that logs values.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "brainscript/write_format.h"
#include "cntk/tensor.h"
#include "cntk/variable.h"

namespace cntk::brainscript::detail {

// CNTK's text matrix: one line per matrix row, its numbers separated by white space; blank lines
// are skipped. `values` holds the matrix column by column (CNTK's column-major order).
struct TextMatrix {
  size_t rows = 0, cols = 0;
  std::vector<double> values;
};
TextMatrix parse_text_matrix(const std::string& text, const std::string& source);
TextMatrix read_text_matrix(const std::string& path);  // IOError when the file cannot be read

// A parameter's value from a text matrix. `dims` (BrainScript order, first-fastest; 0 = inferred)
// are completed from the matrix as CNTK did: rank 0 becomes 1, rank 1 gains a second axis unless
// the matrix is one column, a 0 first dimension is the matrix's rows, and one 0 among the others
// is what makes their product the matrix's columns. The matrix must then be [dims[0] x product of
// the others]; otherwise a ValueError names `source` and both shapes. The result is in engine
// (NumPy) order: the column-major matrix read as the reversed shape.
NDArrayView parameter_from_matrix(std::vector<size_t>& dims, const TextMatrix& m, const std::string& source,
                                  DataType dtype);

// CNTK's bilinear interpolation kernel for a transposed convolution that upsamples each channel
// on its own: BrainScript dims [k x k x C x C] (more trailing axes of 1 allowed), weight
// (1 - |w - c| / f) (1 - |h - c| / f) where input and output channel agree, 0 elsewhere, with
// f = (k + 1) / 2 (whole-number division) and c = (k - 1) / 2.
NDArrayView bilinear_kernel(const std::vector<size_t>& dims, DataType dtype);

// CNTK's Trace node: `x` unchanged, whose values are printed to stderr on forward passes (the
// first `log_first` minibatches and then every `log_frequency`-th), and with `log_gradient` its
// gradients on backward passes too, in CNTK's write format. The defaults are CNTK.core.bs's
// (logFrequency 100; the comment on CNTK's TraceNode says 10, the library decides).
struct TraceOptions {
  std::string say;
  size_t log_frequency = 100, log_first = 10;
  bool log_gradient = false;
  WriteFormat format;  // CNTK's Trace defaults onlyUpToRow and onlyUpToT to 100000000
};
Variable trace(const Variable& x, TraceOptions options, const std::string& name);

}  // namespace cntk::brainscript::detail
