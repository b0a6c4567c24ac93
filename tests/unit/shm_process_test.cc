// transport/shm/process.h: a peer's end as the shm transport sees it where
// no pidfd does (the fallback), on real child processes; a segment's maker.
#include "transport/shm/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace coll::transport::shm {
namespace {

// A child that waits for its signal, once its command name (if given) is set.
pid_t waiting_child(const char* name = nullptr) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    if (name != nullptr) prctl(PR_SET_NAME, name);
    (void)!write(ready[1], "", 1);
    for (;;) pause();
  }
  char byte;
  if (pid > 0) (void)!read(ready[0], &byte, 1);
  close(ready[0]);
  close(ready[1]);
  return pid;
}

// Until the child has ended, without reaping it.
void await_end(pid_t pid) {
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
}

TEST(ShmProcess, AZombieHasEndedThoughKillStillFindsIt) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(0);
  await_end(pid);
  EXPECT_EQ(kill(pid, 0), 0) << "a zombie answers kill(pid, 0), which this test is about";
  EXPECT_TRUE(process_ended(pid));
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(process_ended(pid));  // reaped: no such process (unless the pid came round again at once)
}

TEST(ShmProcess, ALiveProcessHasNotEnded) {
  EXPECT_FALSE(process_ended(getpid()));
  // Its name holds a parenthesis and a state letter: the state is read after the last ')'.
  const pid_t pid = waiting_child(") Z (");
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(process_ended(pid));
  kill(pid, SIGKILL);
  await_end(pid);
  EXPECT_TRUE(process_ended(pid));
  waitpid(pid, nullptr, 0);
}

TEST(ShmProcess, AStoppedProcessHasNotEnded) {
  const pid_t pid = waiting_child();
  ASSERT_GT(pid, 0);
  kill(pid, SIGSTOP);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED), 0);
  EXPECT_FALSE(process_ended(pid));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST(ShmProcess, ASegmentsMakerIsItsPidAndPidNamespace) {
  struct stat ns {};
  ASSERT_EQ(stat("/proc/self/ns/pid", &ns), 0);
  EXPECT_EQ(segment_maker(1234), "-p1234-n" + std::to_string(ns.st_ino));
}

}  // namespace
}  // namespace coll::transport::shm
