// Data-parallel training from C++ over MPI, without Python: run it as
//
//   mpiexec -n 2 ./train_distributed
//
// Every worker builds the same two-layer network (parameters initialized from one seed), takes
// its share of each global minibatch of synthetic data, and trains with a data-parallel
// distributed learner around momentum SGD: the gradients are summed over the workers before
// each update, so every worker applies the same update. The program then checks what the
// distributed learner promises and exits with status 1 where it does not hold:
//
//  - every worker ends with the same parameters, bit for bit (compared through all_gather);
//  - those parameters equal, within 1e-5, the parameters one process reaches training the same
//    network on the whole global minibatches (trained here too, in every worker);
//  - the 1-bit learner (CNTK's 1-bit SGD) also ends with identical parameters on every worker,
//    and sends far fewer bytes than the exact one.
//
// Started without mpiexec it is a world of one worker and the checks still hold. ctest runs it
// under mpiexec with two workers where Open MPI's mpiexec is installed.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cntk/distributed.h"
#include "cntk/ops.h"
#include "cntk/trainer.h"
#include "keep_model.h"

using namespace cntk;

namespace {

constexpr int64_t kInputs = 16, kHidden = 32, kClasses = 4, kGlobalBatch = 48, kSteps = 40;

struct Model {
  Variable x, y;
  FunctionPtr z, loss, error;
};

NDArrayView uniform(NDShape shape, double scale, std::mt19937& rng) {
  NDArrayView a(DataType::Float, shape);
  std::uniform_real_distribution<float> u(-float(scale), float(scale));
  for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = u(rng);
  return a;
}

// The same initial parameters in every worker and for the reference: one seed.
Model make_model() {
  using namespace cntk::ops;
  std::mt19937 rng(7);
  Model m;
  m.x = Variable::input({kInputs}, DataType::Float, false, false, {Axis::default_batch_axis()}, "x");
  m.y = Variable::input({kClasses}, DataType::Float, false, false, {Axis::default_batch_axis()}, "y");
  auto param = [&](NDShape shape, double scale, const char* name) {
    return Variable::parameter(shape, DataType::Float, uniform(shape, scale, rng), nullptr, name);
  };
  Variable w1 = param({kInputs, kHidden}, 0.3, "W1"), b1 = param({kHidden}, 0.0, "b1");
  Variable w2 = param({kHidden, kClasses}, 0.3, "W2"), b2 = param({kClasses}, 0.0, "b2");
  auto h = tanh(plus(times(m.x, w1), b1));
  m.z = plus(times(h->output(), w2), b2, "z");
  m.loss = cross_entropy_with_softmax(m.z, m.y, -1, "loss");
  m.error = classification_error(m.z, m.y, "error");
  return m;
}

// Global minibatch `step`: the label is the largest of the first kClasses features.
void global_batch(int64_t step, NDArrayView& features, NDArrayView& labels) {
  std::mt19937 rng(uint32_t(1000 + step));
  std::normal_distribution<float> n(0.0f, 1.0f);
  features = NDArrayView(DataType::Float, NDShape{kGlobalBatch, kInputs});
  labels = NDArrayView(DataType::Float, NDShape{kGlobalBatch, kClasses});
  labels.fill(0.0);
  for (int64_t i = 0; i < kGlobalBatch; ++i) {
    float* f = features.data<float>() + i * kInputs;
    for (int64_t k = 0; k < kInputs; ++k) f[k] = n(rng);
    int64_t best = 0;
    for (int64_t k = 1; k < kClasses; ++k)
      if (f[k] > f[best]) best = k;
    labels.data<float>()[i * kClasses + best] = 1.0f;
  }
}

NDArrayView rows(const NDArrayView& a, int64_t begin, int64_t count) {
  const int64_t k = a.shape()[1];
  NDArrayView r(a.dtype(), NDShape{count, k});
  std::memcpy(r.data<float>(), a.data<float>() + begin * k, size_t(count * k) * sizeof(float));
  return r;
}

// Trains kSteps steps; with a communicator, each worker takes its share of every global
// minibatch. Returns the parameters, concatenated.
std::vector<float> train(const CommunicatorPtr& comm, CommunicatorPtr* used = nullptr) {
  Model m = make_model();
  LearningRateSchedule lr(0.2);
  MomentumSchedule momentum(0.9);
  LearnerPtr learner = momentum_sgd_learner(m.z->parameters(), lr, momentum);
  const size_t workers = comm ? comm->num_workers() : 1, rank = comm ? comm->rank() : 0;
  if (comm) learner = data_parallel_distributed_learner(comm, learner);
  Trainer trainer(m.z, m.loss, m.error, {learner});
  const int64_t per = kGlobalBatch / int64_t(workers);
  for (int64_t step = 0; step < kSteps; ++step) {
    NDArrayView f, l;
    global_batch(step, f, l);
    if (comm) {
      f = rows(f, int64_t(rank) * per, per);
      l = rows(l, int64_t(rank) * per, per);
    }
    trainer.train_minibatch({{m.x, Value(f)}, {m.y, Value(l)}});
  }
  if (used) *used = comm;
  // Worker 0 keeps its model (the last distributed run's: 1-bit SGD).
  if (comm && comm->rank() == 0) keep_model(m.z, "train_distributed");
  std::vector<float> out;
  for (auto& p : m.z->parameters()) {
    NDArrayView v = p.value().contiguous();
    out.insert(out.end(), v.data<float>(), v.data<float>() + v.numel());
  }
  return out;
}

// Whether every worker holds exactly these values.
bool same_everywhere(const CommunicatorPtr& comm, const std::vector<float>& values) {
  const std::string mine(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  for (const std::string& theirs : comm->all_gather(mine))
    if (theirs != mine) return false;
  return true;
}

}  // namespace

int main() {
  CommunicatorPtr exact = mpi_communicator();
  const size_t rank = exact->rank(), workers = exact->num_workers();
  if (kGlobalBatch % int64_t(workers) != 0) {
    if (rank == 0)
      std::printf("the global minibatch of %lld does not split over %zu workers\n", (long long)kGlobalBatch, workers);
    Communicator::finalize();
    return 1;
  }
  int failures = 0;
  auto fail = [&](const char* what) {
    std::printf("worker %zu: FAILED: %s\n", rank, what);
    ++failures;
  };

  const std::vector<float> reference = train(nullptr);
  const std::vector<float> distributed = train(exact);
  if (!same_everywhere(exact, distributed)) fail("the exact learner's workers hold different parameters");
  double worst = 0;
  for (size_t i = 0; i < reference.size(); ++i)
    worst = std::max(worst, double(std::fabs(reference[i] - distributed[i])));
  if (!(worst <= 1e-5)) fail("the exact learner's parameters differ from one process's");
  const uint64_t exact_bytes = exact->counters().bytes_sent;

  CommunicatorPtr one_bit = quantized_mpi_communicator(true, true, 1);
  const std::vector<float> quantized = train(one_bit);
  if (!same_everywhere(one_bit, quantized)) fail("the 1-bit learner's workers hold different parameters");
  const uint64_t one_bit_bytes = one_bit->counters().bytes_sent;
  if (workers > 1 && !(one_bit_bytes * 3 < exact_bytes)) fail("1-bit SGD did not send fewer bytes");

  std::printf(
      "worker %zu of %zu: %lld steps; largest difference from one process %.2g; bytes sent: exact %llu, "
      "1-bit %llu; overlapped exchanges %llu\n",
      rank, workers, (long long)kSteps, worst, (unsigned long long)exact_bytes, (unsigned long long)one_bit_bytes,
      (unsigned long long)exact->counters().overlapped_exchanges);
  Communicator::finalize();
  return failures ? 1 : 0;
}
