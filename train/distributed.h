// Data-parallel training over the processes of one job (DESIGN §12; core/comm/comm.h). Every rank
// holds the whole model and takes a disjoint, deterministic shard of every global batch
// (data.batch_size rows); gradients are summed over ranks (train/gradient_reducer.h) with each
// rank's loss weighted by its share of the batch, so N ranks follow the trajectory of one process
// with the same global batch. Parameters start from rank 0's; random streams (dropout, SPE noise)
// differ per rank and are checkpointed per rank; rank 0 alone writes files. What lives here is
// what the trainer and the tasks share; nothing above train/ knows about ranks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/device.h"
#include "datasets/shard.h"
#include "layers/module.h"
#include "train/checkpoint.h"

namespace relpos {

// The device this process computes on for a configured `device` ("cpu", "cuda", "cuda:1"): with
// several processes, "cuda" is the GPU local_rank mod the GPUs this host sees (one process per
// GPU; ranks share one when there are fewer). An error when CUDA is asked for and none is visible.
Device job_device(const std::string& configured, const char* who);

// Whether this process prints a command's results: rank 0 (the only process of a job of one).
bool reports_results();

// This process's rows of a batch of `rows` (datasets/shard.h, by core/comm's rank and size).
Shard my_shard(int64_t rows);

// Every rank's parameters and buffers set to rank 0's.
void broadcast_module(Module& module);

// Gives each rank its own random streams: rank 0 keeps the module's generators as built (a job of
// one draws what a single process draws), rank r > 0 gets each generator's seed mixed with r.
void seed_generators_per_rank(Module& module);
// Each rank's generator states into `data.state` ("rng_ranks.<name>": i64 [ranks, 2] of seed and
// offset); a collective: every rank calls it, rank 0's `data` holds all of them.
void gather_generator_states(Module& module, CheckpointData& data);
// This rank's generators from `data` where it has this rank's row (a checkpoint of as many or
// more ranks); otherwise rank r > 0 mixes rank 0's restored states with r (a new rank).
void restore_generator_states(Module& module, const CheckpointData& data);

// The items (examples or tokens) of the global batch from this rank's `local_count` (0 for an
// empty shard), and this rank's share of them: the weight of its mean loss, so that gradients
// summed over ranks are those of one process over the whole batch. A collective on host numbers
// (one all-reduce; nothing read from a device); in a job of one, {local_count, 1}.
struct BatchShare {
  int64_t count = 0;
  double share = 1;
};
BatchShare global_share(int64_t local_count);

// The full batch of per-row state from every rank's rows: `local` holds rows [shard of `rows`)
// of a tensor [rows, ...]; the result, on every rank, is the whole tensor (a collective).
Tensor gather_rows(const Tensor& local, int64_t rows);

// One thing every rank of a job must have alike: what it is (for the error) and a fingerprint.
struct RankAgreement {
  std::string what;  // e.g. "the configuration", "the train split (61 examples on rank 0)"
  uint64_t fingerprint = 0;
};
// A collective at the start of a job: when any rank's fingerprint of any item differs from rank
// 0's, rank 0 ends the job with one line naming the ranks and the first item that differs
// (run_job then stops every rank). A job of one returns at once.
void check_ranks_agree(const std::vector<RankAgreement>& items);

// Runs one command of the command line. In a job of several processes each takes its share of
// the host's cores (cores / processes on the host, unless OMP_NUM_THREADS is set), and an error
// on any rank ends the whole job: the rank prints "relpos: rank r of N: <what>" and aborts every
// process with status 2 (1 for an internal error), so no rank waits forever on one that failed. In
// a job of one it runs `body` as it is.
int run_job(const std::function<int()>& body);

}  // namespace relpos
