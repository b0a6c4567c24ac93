#include "supervise.h"

#include "base/auth.h"
#include "bootstrap/spares.h"
#include "transport/registry.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

namespace collrun {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_signal = 0;   // the last SIGINT or SIGTERM collrun got
volatile sig_atomic_t g_signals = 0;  // how many
void on_signal(int sig) {
  g_signal = sig;
  g_signals = g_signals + 1;
}

void emit(int rank, const std::string& line) {
  char tag[32];
  int n = std::snprintf(tag, sizeof(tag), "[%d] ", rank);
  std::string tagged(tag, static_cast<size_t>(n));
  tagged.append(line).push_back('\n');
  ssize_t ignored = ::write(STDOUT_FILENO, tagged.data(), tagged.size());
  (void)ignored;
}

// Reads what a rank wrote and prints complete lines with its tag.
void drain(int rank, Rank& r, bool final) {
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(r.out_fd, buf, sizeof(buf));
    if (n <= 0) break;
    r.partial.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = r.partial.find('\n')) != std::string::npos) {
      emit(rank, r.partial.substr(0, nl));
      r.partial.erase(0, nl + 1);
    }
  }
  if (final && !r.partial.empty()) {
    emit(rank, r.partial);
    r.partial.clear();
  }
}

// With --tag-output: what the ranks wrote, or a 50 ms tick.
void pass_output(std::vector<Rank>& ranks) {
  std::vector<pollfd> fds;
  for (const Rank& rk : ranks)
    if (rk.out_fd >= 0) fds.push_back({rk.out_fd, POLLIN, 0});
  if (fds.empty())
    usleep(50000);
  else
    poll(fds.data(), fds.size(), 50);
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].out_fd >= 0) drain(static_cast<int>(r), ranks[r], false);
}

