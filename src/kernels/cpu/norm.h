// Normalization kernels: batch normalization (statistics, normalization and
// gradients) and local response normalization across channels.
//
// Batch normalization sees its input as [N, C, S]: N samples, C features with a
// statistic each, S positions sharing a feature's statistic (the spatial positions
// of a channel; 1 when not spatial). Rows of N may be marked invalid (padding of
// sequences): they do not count in the statistics and get no gradient.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "cntk/tensor.h"

namespace cntk {
struct LayoutValue;  // kernels/backend.h
}

namespace cntk::kernels {

struct BatchNormDims {
  int64_t N = 1, C = 1, S = 1;
};

// Per-feature mean and biased variance over the valid rows, accumulated in double.
// `valid` is null (every row counts) or holds one flag per row of N.
void batch_norm_moments(const NDArrayView& x, BatchNormDims d, const std::vector<uint8_t>* valid,
                        std::vector<double>& mean, std::vector<double>& variance);

// y = scale * (x - mean) * inv_std + bias, per feature.
NDArrayView batch_norm_apply(const NDArrayView& x, BatchNormDims d, const NDArrayView& scale, const NDArrayView& bias,
                             const std::vector<double>& mean, const std::vector<double>& inv_std);

// float32 inference through oneDNN with given mean and variance. False when oneDNN cannot run it.
bool batch_norm_infer_primitive(const NDArrayView& x, BatchNormDims d, const NDArrayView& scale,
                                const NDArrayView& bias, const NDArrayView& mean, const NDArrayView& variance,
                                double epsilon, NDArrayView& y);

// The same over x in a oneDNN layout (dims [N, C, spatial...], C the features); y in x's
// layout. Null where oneDNN cannot run it.
std::shared_ptr<LayoutValue> batch_norm_infer_layout(const LayoutValue& x, BatchNormDims d, const NDArrayView& scale,
                                                     const NDArrayView& bias, const NDArrayView& mean,
                                                     const NDArrayView& variance, double epsilon);

// batch_norm_moments over x in a oneDNN layout (dims [N, C, spatial...], C the features,
// every row valid), read where it lies: the same numbers, to the last bit. False where the
// layout is not one it reads (plain strides, or one block of channels innermost). Training
// then normalizes with these through batch_norm_infer_layout and takes its gradients from
// batch_norm_backward_layout.
bool batch_norm_moments_layout(const LayoutValue& x, BatchNormDims d, std::vector<double>& mean,
                               std::vector<double>& variance);

struct BatchNormGrads {
  NDArrayView dx, dscale, dbias;  // dscale/dbias have the scale's shape
};

// Gradients of y = scale * (x - M) * I + bias where M and I blend the batch's statistics
// (weight `stats_weight`) with fixed running ones: the batch statistics' share of the
// gradient is scaled by stats_weight (0: the statistics are constants).
//   dbias = sum dy, dscale = sum dy * xhat, xhat = (x - M) * I,
//   dx = scale * I * (dy - stats_weight * (xhat * dscale + dbias) / m), m = valid rows * S.
BatchNormGrads batch_norm_backward(const NDArrayView& x, const NDArrayView& dy, BatchNormDims d,
                                   const NDArrayView& scale, const std::vector<double>& mean,
                                   const std::vector<double>& inv_std, double stats_weight,
                                   const std::vector<uint8_t>* valid);

// Gradients of a training normalization of x in a oneDNN layout with its batch statistics
// (mean, biased variance; not constants) from dy in a oneDNN layout (dyb) or plain (dy): dx
// in x's layout, dscale and dbias of the scale's shape. False where oneDNN cannot run it.
bool batch_norm_backward_layout(const LayoutValue& x, const LayoutValue* dyb, const NDArrayView& dy, BatchNormDims d,
                                const NDArrayView& scale, const std::vector<float>& mean,
                                const std::vector<float>& variance, double epsilon, std::shared_ptr<LayoutValue>& dx,
                                NDArrayView& dscale, NDArrayView& dbias);

// Local response normalization across channels of x viewed as [N, C, S]:
// y = x / (bias + alpha / (2r+1) * sum_{|j-c|<=r} x_j^2) ^ beta.
NDArrayView lrn_forward(const NDArrayView& x, int64_t N, int64_t C, int64_t S, int64_t radius, double bias,
                        double alpha, double beta);
NDArrayView lrn_backward(const NDArrayView& x, const NDArrayView& dy, int64_t N, int64_t C, int64_t S, int64_t radius,
                         double bias, double alpha, double beta);

// The same through oneDNN's LRN primitive over x in a oneDNN layout (dims [N, C, ...]):
// y (forward) and dx (backward, from dy in a oneDNN layout, dyb, or plain, dy) in x's
// layout. Null where oneDNN cannot run it.
std::shared_ptr<LayoutValue> lrn_forward_layout(const LayoutValue& x, int64_t radius, double bias, double alpha,
                                                double beta);
std::shared_ptr<LayoutValue> lrn_backward_layout(const LayoutValue& x, const LayoutValue* dyb, const NDArrayView& dy,
                                                 int64_t radius, double bias, double alpha, double beta);

}  // namespace cntk::kernels
