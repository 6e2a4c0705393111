// Bindings of distributed training (include/cntk/distributed.h); Python's
// cntk.train.distributed gives them CNTK 2.7's names.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdio>

#include "cntk/distributed.h"
#include "cntk/trainer.h"
#include "distributed/mpi_world.h"

namespace nb = nanobind;
using namespace cntk;

void bind_distributed(nb::module_& m) {
  nb::class_<WorkerDescriptor>(m, "WorkerDescriptor")
      .def_prop_ro("global_rank", [](const WorkerDescriptor& w) { return w.global_rank; })
      .def_prop_ro("host_id", [](const WorkerDescriptor& w) { return w.host_id; })
      .def("is_main", &WorkerDescriptor::is_main)
      .def("__eq__", [](const WorkerDescriptor& a,
                        const WorkerDescriptor& b) { return a.global_rank == b.global_rank && a.host_id == b.host_id; })
      .def("__hash__", [](const WorkerDescriptor& w) { return w.global_rank; })
      .def("__repr__", [](const WorkerDescriptor& w) {
        return "WorkerDescriptor(global_rank=" + std::to_string(w.global_rank) + ", host_id='" + w.host_id + "')";
      });

  nb::class_<CommunicationCounters>(m, "CommunicationCounters")
      .def_ro("bytes_sent", &CommunicationCounters::bytes_sent)
      .def_ro("messages_sent", &CommunicationCounters::messages_sent)
      .def_ro("aggregations", &CommunicationCounters::aggregations)
      .def_ro("overlapped_exchanges", &CommunicationCounters::overlapped_exchanges);

  nb::class_<Communicator>(m, "Communicator")
      .def("workers", &Communicator::workers)
      .def("current_worker", &Communicator::current_worker)
      .def("barrier",
           [](Communicator& c) {
             nb::gil_scoped_release release;
             c.barrier();
           })
      .def("is_main", [](const Communicator& c) { return c.current_worker().is_main(); })
      .def_prop_ro("num_quantization_bits", &Communicator::num_quantization_bits)
      .def("_counters", &Communicator::counters)
      .def("_reset_counters", &Communicator::reset_counters)
      .def_static("finalize", &Communicator::finalize)
      .def_static("num_workers", &number_of_workers)
      .def_static("rank", &worker_global_rank);

  nb::class_<DistributedLearner, Learner>(m, "DistributedLearner")
      .def("communicator", &DistributedLearner::communicator)
      .def("get_communicator", &DistributedLearner::communicator)
      .def_prop_ro("total_number_of_samples_seen", &DistributedLearner::total_number_of_samples_seen)
      .def("set_as_metric_aggregator", &DistributedLearner::set_as_metric_aggregator)
      .def("is_metric_aggregator", &DistributedLearner::is_metric_aggregator)
      .def("parallelization_after", &DistributedLearner::parallelization_after)
      .def("minibatch_size_scale_factor", &DistributedLearner::minibatch_size_scale_factor)
      .def("local_learner", &DistributedLearner::local_learner);

  m.def("mpi_communicator", &mpi_communicator);
  m.def("quantized_mpi_communicator", &quantized_mpi_communicator);
  m.def("number_of_workers", &number_of_workers);
  m.def("worker_global_rank", &worker_global_rank);
  m.def("data_parallel_distributed_learner", &data_parallel_distributed_learner);
  m.def("block_momentum_distributed_learner", &block_momentum_distributed_learner);
  // Ends the whole job after an error on this worker (MPI_Abort under mpiexec).
  m.def("_abort_job", [](int code, const std::string& message) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
    distributed::world().abort(code);
  });
  m.def("_trainer_communicator", [](const Trainer& t) { return t.communicator(); });
  m.def("_trainer_aggregate_metrics", [](Trainer& t, double loss, double eval) {
    nb::gil_scoped_release release;
    t.aggregate_metrics_if_needed(loss, eval);
    return std::make_pair(loss, eval);
  });
}
