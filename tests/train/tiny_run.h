// The trainer tests' tiny run (test_trainer.cpp, test_trainer_resume.cpp): a generated image
// task (4 classes lighting a quadrant, written as MNIST IDX files), a 1-block pixel encoder's
// config for it, a quiet training run, and checks on what a run leaves in its folder (the
// last three shared with test_lm_training.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tests/harness.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/trainer.h"

namespace relpos::test {

// Train and test splits of the quadrant images under scratch/data; returns that folder.
std::string make_data(const ScratchDir& scratch);
// A tiny pixel-input encoder over the 4x4-pooled image, its run folder scratch/name; `extra`
// are --set overrides.
RunConfig tiny_config(const ScratchDir& scratch, const std::string& data_dir,
                      const std::string& name, std::vector<std::string> extra = {});
// Trains quietly.
RunSummary train(const RunConfig& config, TrainerOptions options = {});
// The run's checkpoints/last.h5.
CheckpointData last_checkpoint(const RunConfig& config);
// The same parameter names in the same order, with the same bits.
void check_same_params(const CheckpointData& a, const CheckpointData& b);
// check_same_params, and the same optimizer state, bit for bit.
void check_same_training_state(const CheckpointData& a, const CheckpointData& b);
std::string read_text(const std::filesystem::path& path);
// "cpu", and "cuda" where a GPU is visible; without one, a visible SKIPPED message naming `what`.
std::vector<std::string> training_devices(const std::string& what);
// The train records of a run's metrics.jsonl, checked to have read nothing back from the device
// in their updates ("host_reads": 0): a steady-state step waits for nothing. Returns how many.
int64_t check_no_host_reads(const RunConfig& config);

}  // namespace relpos::test
