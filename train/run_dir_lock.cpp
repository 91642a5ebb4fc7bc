// RunDirLock (run_dir_lock.h): an exclusive, non-blocking flock on the run directory's descriptor.
#include "train/run_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace relpos {

RunDirLock::RunDirLock(const std::filesystem::path& dir) {
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  RELPOS_CHECK(fd_ >= 0, "train", "cannot open the run directory '{}': {}", dir.string(),
               std::strerror(errno));
  int locked = 0;
  do {
    locked = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (locked != 0 && errno == EINTR);
  if (locked == 0 || errno != EWOULDBLOCK) return;  // ENOLCK: a filesystem without locks
  ::close(fd_);
  fd_ = -1;
  fail("train",
       "'{}' is in use: another relpos process is training there (wait for it to end, or train "
       "elsewhere with --out)",
       dir.string());
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // and with it the lock
}

}  // namespace relpos
