// The oneDNN engine (the CPU) and a stream per thread, shared by every kernel that runs
// oneDNN primitives (convolution, pooling, normalization, softmax, eltwise, RNN).
#pragma once

#include <dnnl.hpp>

namespace cntk::kernels {

inline dnnl::engine& dnnl_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  return s;
}

}  // namespace cntk::kernels
