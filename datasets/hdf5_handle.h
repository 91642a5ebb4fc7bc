// RAII for HDF5 C API ids (files, datasets, dataspaces, types, attributes, property lists), a
// scope that silences HDF5's own error-stack printing while relpos reports errors itself, and the
// file format every HDF5 file of relpos is written in and read from.
#pragma once

#include <hdf5.h>

#include <optional>
#include <string>
#include <utility>

namespace relpos {

class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  ~H5Handle() { reset(); }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  H5Handle& operator=(H5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, -1);
      close_ = other.close_;
    }
    return *this;
  }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  // Closes now; returns false when HDF5 reports a failure (e.g. a file that could not be flushed).
  bool reset() {
    const bool ok = id_ < 0 || close_(id_) >= 0;
    id_ = -1;
    return ok;
  }

 private:
  hid_t id_;
  Closer close_;
};

// While alive, HDF5 does not print its error stack to stderr (the previous handler is restored).
class H5QuietErrors {
 public:
  H5QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~H5QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  H5QuietErrors(const H5QuietErrors&) = delete;
  H5QuietErrors& operator=(const H5QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// File access for the files relpos writes: HDF5 1.10's format (superblock version 3), in which
// every piece of metadata (superblock, object headers, B-trees, heap blocks) carries a checksum
// that HDF5 verifies when it reads it, so a damaged file is refused instead of parsed. Files are
// closed strongly (H5Fclose closes them even if an id were left open). Throws relpos::Error
// naming `who` when HDF5 cannot set this up.
H5Handle checksummed_file_access(const std::string& who);

// The operating system's reason behind the error HDF5 has just reported (its error stack holds
// "errno = 28, error message = 'No space left on device'" when a write failed), as ": <reason>",
// or "" when no system call failed. Call it right after the failing HDF5 call: the next call
// clears the stack.
std::string hdf5_system_error();

// Why `path` is not in that format (no HDF5 signature at byte 0, or a superblock version below 2,
// i.e. metadata without checksums: HDF5 before 1.10, or h5py without libver="v110"/"latest"),
// or std::nullopt when it is. Checked before HDF5 opens the file: HDF5's parser of the old,
// unchecksummed structures crashes on some damaged files.
std::optional<std::string> unchecksummed_format(const std::string& path);

}  // namespace relpos
