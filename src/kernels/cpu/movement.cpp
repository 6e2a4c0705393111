#include "kernels/cpu/movement.h"

#include <omp.h>

#include <cstring>

#include "kernels/cpu/elementwise.h"

namespace cntk::kernels {

StridedView StridedView::of(const NDArrayView& x) {
  if (x.is_sparse()) throw ValueError("StridedView: the view is sparse");
  StridedView v;
  v.dtype = x.dtype();
  v.data = static_cast<char*>(x.storage()->data()) + x.offset() * int64_t(element_size(x.dtype()));
  v.dims = x.shape().dims();
  v.strides = x.strides();
  return v;
}

StridedView StridedView::narrow(size_t axis, int64_t begin, int64_t end, int64_t stride) const {
  if (axis >= dims.size()) throw ValueError("narrow: axis out of range");
  if (stride == 0 || begin < 0 || end > dims[axis] || begin >= end)
    throw ValueError("narrow: range [" + std::to_string(begin) + ", " + std::to_string(end) + ") with stride " +
                     std::to_string(stride) + " is invalid for an axis of size " + std::to_string(dims[axis]));
  StridedView v = *this;
  int64_t step = stride < 0 ? -stride : stride;
  int64_t start = stride < 0 ? end - 1 : begin;
  v.data += start * strides[axis] * int64_t(element_size(dtype));
  v.dims[axis] = (end - begin + step - 1) / step;
  v.strides[axis] = strides[axis] * stride;
  return v;
}

int64_t StridedView::numel() const {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

namespace {

// Dims with size-1 axes dropped and neighbours merged where both views allow it.
struct CopyPlan {
  std::vector<int64_t> dims, dst, src;
  int64_t total = 1;
};

CopyPlan plan_copy(const StridedView& d, const StridedView& s) {
  if (d.dims != s.dims) throw ValueError("copy: views of different shapes");
  CopyPlan p;
  for (size_t i = 0; i < d.dims.size(); ++i) {
    int64_t n = d.dims[i];
    p.total *= n;
    if (n == 1) continue;
    if (!p.dims.empty() && p.dst.back() == d.strides[i] * n && p.src.back() == s.strides[i] * n) {
      p.dims.back() *= n;
      p.dst.back() = d.strides[i];
      p.src.back() = s.strides[i];
    } else {
      p.dims.push_back(n);
      p.dst.push_back(d.strides[i]);
      p.src.push_back(s.strides[i]);
    }
  }
  if (p.dims.empty()) {
    p.dims = {1};
    p.dst = {1};
    p.src = {1};
  }
  return p;
}

template <class T, bool Add>
void run_copy(const StridedView& dv, const StridedView& sv) {
  CopyPlan p = plan_copy(dv, sv);
  if (p.total == 0) return;
  T* dst = reinterpret_cast<T*>(dv.data);
  const T* src = reinterpret_cast<const T*>(sv.data);
  size_t r = p.dims.size();
  int64_t inner = p.dims[r - 1], di = p.dst[r - 1], si = p.src[r - 1];
  int64_t outer = p.total / inner;
  auto rows = [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(r, 0);
    int64_t od = 0, os = 0, rem = b;
    for (size_t a = r - 1; a-- > 0;) {
      idx[a] = rem % p.dims[a];
      rem /= p.dims[a];
      od += idx[a] * p.dst[a];
      os += idx[a] * p.src[a];
    }
    for (int64_t row = b; row < e; ++row) {
      T* d = dst + od;
      const T* s = src + os;
      if (di == 1 && si == 1) {
        if constexpr (Add) {
#pragma omp simd
          for (int64_t i = 0; i < inner; ++i) d[i] += s[i];
        } else {
          std::memcpy(d, s, inner * sizeof(T));
        }
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          if constexpr (Add)
            d[i * di] += s[i * si];
          else
            d[i * di] = s[i * si];
        }
      }
      for (size_t a = r - 1; a-- > 0;) {
        ++idx[a];
        od += p.dst[a];
        os += p.src[a];
        if (idx[a] < p.dims[a]) break;
        od -= p.dst[a] * p.dims[a];
        os -= p.src[a] * p.dims[a];
        idx[a] = 0;
      }
    }
  };
  int threads = p.total >= kParallelGrain && outer > 1 ? omp_get_max_threads() : 1;
  if (threads <= 1) {
    rows(0, outer);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t b = outer * t / nt, e = outer * (t + 1) / nt;
    if (b < e) rows(b, e);
  }
}

}  // namespace

void copy(const StridedView& dst, const StridedView& src) {
  if (dst.dtype != src.dtype) throw TypeError("copy: views of different data types");
  switch (element_size(dst.dtype)) {
    case 2: run_copy<uint16_t, false>(dst, src); break;
    case 4: run_copy<uint32_t, false>(dst, src); break;
    case 8: run_copy<uint64_t, false>(dst, src); break;
    default: throw TypeError("copy: unsupported data type");
  }
}

void accumulate(const StridedView& dst, const StridedView& src) {
  if (dst.dtype != src.dtype) throw TypeError("accumulate: views of different data types");
  CNTK_DISPATCH_FLOAT(dst.dtype, T, [&] { run_copy<T, true>(dst, src); });
}

void gather_rows(const NDArrayView& table, const std::vector<int64_t>& index, NDArrayView& out) {
  int64_t n = table.shape().rank() ? table.shape()[0] : 1;
  int64_t m = n ? table.numel() / n : 0;
  int64_t k = int64_t(index.size());
  if (out.numel() != k * m) throw ValueError("gather_rows: output size does not match");
  size_t es = element_size(table.dtype());
  const char* src = static_cast<const char*>(table.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  int threads = k * m >= kParallelGrain ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(threads) if (threads > 1)
  for (int64_t i = 0; i < k; ++i) std::memcpy(dst + i * m * es, src + index[i] * m * es, m * es);
}

namespace {
// Rows may repeat, so they are added one after another; each row is one vector loop.
template <class T>
void add_rows(T* dst, const T* src, const std::vector<int64_t>& index, int64_t m) {
  for (size_t i = 0; i < index.size(); ++i) {
    T* d = dst + index[i] * m;
    const T* s = src + int64_t(i) * m;
#pragma omp simd
    for (int64_t j = 0; j < m; ++j) d[j] += s[j];
  }
}
}  // namespace

void scatter_add_rows(NDArrayView& table, const std::vector<int64_t>& index, const NDArrayView& rows) {
  int64_t n = table.shape().rank() ? table.shape()[0] : 1;
  int64_t m = n ? table.numel() / n : 0;
  int64_t k = int64_t(index.size());
  if (rows.numel() != k * m) throw ValueError("scatter_add_rows: row count does not match");
  CNTK_DISPATCH_FLOAT(table.dtype(), T, [&] { add_rows(table.data<T>(), rows.data<T>(), index, m); });
}

}  // namespace cntk::kernels
