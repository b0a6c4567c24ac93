// Descriptors a child forked without exec lets go of. A rank's sockets
// tell its peers that it lives: while a copy is open in a child (a data
// loader's worker, a multiprocessing fork) a killed rank's connections stay
// open and its listeners accept, and its peers wait for it until their
// timeout. At fork the child points each descriptor registered here at
// /dev/null: the number stays taken (the child's copy of coll may still
// close it), the socket is the parent's alone.
#pragma once

namespace coll::fork_release {

// Registers `fd`; the first call installs the fork handler.
void add(int fd);
// Takes `fd` off and closes it, under the lock a fork waits for: a fork
// between the two would leave the child a live copy.
void close(int fd);
// Takes `fd` off without closing it, before its owner (a library) does.
void forget(int fd);
// The mappings of files whose path begins with `prefix` (a verbs device's
// queues and doorbells, which a library mapped) are left out of children
// (MADV_DONTFORK): through them a child would keep the file open as a
// descriptor does. Called once the mappings are made (ib: after
// opening the device, and after each connect's queue pairs).
void keep_mappings(const char* prefix);

}  // namespace coll::fork_release
