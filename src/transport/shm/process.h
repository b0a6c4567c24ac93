// A peer's process: whether it has ended, where no pidfd says so (kernels
// before 5.3, or pidfd_open refused by a sandbox), and its mark in a
// segment's name.
#pragma once

#include <string>

namespace coll::transport::shm {

// The end of a segment's name that says which process made it:
// "-p<pid>-n<pid namespace>", the namespace this process's. A pid alone is
// not unique where jobs that share /dev/shm have pid namespaces of their
// own (containers with --ipc=host, or a pod's), and a sweep by pid would
// take another job's segment.
std::string segment_maker(int pid);

// True when no process has that pid, or it has exited and waits to be
// reaped (a zombie: kill(pid, 0) still succeeds for it, and its parent may
// be slow to reap it, or never).
bool process_ended(int pid);

}  // namespace coll::transport::shm
