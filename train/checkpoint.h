// The HDF5 checkpoint file (DESIGN §6): plain datasets that h5py reads without relpos code.
//   /params/<dotted.name>               the parameter, its dtype and PyTorch shape (0-d: scalar)
//   /buffers/<dotted.name>              likewise for buffers
//   /optimizer/<param name>/<state key> e.g. /optimizer/encoder.norm.weight/exp_avg
//   /rng/<dotted.name>                  u64 [2]: a generator's seed and offset
//   /counters/<dotted.name>             i64 scalar
//   /state/<name>                       a task's state between batches (an LM's memory)
//   root attributes                     i64 (step, epoch, ...), f64 (best_metric, ...) and UTF-8
//                                       strings (config as YAML text, relpos_version, ...)
// This file knows nothing of modules; train/training_state.h maps modules onto CheckpointData.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/generator.h"
#include "core/tensor.h"

namespace relpos {

struct CheckpointData {
  std::vector<std::pair<std::string, Tensor>> params;
  std::vector<std::pair<std::string, Tensor>> buffers;
  // Per parameter (dotted name), its optimizer state by key; an empty map is a parameter the
  // optimizer has not updated yet.
  std::vector<std::pair<std::string, std::map<std::string, Tensor>>> optimizer;
  std::vector<std::pair<std::string, Generator>> generators;
  std::vector<std::pair<std::string, int64_t>> counters;
  // What a task carries from one training batch to the next (a language model's memory).
  std::vector<std::pair<std::string, Tensor>> state;
  // Root attributes; a name may appear in only one of the three maps.
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> floats;
  std::map<std::string, std::string> texts;
};

// Writes `data` to "<path>.tmp.<pid>" in the same folder, fsyncs it and renames it over `path`,
// so `path` holds either the old checkpoint or the new one, whole, whatever happens meanwhile.
// Tensors on any device are copied to the CPU; dtypes f32, f64, i32, i64, u8 keep their type
// (bf16 is refused).
// Names must be non-empty HDF5 link names: no '/', not ".", each used once within its group.
// Failures remove the temporary file and throw "[checkpoint] cannot write '<path>': <reason>".
void write_checkpoint(const std::string& path, const CheckpointData& data);

// Reads a checkpoint written by write_checkpoint (or by h5py in the same layout); entries come
// back in the order they were written (by name for files that do not track creation order).
// Only /params is required. A missing, non-HDF5, truncated or malformed file throws
// "[checkpoint] '<path>': <what is wrong>"; HDF5 prints nothing itself.
CheckpointData read_checkpoint(const std::string& path);

// The root attributes alone (step, best_step, config, ...; the tensors are not read), the file
// checked and refused as by read_checkpoint.
CheckpointData read_checkpoint_attributes(const std::string& path);

}  // namespace relpos
