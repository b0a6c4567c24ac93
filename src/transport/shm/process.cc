#include "transport/shm/process.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cerrno>
#include <fstream>
#include <string>

namespace coll::transport::shm {

std::string segment_maker(int pid) {
  // The namespace's inode number is unique on the machine; 0 where /proc is not mounted.
  struct stat ns {};
  const unsigned long long pid_namespace = stat("/proc/self/ns/pid", &ns) == 0 ? ns.st_ino : 0;
  return "-p" + std::to_string(pid) + "-n" + std::to_string(pid_namespace);
}

bool process_ended(int pid) {
  if (kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;  // EPERM: alive, another user's
  // The state follows the command's closing parenthesis (the command may hold
  // spaces and parentheses of its own): Z a zombie, X dead.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;  // no /proc: kill's answer stands
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace coll::transport::shm