// A child that has exited, not reaped (WNOWAIT): its pid stays reserved until
// waitpid. `which`: that child only; 0: any. 0 when none has, -1 when there
// is no such child.
pid_t exited_child(pid_t which = 0) {
  siginfo_t info{};
  if (waitid(which > 0 ? P_PID : P_ALL, static_cast<id_t>(which), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return -1;
  return info.si_pid;
}

// The job as supervise() sees it.
struct Watch {
  int running = 0;          // ranks and spares
  int members_running = 0;  // ranks
  int first_failure = 0;
  int first_failed_rank = -1;
  Clock::time_point failed_at{};
  Clock::time_point terminated_at{};  // SIGTERM sent; SIGKILL follows 2 s later
  int signals_at_term = 0;            // interrupts by then: one more sends the SIGKILL at once
  bool terminated = false, killed = false;
};

// The ranks and spares that have ended: their segments removed, reaped, and
// the first failure noted and named.
void reap(const Options& opt, std::vector<Rank>& ranks, Leftovers& leftovers, Watch& w) {
  pid_t pid;
  while ((pid = exited_child()) > 0) {
    leftovers.remove_by(pid);
    int status = 0;
    waitpid(pid, &status, 0);
    for (size_t r = 0; r < ranks.size(); ++r) {
      Rank& rk = ranks[r];
      if (rk.pid != pid || !rk.running) continue;
      rk.running = false;
      --w.running;
      if (!rk.spare) --w.members_running;
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (rk.spare_ended) code = 0;  // ended by us, unneeded
      if (code == 0 || w.first_failure != 0) continue;
      w.first_failure = code;
      w.first_failed_rank = static_cast<int>(r);
      w.failed_at = Clock::now();
      const char* what = rk.spare ? "spare" : "rank";
      const int who = rk.spare ? static_cast<int>(r) - opt.nranks : static_cast<int>(r);
      if (WIFSIGNALED(status))
        std::fprintf(stderr, "collrun: %s %d was killed by signal %d (%s)\n", what, who, WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
      else
        std::fprintf(stderr, "collrun: %s %d exited with status %d\n", what, who, code);
    }
  }
}

// The spares left waiting once the ranks are done, now or later (one whose
// growth failed waits again).
void end_waiting_spares(const Options& opt, std::vector<Rank>& ranks, const std::string& spares_dir, const Watch& w) {
  if (w.members_running != 0 || w.running == 0) return;
  const std::set<int> seated = coll::bootstrap::seated_spares(spares_dir);
  for (size_t r = static_cast<size_t>(opt.nranks); r < ranks.size(); ++r) {
    Rank& rk = ranks[r];
    if (!rk.running || rk.spare_ended || seated.count(static_cast<int>(r) - opt.nranks) > 0) continue;
    kill(-rk.pid, SIGTERM);
    rk.spare_ended = true;
  }
}

// After a failure the others get the grace period, then SIGTERM, then
// SIGKILL 2 s later. An interrupt (SIGINT, SIGTERM) is the job's status and
// ends the ranks the same way without the grace period, even one already
// begun; one that comes after the SIGTERM sends the SIGKILL at once.
void end_after_failure(const Options& opt, std::vector<Rank>& ranks, Watch& w) {
  const int signals = g_signals;
  if (signals > 0) w.first_failure = 128 + g_signal;
  if (w.first_failure == 0 || w.running == 0) return;
  const Clock::time_point now = Clock::now();
  if (!w.terminated && (signals > 0 || now - w.failed_at >= std::chrono::duration<double>(opt.grace_s))) {
    if (signals > 0)
      std::fprintf(stderr, "collrun: interrupted (%s): ending the %d remaining rank(s)\n", strsignal(g_signal),
                   w.running);
    else
      std::fprintf(stderr, "collrun: ending the %d remaining rank(s) after rank %d failed\n", w.running,
                   w.first_failed_rank);
    for (const Rank& rk : ranks)
      if (rk.running) kill(-rk.pid, SIGTERM);
    w.terminated = true;
    w.terminated_at = now;
    w.signals_at_term = signals;
  } else if (w.terminated && !w.killed &&
             (signals > w.signals_at_term || now - w.terminated_at >= std::chrono::seconds(2))) {
    if (signals > w.signals_at_term)
      std::fprintf(stderr, "collrun: interrupted (%s): killing the %d remaining rank(s)\n", strsignal(g_signal),
                   w.running);
    for (const Rank& rk : ranks)
      if (rk.running) kill(-rk.pid, SIGKILL);
    w.killed = true;
  }
}

}  // namespace

void Leftovers::remove_by(pid_t pid) { remove(coll::transport::segments_left_by({static_cast<int>(pid)})); }

void Leftovers::remove_of(const std::string& secret_hex) {
  remove(coll::transport::segments_left(coll::auth::secret_from_hex(secret_hex, "the job secret")));
}

void Leftovers::report() const {
  if (removed_ > 0)
    std::fprintf(stderr, "collrun: removed %zu shared-memory segment(s) that ended ranks left in /dev/shm (%s)\n",
                 removed_, first_.c_str());
}

void Leftovers::remove(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    std::error_code ec;
    if (!std::filesystem::remove("/dev/shm/" + name, ec)) continue;
    if (removed_++ == 0) first_ = name;
  }
}

void catch_signals() {
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
}

int supervise(const Options& opt, std::vector<Rank>& ranks, const std::string& spares_dir, Leftovers& leftovers) {
  Watch w;
  w.running = static_cast<int>(ranks.size());
  w.members_running = opt.nranks;
  while (w.running > 0) {
    pass_output(ranks);
    reap(opt, ranks, leftovers, w);
    end_waiting_spares(opt, ranks, spares_dir, w);
    end_after_failure(opt, ranks, w);
  }
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].out_fd >= 0) drain(static_cast<int>(r), ranks[r], true);
  return w.first_failure;
}

void end_started(std::vector<Rank>& ranks, Leftovers& leftovers) {
  for (const Rank& rk : ranks)
    if (rk.running) kill(-rk.pid, SIGTERM);
  const auto kill_at = Clock::now() + std::chrono::seconds(2);
  for (size_t r = 0; r < ranks.size(); ++r) {
    Rank& rk = ranks[r];
    while (rk.running && exited_child(rk.pid) == 0) {
      if (Clock::now() >= kill_at) kill(-rk.pid, SIGKILL);
      usleep(10000);
    }
    if (rk.running) {
      leftovers.remove_by(rk.pid);
      waitpid(rk.pid, nullptr, 0);
      rk.running = false;
    }
    if (rk.out_fd >= 0) {
      drain(static_cast<int>(r), rk, true);
      close(rk.out_fd);
    }
  }
}

}  // namespace collrun
