// Data-parallel helpers (train/distributed.h) over core/comm.
#include "train/distributed.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <new>
#include <thread>

#include <fmt/ranges.h>

#include "core/comm/comm.h"
#include "core/device.h"
#include "core/error.h"
#include "core/filesystem_error.h"
#include "core/ops.h"

namespace relpos {

namespace {

// A seed of its own for rank r (golden-ratio stride: no two ranks share a Philox key).
uint64_t rank_seed(uint64_t seed, int rank) {
  return seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank);
}

// Processes on one host share its cores: unless OMP_NUM_THREADS says otherwise, each takes its
// part of them (never more than OpenMP would give it), rather than every process starting a
// thread per core.
void share_cores() {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  const int mine = std::max(1, cores / comm::local_size());
  if (mine < omp_get_max_threads()) omp_set_num_threads(mine);
}

}  // namespace

Device job_device(const std::string& configured, const char* who) {
  const Device device = Device::parse(configured);
  RELPOS_CHECK(!device.is_cuda() || cuda_available(), who,
               "device cuda was asked for, but no CUDA device is visible (use --device cpu)");
  if (configured == "cuda" && comm::distributed())
    return Device::cuda(comm::local_rank() % cuda_device_count());
  return device;
}

bool reports_results() {
  return comm::rank() == 0;
}

Shard my_shard(int64_t rows) {
  return shard_of(rows, comm::rank(), comm::size());
}

void broadcast_module(Module& module) {
  if (!comm::distributed()) return;
  for (auto& [name, p] : module.named_parameters()) {
    Tensor value = p.value().contiguous();
    comm::broadcast(value, 0);
    p.set_value(value);
  }
  for (auto& [name, buffer] : module.buffer_slots()) {
    if (buffer->dtype() != DType::f32 && buffer->dtype() != DType::f64) continue;
    Tensor value = buffer->contiguous();
    comm::broadcast(value, 0);
    *buffer = value;
  }
}

void seed_generators_per_rank(Module& module) {
  if (comm::rank() == 0) return;
  for (auto& [name, gen] : module.generator_slots())
    gen->set_state(rank_seed(gen->seed(), comm::rank()), gen->offset());
}

void gather_generator_states(Module& module, CheckpointData& data) {
  if (!comm::distributed()) return;
  for (auto& [name, gen] : module.generator_slots()) {
    Tensor states = zeros({comm::size(), 2}, DType::i64);  // [ranks, (seed, offset)]
    int64_t* row = states.data<int64_t>() + 2 * comm::rank();
    row[0] = static_cast<int64_t>(gen->seed());
    row[1] = static_cast<int64_t>(gen->offset());
    comm::all_reduce_sum(states);
    data.state.emplace_back("rng_ranks." + name, states);
  }
}

void restore_generator_states(Module& module, const CheckpointData& data) {
  std::map<std::string, Tensor> saved;
  for (const auto& [name, t] : data.state)
    if (name.rfind("rng_ranks.", 0) == 0) saved[name.substr(10)] = t;
  for (auto& [name, gen] : module.generator_slots()) {
    const auto it = saved.find(name);
    if (it != saved.end() && it->second.dim() == 2 && it->second.size(0) > comm::rank() &&
        it->second.dtype() == DType::i64) {
      const Tensor row = it->second.to(Device::cpu()).contiguous();
      const int64_t* state = row.data<int64_t>() + 2 * comm::rank();
      gen->set_state(static_cast<uint64_t>(state[0]), static_cast<uint64_t>(state[1]));
    } else if (comm::rank() > 0) {
      gen->set_state(rank_seed(gen->seed(), comm::rank()), gen->offset());
    }
  }
}

BatchShare global_share(int64_t local_count) {
  if (!comm::distributed()) return {local_count, 1.0};
  const auto count = static_cast<double>(local_count);
  Tensor all = Tensor::from_vector(std::vector<double>{count}, {1});
  comm::all_reduce_sum(all);
  const double total = all.data<double>()[0];
  return {static_cast<int64_t>(total), count / total};
}

Tensor gather_rows(const Tensor& local, int64_t rows) {
  if (!comm::distributed()) return local;
  const Shard mine = my_shard(rows);
  Shape shape = local.shape();
  shape[0] = rows;
  // Each rank writes its rows into zeros; the sum over ranks is the whole tensor.
  Tensor all = zeros(shape, local.dtype(), local.device());
  if (mine.size() > 0) copy_(all.slice(0, mine.begin, mine.end), local);
  comm::all_reduce_sum(all);
  return all;
}

void check_ranks_agree(const std::vector<RankAgreement>& items) {
  if (!comm::distributed()) return;
  const auto n = static_cast<int64_t>(items.size());
  // Rank 0's fingerprints to every rank, as 32-bit halves (exact in f64).
  Tensor root = Tensor::empty({n, 2}, DType::f64);
  for (int64_t k = 0; k < n; ++k) {
    root.data<double>()[2 * k] = static_cast<double>(items[k].fingerprint >> 32);
    root.data<double>()[2 * k + 1] = static_cast<double>(items[k].fingerprint & 0xffffffffull);
  }
  comm::broadcast(root, 0);
  Tensor differs = zeros({n, comm::size()}, DType::f64);  // [item, rank]: 1 where it differs
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t theirs = (static_cast<uint64_t>(root.data<double>()[2 * k]) << 32) |
                            static_cast<uint64_t>(root.data<double>()[2 * k + 1]);
    if (theirs != items[k].fingerprint) differs.data<double>()[k * comm::size() + comm::rank()] = 1;
  }
  comm::all_reduce_sum(differs);
  for (int64_t k = 0; k < n; ++k) {
    std::vector<int> ranks;
    for (int r = 0; r < comm::size(); ++r)
      if (differs.data<double>()[k * comm::size() + r] != 0) ranks.push_back(r);
    if (ranks.empty()) continue;
    if (comm::rank() == 0)
      fail("train",
           "rank{} {} of {} differ{} from rank 0 in {}: every rank must run the same "
           "configuration on the same data",
           ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", "), comm::size(),
           ranks.size() > 1 ? "" : "s", items[k].what);
    comm::barrier();  // rank 0's error ends the job (run_job), with its one line
  }
}

int run_job(const std::function<int()>& body) {
  if (!comm::distributed()) return body();
  try {
    share_cores();
    return body();
  } catch (const Error& e) {
    std::fprintf(stderr, "relpos: %s: %s\n", comm::describe_rank().c_str(), e.what());
    std::fflush(stderr);
    comm::abort(2);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "relpos: %s: %s\n", comm::describe_rank().c_str(), kHostOutOfMemory);
    std::fflush(stderr);
    comm::abort(2);
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(stderr, "relpos: %s: %s\n", comm::describe_rank().c_str(),
                 describe_filesystem_error(e).c_str());
    std::fflush(stderr);
    comm::abort(2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "relpos: %s: internal error: %s\n", comm::describe_rank().c_str(),
                 e.what());
    std::fflush(stderr);
    comm::abort(1);
  }
}

}  // namespace relpos
