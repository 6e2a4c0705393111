// Builds a small graph in C++, runs it forward and backward, prints the output
// and the gradients, and checks the gradient of the weights against central
// finite differences. Exits with status 1 when they disagree (runs under ctest).
//
//   x : input (3,) with a batch axis
//   z = tanh(x @ W + b)        W: (3, 4), b: (4,)
//   loss = reduce_sum(z)       over the static axis: one number per sample
#include <cmath>
#include <cstdio>
#include <string>

#include "cntk/evaluation.h"
#include "cntk/ops.h"
#include "keep_model.h"

using namespace cntk;

namespace {

// A float32 array of the given shape filled from a list of numbers.
NDArrayView array(const NDShape& shape, std::initializer_list<float> values) {
  NDArrayView v(DataType::Float, shape);
  if (int64_t(values.size()) != v.numel()) throw ValueError("array: wrong number of values for " + shape.str());
  float* p = v.data<float>();
  for (float x : values) *p++ = x;
  return v;
}

// Prints a 1-D or 2-D float32 array.
void print(const std::string& label, const NDArrayView& v) {
  NDArrayView c = v.contiguous();
  const float* p = c.data<float>();
  int64_t cols = c.rank() == 0 ? 1 : c.shape()[c.rank() - 1];
  int64_t rows = c.numel() / cols;
  std::printf("%s %s\n", label.c_str(), c.shape().str().c_str());
  for (int64_t r = 0; r < rows; ++r) {
    std::printf("   ");
    for (int64_t k = 0; k < cols; ++k) std::printf(" %9.5f", p[r * cols + k]);
    std::printf("\n");
  }
}

// The loss summed over the batch, from a plain (inference) forward pass.
double total_loss(const FunctionPtr& f, const Variable& x, const Value& data) {
  std::vector<Value> outs;
  forward(f, {{x, data}}, {}, outs, /*keep_for_backward=*/false);
  NDArrayView y = outs[0].data().contiguous();
  double s = 0;
  for (int64_t i = 0; i < y.numel(); ++i) s += y.data<float>()[i];
  return s;
}

}  // namespace

int main() {
  using namespace cntk::ops;

  auto x = Variable::input({3}, DataType::Float, false, /*needs_gradient=*/true, {Axis::default_batch_axis()}, "x");
  auto W = Variable::parameter({3, 4}, DataType::Float,
                               array({3, 4}, {0.1f, -0.2f, 0.3f, 0.05f,    //
                                              -0.4f, 0.25f, 0.15f, -0.1f,  //
                                              0.2f, 0.1f, -0.3f, 0.35f}),
                               nullptr, "W");
  auto b = Variable::parameter({4}, DataType::Float, array({4}, {0.01f, -0.02f, 0.03f, 0.0f}), nullptr, "b");

  auto z = tanh(plus(times(x, W), b), "z");
  auto loss = reduce_sum(z, Axis::all_static_axes(), /*keepdims=*/true, "loss");
  std::printf("graph: loss %s = reduce_sum(tanh(x %s @ W %s + b %s))\n", loss->output().shape().str().c_str(),
              x.shape().str().c_str(), W.shape().str().c_str(), b.shape().str().c_str());

  // A batch of two samples.
  Value data(array({2, 3}, {1.0f, 2.0f, -1.0f,  //
                            0.5f, -1.5f, 2.0f}));

  // Forward, keeping what backward needs.
  std::vector<Value> outputs;
  auto state = forward(loss, {{x, data}}, {loss->output()}, outputs, /*keep_for_backward=*/true);
  print("loss", outputs[0].data());

  // Backward from d(loss)/d(loss) = 1 for every sample.
  Value ones(NDArrayView::full(DataType::Float, outputs[0].shape(), 1.0));
  std::vector<Value> grads;
  backward(state, {{loss->output(), ones}}, {W, b, x}, grads);
  print("d loss / d W", grads[0].data());
  print("d loss / d b", grads[1].data());
  print("d loss / d x", grads[2].data());

  // Central differences on every weight: d(sum of losses)/dW[i, j].
  const double eps = 1e-2, tol = 2e-3;
  NDArrayView w0 = W.value().copy();
  NDArrayView g = grads[0].data().contiguous();
  double worst = 0;
  for (int64_t i = 0; i < w0.numel(); ++i) {
    NDArrayView w = w0.copy();
    float* p = w.data<float>();
    const float orig = p[i];
    p[i] = float(orig + eps);
    W.set_value(w);
    double up = total_loss(loss, x, data);
    p[i] = float(orig - eps);
    W.set_value(w);
    double down = total_loss(loss, x, data);
    double numeric = (up - down) / (2 * eps);
    double err = std::abs(numeric - g.data<float>()[i]);
    worst = std::max(worst, err);
    if (err > tol) {
      std::printf("MISMATCH at W[%lld, %lld]: backward %.6f, finite difference %.6f\n", (long long)(i / 4),
                  (long long)(i % 4), g.data<float>()[i], numeric);
    }
  }
  W.set_value(w0);
  keep_model(loss, "graph_gradients");
  std::printf("finite-difference check of d loss / d W: max abs error %.2e (tolerance %.0e): %s\n", worst, tol,
              worst <= tol ? "ok" : "FAILED");
  return worst <= tol ? 0 : 1;
}
