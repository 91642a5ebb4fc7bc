// DeviceWindow (train/device_window.h): the window's sums and finiteness as 0-d f64 tensors on
// the training device, updated by elementwise ops.
#include "train/device_window.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/comm/comm.h"
#include "core/ops.h"
#include "train/distributed.h"

namespace relpos {
namespace {

constexpr double kNone = std::numeric_limits<double>::infinity();
constexpr int64_t kFields = 6;  // a reading's values, in Reading's order

Tensor scalar_on(double value, Device device) {
  return Tensor::scalar(value, DType::f64, device);
}

// A NaN of either sign reads "nan" in messages.
double unsigned_nan(double x) {
  return std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : x;
}

int64_t step_or_zero(double step) {
  return std::isinf(step) ? 0 : static_cast<int64_t>(step);
}

}  // namespace

DeviceWindow::DeviceWindow(Device device)
    : device_(device),
      zero_(scalar_on(0, device)),
      none_(scalar_on(kNone, device)),
      loss_sum_(scalar_on(0, device)),
      grad_norm_(scalar_on(0, device)),
      bad_loss_{scalar_on(kNone, device), scalar_on(0, device)},
      bad_norm_{scalar_on(kNone, device), scalar_on(0, device)} {}

// x - x is 0 for a finite x and NaN for NaN or ±inf; the first such x and its step are kept.
void DeviceWindow::watch(FirstBad& first, const Tensor& x, int64_t step) const {
  const Tensor bad = ne(sub(x, x), zero_);                           // u8
  const Tensor first_time = where(bad, eq(first.step, none_), bad);  // u8
  first.value = where(first_time, x, first.value);
  first.step = where(first_time, scalar_on(static_cast<double>(step), device_), first.step);
}

void DeviceWindow::add_loss(const Tensor& loss, double weight, int64_t step) {
  const Tensor x = cast(loss, DType::f64);
  watch(bad_loss_, x, step);
  loss_sum_ = add(loss_sum_, mul_scalar(x, weight));
}

void DeviceWindow::set_grad_norm(const Tensor& norm, int64_t step) {
  grad_norm_ = cast(norm, DType::f64);
  watch(bad_norm_, grad_norm_, step);
}

DeviceWindow::Reading DeviceWindow::read() const {
  // This rank's row; with ranks, every rank's rows [ranks, 6] (a collective).
  const int64_t ranks = comm::distributed() ? comm::size() : 1;
  const Tensor row = stack({loss_sum_, grad_norm_, bad_loss_.step, bad_loss_.value, bad_norm_.step,
                            bad_norm_.value},
                           0)
                         .reshape({1, kFields});
  const Tensor rows = gather_rows(row, ranks);
  const std::vector<double> v = rows.to_vector<double>();  // the one device-to-host copy
  Reading r;
  double bad_loss_step = kNone;
  for (int64_t k = 0; k < ranks; ++k) {
    const double* f = v.data() + k * kFields;
    r.loss_sum += f[0];
    if (f[2] < bad_loss_step) {
      bad_loss_step = f[2];
      r.bad_loss = unsigned_nan(f[3]);
    }
  }
  // The gradient norm is the same on every rank (gradients are summed before it).
  r.grad_norm = v[1];
  r.bad_loss_step = step_or_zero(bad_loss_step);
  r.bad_norm_step = step_or_zero(v[4]);
  r.bad_norm = unsigned_nan(v[5]);
  return r;
}

void DeviceWindow::reset_loss() {
  loss_sum_ = zero_;  // ops make new tensors: the constant itself is never written
}

void DeviceWindow::carry_loss(double sum) {
  loss_sum_ = scalar_on(sum, device_);
}

}  // namespace relpos
