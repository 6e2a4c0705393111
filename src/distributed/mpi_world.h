// The process's MPI world: started on first use when the process was launched
// by mpiexec (Open MPI's or another PMI launcher's environment is present),
// otherwise a world of one worker that never touches MPI.
#pragma once
#include <string>
#include <vector>

namespace cntk::distributed {

struct World {
  World();
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  void require_active() const;
  // Ends MPI for this process once every other worker is ending too (finalize).
  void leave();
  // Ends every worker of the job (MPI_Abort), or this process without MPI.
  [[noreturn]] void abort(int code);

  bool mpi = false;
  bool finalized = false;
  int rank = 0, size = 1;
  std::vector<std::string> hosts;
};

World& world();

}  // namespace cntk::distributed
