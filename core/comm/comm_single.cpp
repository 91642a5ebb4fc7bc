// The job of one process (core/comm/comm.h) for builds without MPI: every collective is the
// identity. Started by an MPI launcher anyway, it refuses to run N copies of one job.
#include <cstdlib>

#include "core/comm/comm.h"
#include "core/error.h"

namespace relpos::comm {

namespace {

// The job size an MPI launcher announced (1 when none did).
int launched_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* value = std::getenv(name)) return std::atoi(value);
  return 1;
}

class Done final : public Request {
 public:
  bool test() override { return true; }
  void wait() override {}
};

void check_single() {
  static const int launched = launched_size();
  RELPOS_CHECK(launched <= 1, "comm",
               "started by an MPI launcher as one of {} processes, but relpos was built without "
               "MPI (install libopenmpi-dev and rebuild; RELPOS_MPI=AUTO finds it): each process "
               "would run the whole job alone",
               launched);
}

}  // namespace

std::string backend() {
  return "none: one process per job (built without MPI)";
}

int rank() {
  check_single();
  return 0;
}
int size() {
  check_single();
  return 1;
}
int local_rank() {
  return 0;
}
int local_size() {
  return 1;
}
std::string describe_rank() {
  return "";
}
void all_reduce_sum(Tensor&) {}
void broadcast(Tensor&, int) {}
void barrier() {}
std::unique_ptr<Request> all_reduce_sum_async(Tensor&) {
  return std::make_unique<Done>();
}
void abort(int status) {
  std::exit(status);
}

}  // namespace relpos::comm
