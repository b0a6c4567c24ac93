// base/fork_release.h: what a child forked without exec keeps of a rank.
// The descriptors given to it point at /dev/null in the child, and the
// mappings of files under a prefix are not in the child at all; so a
// killed rank's child keeps none of its connections or devices open.
#include "base/fork_release.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace coll {
namespace {

// The child's exit status (or -1 when it did not exit).
int exit_status(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Readable within 5 s (a bound: it is readable at once or never).
bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 5000) == 1;
}

TEST(ForkRelease, AChildHoldsNoneOfTheDescriptorsGivenIt) {
  int data[2], hold[2];
  ASSERT_EQ(pipe(data), 0);
  ASSERT_EQ(pipe(hold), 0);
  fork_release::add(data[1]);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(hold[1]);
    // Through its copy: to /dev/null, where the pipe would carry it.
    const bool wrote = write(data[1], "x", 1) == 1;
    char byte;
    (void)!read(hold[0], &byte, 1);  // lives until the parent has looked
    _exit(wrote ? 0 : 1);
  }
  close(hold[0]);
  fork_release::close(data[1]);
  // The parent's end closed, the pipe has no writer while the child lives: end of file, no byte.
  char byte = 0;
  EXPECT_TRUE(readable(data[0])) << "the child's copy still holds the pipe open";
  EXPECT_EQ(read(data[0], &byte, 1), 0) << "the child's write reached the pipe: '" << byte << "'";
  close(hold[1]);
  EXPECT_EQ(exit_status(pid), 0) << "the child's write to its copy (/dev/null) failed";
  close(data[0]);
}

TEST(ForkRelease, ADescriptorForgottenOrClosedIsTheChildsAgain) {
  int forgotten[2];
  ASSERT_EQ(pipe(forgotten), 0);
  fork_release::add(forgotten[1]);
  fork_release::forget(forgotten[1]);
  // Closed through the list, then its number given to a pipe's write end that the list never had.
  int closed[2], reused[2];
  ASSERT_EQ(pipe(closed), 0);
  ASSERT_EQ(pipe(reused), 0);
  const int number = closed[1];
  fork_release::add(number);
  fork_release::close(number);
  ASSERT_EQ(dup2(reused[1], number), number);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(write(forgotten[1], "f", 1) == 1 && write(number, "r", 1) == 1 ? 0 : 1);
  ASSERT_EQ(exit_status(pid), 0);
  char byte = 0;
  ASSERT_TRUE(readable(forgotten[0]));
  EXPECT_EQ(read(forgotten[0], &byte, 1), 1);
  EXPECT_EQ(byte, 'f');
  ASSERT_TRUE(readable(reused[0]));
  EXPECT_EQ(read(reused[0], &byte, 1), 1);
  EXPECT_EQ(byte, 'r');
  for (int fd : {forgotten[0], forgotten[1], closed[0], reused[0], reused[1], number}) close(fd);
}

// A page of a new file at `path`, mapped shared; nullptr on failure.
void* map_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return nullptr;
  void* p = ftruncate(fd, 4096) == 0 ? mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  return p == MAP_FAILED ? nullptr : p;
}

// msync answers ENOMEM for an address that is not mapped.
bool mapped(void* p) { return msync(p, 4096, MS_ASYNC) == 0 || errno != ENOMEM; }

TEST(ForkRelease, MappingsUnderThePrefixAreLeftOutOfAChild) {
  char made[] = "/tmp/coll-fork-release-XXXXXX";
  ASSERT_NE(mkdtemp(made), nullptr);
  // As /proc/self/maps names it (through any link on the way).
  char* resolved = realpath(made, nullptr);
  ASSERT_NE(resolved, nullptr);
  const std::string dir = resolved;
  free(resolved);
  const std::string under = dir + "/device", beside = dir + ".other";
  void* kept = map_file(under);
  void* other = map_file(beside);
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(other, nullptr);
  fork_release::keep_mappings((dir + "/").c_str());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit((mapped(kept) ? 1 : 0) | (mapped(other) ? 0 : 2));
  const int status = exit_status(pid);
  EXPECT_EQ(status & 1, 0) << "the child has the mapping of " << under;
  EXPECT_EQ(status & 2, 0) << "the child lost the mapping of " << beside << ", outside the prefix";
  EXPECT_GE(status, 0);
  EXPECT_TRUE(mapped(kept)) << "the parent keeps its own";
  munmap(kept, 4096);
  munmap(other, 4096);
  unlink(under.c_str());
  unlink(beside.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace coll
