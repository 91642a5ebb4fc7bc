// The MPI backend of core/comm (comm.h). MPI starts on first use when an MPI launcher started
// this process (OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK in the environment) and ends when the
// process exits normally; otherwise the process is a job of one and MPI is never started.
#include <mpi.h>

#include <climits>
#include <cstdlib>

#include "core/comm/comm.h"
#include "core/comm/comm_detail.h"
#include "core/error.h"
#include "core/ops.h"

namespace relpos::comm {

namespace {

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

[[noreturn]] void mpi_failed(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  fail("comm", "{} failed: {}", call, std::string(text, static_cast<size_t>(length)));
}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) mpi_failed(call, code);
}

struct World {
  bool started = false;  // MPI_Init was called here (and MPI_Finalize is owed)
  int rank = 0, size = 1, local_rank = 0, local_size = 1;

  World() {
    if (!launched_by_mpi()) return;
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    started = true;
    // Errors come back as codes (and become relpos::Error), not as an abort inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    MPI_Comm host;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host),
          "MPI_Comm_split_type");
    check(MPI_Comm_rank(host, &local_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(host, &local_size), "MPI_Comm_size");
    MPI_Comm_free(&host);
  }
  ~World() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (started && !finalized) MPI_Finalize();
  }
};

World& world() {
  static World w;
  return w;
}

class MpiRequest final : public Request {
 public:
  explicit MpiRequest(MPI_Request request) : request_(request) {}
  ~MpiRequest() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  bool test() override {
    int done = 0;
    check(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test");
    return done != 0;
  }
  void wait() override { check(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait"); }

 private:
  MPI_Request request_;
};

class Done final : public Request {
 public:
  bool test() override { return true; }
  void wait() override {}
};

void check_tensor(const Tensor& t, const char* what) {
  RELPOS_CHECK(t.defined() && t.is_contiguous(), "comm", "{} needs a contiguous tensor, got {}",
               what, t.defined() ? t.str() : std::string("an undefined one"));
}

}  // namespace

namespace detail {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i64:
      return MPI_INT64_T;
    default:
      fail("comm", "collectives take f32, f64 or i64 tensors, got {}", dtype_name(dtype));
  }
}

void mpi_all_reduce_sum(Tensor& t) {
  const MPI_Datatype type = mpi_type(t.dtype());
  char* data = static_cast<char*>(t.raw_data());
  const int64_t element = static_cast<int64_t>(dtype_size(t.dtype()));
  for (int64_t done = 0; done < t.numel();) {
    const int64_t n = std::min<int64_t>(t.numel() - done, INT_MAX);
    check(MPI_Allreduce(MPI_IN_PLACE, data + done * element, static_cast<int>(n), type, MPI_SUM,
                        MPI_COMM_WORLD),
          "MPI_Allreduce");
    done += n;
  }
}

void mpi_broadcast(Tensor& t, int root) {
  const MPI_Datatype type = mpi_type(t.dtype());
  char* data = static_cast<char*>(t.raw_data());
  const int64_t element = static_cast<int64_t>(dtype_size(t.dtype()));
  for (int64_t done = 0; done < t.numel();) {
    const int64_t n = std::min<int64_t>(t.numel() - done, INT_MAX);
    check(MPI_Bcast(data + done * element, static_cast<int>(n), type, root, MPI_COMM_WORLD),
          "MPI_Bcast");
    done += n;
  }
}

void host_copy_all_reduce_sum(Tensor& t) {
  Tensor host = t.to(Device::cpu()).contiguous();
  mpi_all_reduce_sum(host);
  copy_(t, host.to(t.device()));
}

void host_copy_broadcast(Tensor& t, int root) {
  Tensor host = t.to(Device::cpu()).contiguous();
  mpi_broadcast(host, root);
  copy_(t, host.to(t.device()));
}

}  // namespace detail

int rank() {
  return world().rank;
}
int size() {
  return world().size;
}
int local_rank() {
  return world().local_rank;
}
int local_size() {
  return world().local_size;
}

std::string backend() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(text, &length);  // callable before MPI_Init
  std::string library(text, static_cast<size_t>(length));
  library = library.substr(0, library.find_first_of(",\n"));  // "Open MPI v4.1.4"
#ifdef RELPOS_WITH_CUDA
  return fmt::format("MPI ({}), CUDA tensors over {}", library, detail::cuda_transport());
#else
  return fmt::format("MPI ({})", library);
#endif
}

std::string describe_rank() {
  return size() > 1 ? fmt::format("rank {} of {}", rank(), size()) : "";
}

void all_reduce_sum(Tensor& t) {
  if (size() == 1) return;
  check_tensor(t, "all_reduce_sum");
  if (t.device().is_cuda())
    detail::cuda_all_reduce_sum(t);
  else
    detail::mpi_all_reduce_sum(t);
}

void broadcast(Tensor& t, int root) {
  if (size() == 1) return;
  check_tensor(t, "broadcast");
  if (t.device().is_cuda())
    detail::cuda_broadcast(t, root);
  else
    detail::mpi_broadcast(t, root);
}

void barrier() {
  if (size() > 1) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

std::unique_ptr<Request> all_reduce_sum_async(Tensor& t) {
  if (size() == 1) return std::make_unique<Done>();
  check_tensor(t, "all_reduce_sum_async");
  if (t.device().is_cuda() || t.numel() > INT_MAX) {
    all_reduce_sum(t);  // NCCL orders it on the device's stream; huge ones in pieces
    return std::make_unique<Done>();
  }
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallreduce(MPI_IN_PLACE, t.raw_data(), static_cast<int>(t.numel()),
                       detail::mpi_type(t.dtype()), MPI_SUM, MPI_COMM_WORLD, &request),
        "MPI_Iallreduce");
  return std::make_unique<MpiRequest>(request);
}

void abort(int status) {
  if (world().started) MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

}  // namespace relpos::comm
