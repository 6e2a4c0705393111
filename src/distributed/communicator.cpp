// The MPI world and the communicator's collectives.
//
// Aggregation is a reduce-scatter followed by an all-gather, written with
// point-to-point messages so that (a) each stripe is summed by one worker in a
// fixed order, which makes the sums bit-identical on every worker and from run
// to run, (b) the quantized variant is the same exchange with quantized stripes
// (CNTK's 1-bit SGD exchange), and (c) every byte handed to MPI is counted.
#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cntk/distributed.h"
#include "distributed/column_quantizer.h"
#include "distributed/mpi_world.h"

namespace cntk {

namespace distributed {

namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw Error(std::string("MPI: ") + what + " failed on rank " + std::to_string(world().rank) + ": " +
              std::string(text, size_t(len)) + " (another worker may have died)");
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

// A worker that ends (finalize, or the end of its program) first tells every other worker
// so with a message of this tag, then waits for theirs. A worker waiting in an exchange
// sees the message and raises, instead of waiting forever for a peer that is gone (the
// workers ran different numbers of exchanges); the job then ends as on any error.
constexpr int kLeaveTag = 3;

// The rank of a worker that has left, or -1.
int worker_that_left() {
  int flag = 0;
  MPI_Status st;
  MPI_Iprobe(MPI_ANY_SOURCE, kLeaveTag, MPI_COMM_WORLD, &flag, &st);
  return flag ? st.MPI_SOURCE : -1;
}

[[noreturn]] void raise_worker_left(int who) {
  throw Error("distributed: worker " + std::to_string(who) + " of " + std::to_string(world().size) +
              " ended its program (or called finalize) while worker " + std::to_string(world().rank) +
              " waited for it in an exchange: the workers did not run the same exchanges (a worker out of "
              "data must keep calling train_minibatch with empty data until all are done)");
}

// Completes `reqs`, watching for workers that have left (MPI_Waitall would wait forever).
// A worker leaves only after its own part of every exchange is done, but this worker's
// part may still need messages from the others (a collective's later rounds): a leave
// is an error only when the exchange has not completed a while later.
void wait_all(std::vector<MPI_Request>& reqs, const char* what) {
  constexpr auto kGrace = std::chrono::seconds(10);
  std::optional<std::chrono::steady_clock::time_point> seen_leave;
  for (unsigned spins = 0;; ++spins) {
    int done = 0;
    check(MPI_Testall(int(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE), what);
    if (done) return;
    if ((spins & 63) == 0)
      if (const int who = worker_that_left(); who >= 0) {
        const auto now = std::chrono::steady_clock::now();
        if (!seen_leave) seen_leave = now;
        if (now - *seen_leave > kGrace) raise_worker_left(who);
      }
    // Open MPI's own waits poll too (yielding when the host is oversubscribed); a long
    // wait (another worker still computing) sleeps between polls.
    if (spins > 1000000)
      usleep(200);
    else if (spins > 1000)
      sched_yield();
  }
}

void wait_one(MPI_Request& req, const char* what) {
  std::vector<MPI_Request> one{req};
  wait_all(one, what);
  req = one[0];
}

}  // namespace

World::World() {
  char host[MPI_MAX_PROCESSOR_NAME] = {0};
  if (!launched_by_mpi()) {
    // A plain launch is a world of one worker, and MPI is never started.
    if (gethostname(host, sizeof host) != 0) std::strcpy(host, "localhost");
    hosts.push_back(host);
    return;
  }
  int provided = 0;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited && MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    throw Error("MPI: MPI_Init_thread failed");
  mpi = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int len = 0;
  MPI_Get_processor_name(host, &len);
  std::vector<char> all(size_t(size) * MPI_MAX_PROCESSOR_NAME);
  check(MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                      MPI_COMM_WORLD),
        "gathering host names");
  for (int r = 0; r < size; ++r) hosts.emplace_back(all.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME);
}

World::~World() {
  // A program that never called finalize still ends MPI cleanly.
  leave();
}

void World::leave() {
  if (!mpi || finalized) return;
  finalized = true;
  int done = 0;
  MPI_Finalized(&done);
  if (done) return;
  // Tell the others, then wait until each has said the same: no worker is left waiting
  // in an exchange for this one (it raises instead), and MPI_Finalize finds nothing pending.
  int token = rank;
  std::vector<int> theirs(static_cast<size_t>(size));
  std::vector<MPI_Request> reqs;
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    reqs.emplace_back();
    MPI_Isend(&token, 1, MPI_INT, r, kLeaveTag, MPI_COMM_WORLD, &reqs.back());
    reqs.emplace_back();
    MPI_Irecv(&theirs[size_t(r)], 1, MPI_INT, r, kLeaveTag, MPI_COMM_WORLD, &reqs.back());
  }
  if (!reqs.empty()) MPI_Waitall(int(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
  MPI_Finalize();
}

World& world() {
  static World w;
  return w;
}

void World::require_active() const {
  if (finalized) throw Error("distributed: the communicator was finalized; no communication is possible after it");
}

void World::abort(int code) {
  if (mpi && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

namespace {

// Worker r's share of n items (columns or elements), CNTK's stripe rule.
struct Stripe {
  size_t start = 0, count = 0;
};
Stripe stripe_of(size_t n, size_t r, size_t workers) {
  const size_t per = n / workers, extra = n % workers;
  return {per * r + std::min(extra, r), per + (r < extra ? 1 : 0)};
}

class Requests {
 public:
  void send(const void* p, size_t bytes, int to, int tag, CommunicationCounters& c) {
    reqs_.emplace_back();
    check(MPI_Isend(p, int(bytes), MPI_BYTE, to, tag, MPI_COMM_WORLD, &reqs_.back()), "MPI_Isend");
    c.bytes_sent += bytes;
    c.messages_sent += 1;
  }
  void recv(void* p, size_t bytes, int from, int tag) {
    reqs_.emplace_back();
    check(MPI_Irecv(p, int(bytes), MPI_BYTE, from, tag, MPI_COMM_WORLD, &reqs_.back()), "MPI_Irecv");
  }
  void wait() {
    if (!reqs_.empty()) wait_all(reqs_, "MPI_Waitall");
    reqs_.clear();
  }

 private:
  std::vector<MPI_Request> reqs_;
};

constexpr int kScatterTag = 1, kGatherTag = 2;
// Gradients travel in buckets of at most this many elements, each one exchange.
constexpr size_t kBucketElements = size_t(1) << 22;

template <class T>
void striped_sum(T* data, size_t n, int me, int workers, CommunicationCounters& c) {
  const Stripe mine = stripe_of(n, size_t(me), size_t(workers));
  std::vector<std::vector<T>> theirs;
  theirs.resize(size_t(workers));
  Requests q;
  for (int p = 0; p < workers; ++p) {
    if (p == me) continue;
    const Stripe s = stripe_of(n, size_t(p), size_t(workers));
    if (mine.count) {
      theirs[size_t(p)].resize(mine.count);
      q.recv(theirs[size_t(p)].data(), mine.count * sizeof(T), p, kScatterTag);
    }
    if (s.count) q.send(data + s.start, s.count * sizeof(T), p, kScatterTag, c);
  }
  q.wait();
  if (mine.count) {
    std::vector<T> acc(mine.count, T(0));
    for (int p = 0; p < workers; ++p) {
      const T* src = p == me ? data + mine.start : theirs[size_t(p)].data();
      for (size_t i = 0; i < mine.count; ++i) acc[i] += src[i];
    }
    std::copy(acc.begin(), acc.end(), data + mine.start);
  }
  for (int p = 0; p < workers; ++p) {
    if (p == me) continue;
    const Stripe s = stripe_of(n, size_t(p), size_t(workers));
    if (s.count) q.recv(data + s.start, s.count * sizeof(T), p, kGatherTag);
    if (mine.count) q.send(data + mine.start, mine.count * sizeof(T), p, kGatherTag, c);
  }
  q.wait();
}

template <class T>
void aggregate_dtype(std::vector<NDArrayView>& values, DataType dt, int me, int workers, CommunicationCounters& c) {
  std::vector<size_t> idx;
  size_t total = 0;
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].dtype() == dt) {
      idx.push_back(i);
      total += size_t(values[i].numel());
    }
  if (idx.empty()) return;
  std::vector<T> flat(total);
  size_t at = 0;
  for (size_t i : idx) {
    NDArrayView d = values[i].to_dense().contiguous();
    std::memcpy(flat.data() + at, d.raw_data(), size_t(d.numel()) * sizeof(T));
    at += size_t(d.numel());
  }
  for (size_t b = 0; b < total; b += kBucketElements)
    striped_sum(flat.data() + b, std::min(kBucketElements, total - b), me, workers, c);
  at = 0;
  for (size_t i : idx) {
    NDArrayView out(dt, values[i].shape());
    std::memcpy(out.raw_data(), flat.data() + at, size_t(out.numel()) * sizeof(T));
    at += size_t(out.numel());
    values[i] = out;
  }
}

// CNTK's view of a parameter as a matrix: rows along the last NumPy axis.
size_t rows_of(const NDShape& s) { return s.rank() ? size_t(std::max<int64_t>(s[s.rank() - 1], 1)) : 1; }

template <class T>
void quantized_aggregate(std::vector<NDArrayView>& values, std::vector<NDArrayView>& residuals,
                         std::vector<NDArrayView>& stripe_residuals, size_t bits, bool zero_threshold,
                         bool quantize_self, int me, int workers, CommunicationCounters& c) {
  using Q = distributed::ColumnQuantizer<T>;
  const DataType dt = values.front().dtype();
  const size_t n = values.size();
  residuals.resize(n);
  stripe_residuals.resize(n);
  struct Work {
    NDArrayView x;
    size_t rows, cols, col_bytes;
    Stripe mine;
    std::vector<char> q;                    // the quantized matrix, then the quantized sums
    std::vector<std::vector<char>> theirs;  // peers' quantized copies of this worker's stripe
  };
  std::vector<Work> work(n);
  Requests req;
  for (size_t i = 0; i < n; ++i) {
    Work& w = work[i];
    w.x = values[i].to_dense().contiguous();
    w.rows = rows_of(w.x.shape());
    w.cols = size_t(w.x.numel()) / w.rows;
    w.col_bytes = Q::column_bytes(w.rows, bits);
    w.mine = stripe_of(w.cols, size_t(me), size_t(workers));
    if (!residuals[i].defined()) residuals[i] = NDArrayView::zeros(dt, NDShape{int64_t(w.cols), int64_t(w.rows)});
    if (!stripe_residuals[i].defined() && w.mine.count)
      stripe_residuals[i] = NDArrayView::zeros(dt, NDShape{int64_t(w.mine.count), int64_t(w.rows)});
    w.q.resize(w.cols * w.col_bytes);
    Q::quantize(w.x.template data<T>(), residuals[i].data<T>(), w.rows, w.cols, bits, zero_threshold, w.q.data());
    w.theirs.resize(size_t(workers));
    for (int p = 0; p < workers; ++p) {
      if (p == me) continue;
      const Stripe s = stripe_of(w.cols, size_t(p), size_t(workers));
      if (w.mine.count) {
        w.theirs[size_t(p)].resize(w.mine.count * w.col_bytes);
        req.recv(w.theirs[size_t(p)].data(), w.theirs[size_t(p)].size(), p, kScatterTag);
      }
      if (s.count) req.send(w.q.data() + s.start * w.col_bytes, s.count * w.col_bytes, p, kScatterTag, c);
    }
  }
  req.wait();
  for (size_t i = 0; i < n; ++i) {
    Work& w = work[i];
    if (!w.mine.count) continue;
    // This worker's stripe: its own part first, then the others' in rank order.
    std::vector<T> acc(w.mine.count * w.rows);
    if (quantize_self)
      Q::unquantize(w.q.data() + w.mine.start * w.col_bytes, w.rows, w.mine.count, bits, acc.data(), false);
    else
      std::memcpy(acc.data(), w.x.template data<T>() + w.mine.start * w.rows, acc.size() * sizeof(T));
    for (int p = 0; p < workers; ++p)
      if (p != me) Q::unquantize(w.theirs[size_t(p)].data(), w.rows, w.mine.count, bits, acc.data(), true);
    Q::quantize(acc.data(), stripe_residuals[i].data<T>(), w.rows, w.mine.count, bits, zero_threshold,
                w.q.data() + w.mine.start * w.col_bytes);
  }
  for (size_t i = 0; i < n; ++i) {
    Work& w = work[i];
    for (int p = 0; p < workers; ++p) {
      if (p == me) continue;
      const Stripe s = stripe_of(w.cols, size_t(p), size_t(workers));
      if (s.count) req.recv(w.q.data() + s.start * w.col_bytes, s.count * w.col_bytes, p, kGatherTag);
      if (w.mine.count) req.send(w.q.data() + w.mine.start * w.col_bytes, w.mine.count * w.col_bytes, p, kGatherTag, c);
    }
  }
  req.wait();
  for (size_t i = 0; i < n; ++i) {
    Work& w = work[i];
    NDArrayView out(dt, values[i].shape());
    Q::unquantize(w.q.data(), w.rows, w.cols, bits, out.data<T>(), false);
    values[i] = out;
  }
}

}  // namespace

}  // namespace distributed

using distributed::world;

Communicator::Communicator(size_t bits, bool zero_threshold_for_1bit, bool quantize_self_stripe)
    : bits_(bits), zero_threshold_for_1bit_(zero_threshold_for_1bit), quantize_self_stripe_(quantize_self_stripe) {
  auto& w = world();
  w.require_active();
  rank_ = size_t(w.rank);
  for (int r = 0; r < w.size; ++r) workers_.push_back({size_t(r), w.hosts[size_t(r)]});
}

void Communicator::barrier() {
  auto& w = world();
  w.require_active();
  if (!w.mpi) return;
  MPI_Request req;
  distributed::check(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
  distributed::wait_one(req, "MPI_Barrier");
}

void Communicator::aggregate_in_place(std::vector<NDArrayView>& values) {
  auto& w = world();
  w.require_active();
  if (num_workers() == 1 || values.empty()) return;
  for (auto& v : values)
    if (v.dtype() != DataType::Float && v.dtype() != DataType::Double)
      throw ValueError("distributed aggregation: float32 and float64 values only, not " +
                       std::string(to_string(v.dtype())));
  ++counters_.aggregations;
  distributed::aggregate_dtype<float>(values, DataType::Float, w.rank, w.size, counters_);
  distributed::aggregate_dtype<double>(values, DataType::Double, w.rank, w.size, counters_);
}

void Communicator::quantized_aggregate_in_place(std::vector<NDArrayView>& values, std::vector<NDArrayView>& residuals,
                                                std::vector<NDArrayView>& stripe_residuals) {
  auto& w = world();
  w.require_active();
  if (num_workers() == 1 || values.empty()) return;  // nothing to exchange, nothing lost (as CNTK)
  if (bits_ >= 32) return aggregate_in_place(values);
  const DataType dt = values.front().dtype();
  for (auto& v : values)
    if (v.dtype() != dt)
      throw ValueError("quantized aggregation: all values must have one element type (float32 or float64)");
  ++counters_.aggregations;
  if (dt == DataType::Float)
    distributed::quantized_aggregate<float>(values, residuals, stripe_residuals, bits_, zero_threshold_for_1bit_,
                                            quantize_self_stripe_, w.rank, w.size, counters_);
  else if (dt == DataType::Double)
    distributed::quantized_aggregate<double>(values, residuals, stripe_residuals, bits_, zero_threshold_for_1bit_,
                                             quantize_self_stripe_, w.rank, w.size, counters_);
  else
    throw ValueError("quantized aggregation: float32 and float64 values only, not " + std::string(to_string(dt)));
}

std::vector<std::string> Communicator::all_gather(const std::string& bytes) {
  auto& w = world();
  w.require_active();
  if (!w.mpi) return {bytes};
  int mine = int(bytes.size());
  std::vector<int> sizes(size_t(w.size)), offsets(size_t(w.size));
  MPI_Request req;
  distributed::check(MPI_Iallgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD, &req),
                     "MPI_Allgather");
  distributed::wait_one(req, "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < w.size; ++r) {
    offsets[size_t(r)] = total;
    total += sizes[size_t(r)];
  }
  std::string all(size_t(total), '\0');
  distributed::check(MPI_Iallgatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE,
                                     MPI_COMM_WORLD, &req),
                     "MPI_Allgatherv");
  distributed::wait_one(req, "MPI_Allgatherv");
  counters_.bytes_sent += uint64_t(mine) * uint64_t(w.size - 1);
  counters_.messages_sent += uint64_t(w.size - 1);
  std::vector<std::string> out;
  for (int r = 0; r < w.size; ++r) out.push_back(all.substr(size_t(offsets[size_t(r)]), size_t(sizes[size_t(r)])));
  return out;
}

void Communicator::finalize() { world().leave(); }  // a world of one worker goes on working (no MPI to end)

CommunicatorPtr mpi_communicator() { return CommunicatorPtr(new Communicator(32, true, true)); }

CommunicatorPtr quantized_mpi_communicator(bool zero_threshold_for_1bit, bool use_quantization_for_self_stripe,
                                           size_t bits) {
  if (bits == 0 || bits > 32 || (bits & (bits - 1)) != 0)
    throw ValueError("quantized_mpi_communicator: num_quantization_bits must be a power of two from 1 to 32, not " +
                     std::to_string(bits));
  return CommunicatorPtr(new Communicator(bits, zero_threshold_for_1bit, use_quantization_for_self_stripe));
}

size_t worker_global_rank() { return size_t(world().rank); }
size_t number_of_workers() { return size_t(world().size); }

}  // namespace cntk
