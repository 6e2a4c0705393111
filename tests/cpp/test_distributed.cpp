// Distributed training from C++: the column quantizer against CNTK's formulas worked by hand,
// and the communicator and distributed learners in a world of one worker (a plain launch).
// Multi-worker runs are tested from Python under mpiexec (tests/python/test_distributed.py).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cntk/distributed.h"
#include "cntk/learner.h"
#include "cntk/ops.h"
#include "cntk/trainer.h"
#include "distributed/column_quantizer.h"

using namespace cntk;
using cntk::distributed::ColumnQuantizer;

TEST(ColumnQuantizer, OneBitReconstructsEachSignToItsMeanAndKeepsTheError) {
  // One column of 5 rows: negatives -1, -3 (mean -2), non-negatives 0, 2, 4 (mean 2).
  std::vector<float> x{-1, 2, -3, 0, 4}, residual(5, 0.0f), out(5);
  std::vector<char> q(ColumnQuantizer<float>::column_bytes(5, 1));
  ColumnQuantizer<float>::quantize(x.data(), residual.data(), 5, 1, 1, true, q.data());
  ColumnQuantizer<float>::unquantize(q.data(), 5, 1, 1, out.data(), false);
  const std::vector<float> expected{-2, 2, -2, 2, 2};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_FLOAT_EQ(out[i], expected[i]) << i;
    EXPECT_FLOAT_EQ(residual[i], x[i] - expected[i]) << i;  // error feedback
  }
  // 8 bytes of range and one 32-bit word for 5 rows.
  EXPECT_EQ(q.size(), 12u);
  // The next call quantizes value + residual: a zero gradient sends the carried error.
  std::vector<float> zeros(5, 0.0f);
  ColumnQuantizer<float>::quantize(zeros.data(), residual.data(), 5, 1, 1, true, q.data());
  ColumnQuantizer<float>::unquantize(q.data(), 5, 1, 1, out.data(), false);
  // Carried [1, 0, -1, -2, 2]: non-negatives reconstruct to 1, negatives to -1.5.
  const std::vector<float> carried{1, 1, -1.5f, -1.5f, 1};
  for (size_t i = 0; i < 5; ++i) EXPECT_FLOAT_EQ(out[i], carried[i]) << i;
}

TEST(ColumnQuantizer, MoreBitsQuantizeOnAGridOfFourStandardDeviations) {
  const size_t rows = 100, cols = 3;
  std::vector<double> x(rows * cols), residual(rows * cols, 0.0), out(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(double(i) * 0.7) * (1 + double(i % cols));
  for (size_t bits : {2u, 4u, 8u, 16u}) {
    std::fill(residual.begin(), residual.end(), 0.0);
    std::vector<char> q(cols * ColumnQuantizer<double>::column_bytes(rows, bits));
    ColumnQuantizer<double>::quantize(x.data(), residual.data(), rows, cols, bits, true, q.data());
    ColumnQuantizer<double>::unquantize(q.data(), rows, cols, bits, out.data(), false);
    for (size_t c = 0; c < cols; ++c) {
      double var = 0;
      for (size_t r = 0; r < rows; ++r) var += x[c * rows + r] * x[c * rows + r];
      const double step = 8 * std::sqrt(var / rows) / double((1u << bits) - 1);
      for (size_t r = 0; r < rows; ++r) {
        const size_t i = c * rows + r;
        EXPECT_LE(std::abs(out[i] - x[i]), step) << bits << " bits, " << i;
        EXPECT_DOUBLE_EQ(residual[i], x[i] - out[i]);
      }
    }
  }
}

TEST(Distributed, APlainLaunchIsAWorldOfOneWorker) {
  EXPECT_EQ(worker_global_rank(), 0u);
  EXPECT_EQ(number_of_workers(), 1u);
  auto comm = mpi_communicator();
  ASSERT_EQ(comm->workers().size(), 1u);
  EXPECT_TRUE(comm->current_worker().is_main());
  comm->barrier();
  std::vector<NDArrayView> v{NDArrayView::full(DataType::Float, NDShape{3}, 2.0)};
  comm->aggregate_in_place(v);
  EXPECT_EQ(v[0].data<float>()[1], 2.0f);
  EXPECT_EQ(comm->counters().bytes_sent, 0u);
  EXPECT_THROW(quantized_mpi_communicator(true, true, 3), ValueError);
}

TEST(Distributed, DataParallelLearnerInATrainerUpdatesAsTheLocalLearner) {
  auto run = [](bool distributed) {
    NDArrayView w0(DataType::Float, NDShape{2, 1});
    w0.data<float>()[0] = 0.5f;
    w0.data<float>()[1] = -0.25f;
    Variable x = Variable::input(NDShape{2}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
    Variable w = Variable::parameter(w0.shape(), DataType::Float, w0, nullptr, "w");
    FunctionPtr z = ops::times(x, w);
    FunctionPtr loss = ops::reduce_sum(ops::element_times(z, z));
    LearnerPtr local = sgd_learner({w}, LearningRateSchedule(0.1));
    LearnerPtr learner = distributed ? data_parallel_distributed_learner(mpi_communicator(), local) : local;
    Trainer trainer(z, loss, nullptr, {learner});
    NDArrayView data(DataType::Float, NDShape{3, 2});
    for (int i = 0; i < 6; ++i) data.data<float>()[i] = float(i) * 0.5f - 1.0f;
    for (int step = 0; step < 3; ++step) trainer.train_minibatch({{x, Value(data)}});
    EXPECT_EQ(trainer.total_number_of_samples_seen(), 9u);
    return std::vector<float>{w.value().data<float>()[0], w.value().data<float>()[1]};
  };
  EXPECT_EQ(run(true), run(false));
}
