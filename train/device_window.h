// What the updates between two train records leave on the training device: their loss sum, the
// last gradient norm, and the first step whose loss or gradient norm was not finite. An update
// adds to it with device ops only, so a steady-state step waits for nothing on the host; read()
// brings it back in one copy, where the trainer records or saves something (a log step, a
// validation, a checkpoint, the end).
#pragma once

#include <cstdint>

#include "core/device.h"
#include "core/tensor.h"

namespace relpos {

class DeviceWindow {
 public:
  explicit DeviceWindow(Device device);

  // A batch's mean loss (0-d, no graph) times `weight`, its weight in the window's loss sum;
  // `step` is the update it belongs to (1-based), named if the loss is not finite.
  void add_loss(const Tensor& loss, double weight, int64_t step);
  // The global gradient norm of update `step` (0-d f64, before clipping).
  void set_grad_norm(const Tensor& norm, int64_t step);

  struct Reading {
    double loss_sum = 0;   // over the window's batches, summed over the ranks
    double grad_norm = 0;  // the last update's
    // The first update whose loss (on any rank) or gradient norm was not finite, 0 when none,
    // and that value.
    int64_t bad_loss_step = 0, bad_norm_step = 0;
    double bad_loss = 0, bad_norm = 0;
  };
  // The window as the host sees it: one device-to-host copy, and one collective when
  // distributed (every rank gets the same reading).
  Reading read() const;
  // A train record was written: the loss sum starts again (a non-finite step stays recorded).
  void reset_loss();
  // A resumed run: the loss sum continues from `sum`, the record's sum its checkpoint saved.
  void carry_loss(double sum);

 private:
  // The first non-finite value seen: its step (+inf while none) and the value.
  struct FirstBad {
    Tensor step, value;  // f64, 0-d
  };
  void watch(FirstBad& first, const Tensor& x, int64_t step) const;

  Device device_;
  Tensor zero_, none_;           // f64, 0-d constants: 0 and +inf (no bad step yet)
  Tensor loss_sum_, grad_norm_;  // f64, 0-d
  FirstBad bad_loss_, bad_norm_;
};

}  // namespace relpos
