// One process trains in a run directory at a time: a second `relpos train` (a --resume while the
// run still goes on, an --overwrite of it, the same --out twice) is refused before it removes or
// writes anything there, instead of interleaving its checkpoints and records with the first's.
// The lock is flock(2) on the directory itself: the kernel lets go of it when the process ends,
// however it ends (a killed run leaves nothing to clean up).
#pragma once

#include <filesystem>

namespace relpos {

class RunDirLock {
 public:
  // Locks the existing folder `dir`, or throws
  //   [train] 'DIR' is in use: another relpos process is training there (wait for it to end, or
  //   train elsewhere with --out)
  // A filesystem without locks (some network mounts) is trained on unlocked.
  explicit RunDirLock(const std::filesystem::path& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace relpos
