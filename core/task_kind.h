// TaskKind: what a model computes and what a dataset's examples are for. A model type and a
// dataset each register theirs (layers/models/model.h, datasets/dataset_registry.h); a run pairs
// only the same kinds (train/task.cpp).
#pragma once

namespace relpos {

enum class TaskKind {
  classification,      // labelled sequences (or sequence pairs) -> class logits
  language_modelling,  // an ordered token stream -> next-token logits
};

inline const char* task_kind_name(TaskKind kind) {
  return kind == TaskKind::classification ? "classification" : "language modelling";
}

}  // namespace relpos
