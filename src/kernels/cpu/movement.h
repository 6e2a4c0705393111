// Data movement loops: strided copies between views (slices, pads, splices,
// permutations) and row gathers/scatters (embedding-style lookups).
#pragma once
#include <vector>

#include "cntk/tensor.h"

namespace cntk::kernels {

// A window into a tensor's storage. Unlike NDArrayView it may step backwards
// (negative strides), which reversed slices need. Strides count elements.
struct StridedView {
  DataType dtype = DataType::Unknown;
  char* data = nullptr;  // the first element of the window
  std::vector<int64_t> dims, strides;

  // The window of a dense view (strides and broadcast zeros kept).
  static StridedView of(const NDArrayView& x);
  // Keeps indices begin, begin + stride, ... < end along `axis`. A negative stride
  // walks the same range backwards from end - 1 (CNTK's reversed slice).
  StridedView narrow(size_t axis, int64_t begin, int64_t end, int64_t stride = 1) const;
  int64_t numel() const;
};

// dst = src element by element (same dims; any element type).
void copy(const StridedView& dst, const StridedView& src);
// dst += src element by element (same dims; float or double). The elements of dst must be distinct.
void accumulate(const StridedView& dst, const StridedView& src);

// out[k, :] = table[index[k], :] for a contiguous table [N, M] and out [K, M].
void gather_rows(const NDArrayView& table, const std::vector<int64_t>& index, NDArrayView& out);
// table[index[k], :] += rows[k, :] (repeated indices add up).
void scatter_add_rows(NDArrayView& table, const std::vector<int64_t>& index, const NDArrayView& rows);

}  // namespace cntk::kernels
