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

// fsync(2) of the file, or with `folder` of the folder, at `path`: 0, or the errno of the failure.
int fsync_path(const std::string& path, bool folder);

// Makes a rename into the folder of the file `path` durable. Best effort: the file is already in
// place, and some file systems refuse fsync on a folder.
void fsync_folder_of(const std::string& path);

// The temporary file through which this process writes `path`: "<path>.tmp.<pid>".
std::string temporary_of(const std::string& path);

// Removes what a process killed while writing `path` left: the files "<path>.tmp.<pid>" of a
// process id that no process has now (a write under way in another process is left alone).
// Called once `path` is written; a failure to remove one is ignored (it is only space).
void remove_stale_temporaries(const std::string& path);

// The file a write of `path` through a temporary file and a rename replaces: `path`, or the file
// a symbolic link there points to (the link stays). An existing `path` that is no regular file
// (a folder, a device such as /dev/null, a FIFO) is refused, "[component] cannot write '<path>':
// it is a character device, not a regular file": the rename would replace the device itself.
std::string atomic_write_target(const std::string& component, const std::string& path);

// Creates `path` and its missing parents; a failure (a file in the way, no permission, a
// read-only filesystem) throws "[component] cannot create the folder '<path>': <the reason>".
void make_directories(const std::string& component, const std::string& path);

// Creates the folder the file `path` goes to (nothing when `path` names no folder), as
// make_directories does.
void make_file_folder(const std::string& component, const std::string& path);

// Refuses, with make_directories' message, a folder that make_directories could not make,
// without making anything: the nearest part of `path` that exists must be a folder this process
// may add to (a regular file on the way, or no permission, is refused).
void check_directories_can_be_made(const std::string& component, const std::string& path);

// Before work whose result goes to `path`: refuses a path whose folder cannot be made
// (check_directories_can_be_made) or that names no regular file (atomic_write_target), so the
// work is not done for nothing; nothing is made or written.
void check_write(const std::string& component, const std::string& path);

// The same for bytes of the data tools (component "data").
inline void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_file_atomic("data", path,
                    std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace relpos
