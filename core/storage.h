// Storage: one owned device buffer. Tensors share it through shared_ptr; views never copy it.
#pragma once

#include <cstddef>
#include <memory>

#include "core/allocator.h"
#include "core/device.h"

namespace relpos {

class Storage {
 public:
  Storage(size_t nbytes, Device device)
      : data_(allocate_bytes(nbytes, device)), nbytes_(nbytes), device_(device) {}
  ~Storage() { free_bytes(data_, nbytes_, device_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
};

}  // namespace relpos
