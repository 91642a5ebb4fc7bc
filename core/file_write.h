// Writing whole files the way every file relpos writes must be written: through a temporary file
// in the same folder, each write, the fsync and the close checked, then renamed over the target,
// so a reader sees the old file or the new one, whole; a failure (a full disk, a missing folder,
// no permission) throws "[component] cannot write '<path>': <the system's reason>" and leaves no
// temporary file behind.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace relpos {

void write_file_atomic(const std::string& component, const std::string& path,
                       std::string_view bytes);

// The file a write of `path` through a temporary file and a rename replaces: `path`, or the file
// a symbolic link there points to (the link stays). An existing `path` that is no regular file
// (a folder, a device such as /dev/null, a FIFO) is refused, "[component] cannot write '<path>':
// it is a character device, not a regular file": the rename would replace the device itself.
std::string atomic_write_target(const std::string& component, const std::string& path);

// Creates `path` and its missing parents; a failure (a file in the way, no permission, a
// read-only filesystem) throws "[component] cannot create the folder '<path>': <the reason>".
void make_directories(const std::string& component, const std::string& path);

// Before work whose result goes to `path`: makes its folder (make_directories) and checks it
// (atomic_write_target), so a path that cannot be written is refused before the work, not after.
void prepare_write(const std::string& component, const std::string& path);

// The same for bytes of the data tools (component "data").
inline void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_file_atomic("data", path,
                    std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace relpos
