// Grad mode (NoGradGuard for evaluation) and anomaly mode (NaN/Inf detection naming the op).
#pragma once

#include <string>

#include "core/tensor.h"

namespace relpos {

bool grad_enabled();  // per thread; on by default

// Disables graph recording in its scope (eval, optimizer steps).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Anomaly mode: every forward output and every gradient is checked for NaN/Inf, and the error
// names the function that produced it. Off by default; RELPOS_DETECT_ANOMALY=1 turns it on.
bool detect_anomaly();
void set_detect_anomaly(bool on);

// Throws "[anomaly] <function> produced NaN/Inf in its <what> (<tensor>)" when anomaly mode is
// on and t is a floating tensor with a non-finite element.
void check_anomaly(const Tensor& t, const std::string& function, const char* what);

}  // namespace relpos
