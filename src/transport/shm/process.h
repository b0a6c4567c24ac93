// Whether a peer's process has ended, where no pidfd says so (kernels
// before 5.3, or pidfd_open refused by a sandbox).
#pragma once

namespace coll::transport::shm {

// True when no process has that pid, or it has exited and waits to be
// reaped (a zombie: kill(pid, 0) still succeeds for it, and its parent may
// be slow to reap it, or never).
bool process_ended(int pid);

}  // namespace coll::transport::shm
