#include "core/flight_recorder.h"

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "reduce/dtype.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace coll {

namespace {

// The coarse clock costs a few nanoseconds (no TSC read); a hang is
// measured in seconds, so its few-millisecond resolution is plenty.
int64_t now_us() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME_COARSE, &t);
  return int64_t{t.tv_sec} * 1000000 + t.tv_nsec / 1000;
}

template <size_t N>
void copy_into(std::array<char, N>& to, const char* from) {
  std::strncpy(to.data(), from, N - 1);
  to[N - 1] = '\0';
}

// Every live recorder, for SIGUSR1.
std::mutex g_registry_mutex;
std::set<const FlightRecorder*>& registry() {
  static auto* live = new std::set<const FlightRecorder*>;  // never destroyed: outlives static comms
  return *live;
}

const char* state_name(int s) {
  switch (s) {
    case OpRecord::kRunning:
      return "running";
    case OpRecord::kDone:
      return "done";
    case OpRecord::kFailed:
      return "failed";
  }
  return "empty";
}

// A value without spaces or quotes, so that a dump line splits on spaces.
std::string quoted(const char* text) {
  std::string out = "\"";
  for (const char* c = text; *c != '\0'; ++c) out += (*c == '"' || *c == '\n') ? '\'' : *c;
  return out + "\"";
}

}  // namespace

FlightRecorder::FlightRecorder(int rank, int nranks, std::string comm, std::string host)
    : rank_(rank), nranks_(nranks), comm_(std::move(comm)), host_(std::move(host)) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  registry().insert(this);
}

FlightRecorder::~FlightRecorder() {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  registry().erase(this);
}

std::string FlightRecorder::algorithm(const OpRecord& r) {
  char name[sizeof(uint64_t) * 4 + 1] = {};
  for (size_t w = 0; w < r.algorithm.size(); ++w) {
    const uint64_t word = r.algorithm[w].load(std::memory_order_relaxed);
    std::memcpy(name + w * 8, &word, 8);
  }
  return name;
}

void FlightRecorder::set_algorithm(OpRecord& r, const std::string& algorithm) {
  for (size_t w = 0; w < r.algorithm.size(); ++w) {
    uint64_t word = 0;
    if (w * 8 < algorithm.size())
      std::memcpy(&word, algorithm.data() + w * 8, std::min<size_t>(8, algorithm.size() - w * 8));
    if (w + 1 == r.algorithm.size()) word &= ~(uint64_t{0xff} << 56);  // always NUL-terminated
    r.algorithm[w].store(word, std::memory_order_relaxed);
  }
}

OpRecord& FlightRecorder::begin(uint64_t seq, const char* collective, size_t count, int dtype, int op, int root,
                                uint32_t jobs, uint32_t steps, const std::string& algorithm) {
  constexpr auto relaxed = std::memory_order_relaxed;
  const uint64_t n = next_.load(relaxed);
  OpRecord& r = ring_[n % kEntries];
  r.state.store(OpRecord::kEmpty, relaxed);
  r.seq.store(seq, relaxed);
  r.collective.store(collective, relaxed);
  r.count.store(count, relaxed);
  r.dtype.store(dtype, relaxed);
  r.op.store(op, relaxed);
  r.root.store(root, relaxed);
  r.jobs.store(jobs, relaxed);
  r.steps.store(steps, relaxed);
  r.steps_done.store(0, relaxed);
  r.start_us.store(now_us(), relaxed);
  r.end_us.store(0, relaxed);
  set_algorithm(r, algorithm);
  if (r.waiting_on[0] != '\0' || r.error[0] != '\0') {  // left by an earlier operation in this slot
    std::lock_guard<std::mutex> lock(mutex_);
    r.waiting_on[0] = '\0';
    r.error[0] = '\0';
  }
  r.state.store(OpRecord::kRunning, std::memory_order_release);
  next_.store(n + 1, std::memory_order_release);
  return r;
}

void FlightRecorder::waiting_on(OpRecord& r, const std::string& peers) {
  std::lock_guard<std::mutex> lock(mutex_);
  copy_into(r.waiting_on, peers.c_str());
}

void FlightRecorder::end(OpRecord& r, const char* error) {
  r.end_us.store(now_us(), std::memory_order_relaxed);
  if (error == nullptr) {
    r.state.store(OpRecord::kDone, std::memory_order_relaxed);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  copy_into(r.error, error);
  r.state.store(OpRecord::kFailed, std::memory_order_relaxed);
}

std::string FlightRecorder::text(const char* reason) const {
  constexpr auto relaxed = std::memory_order_relaxed;
  std::ostringstream out;
  std::lock_guard<std::mutex> lock(mutex_);
  out << "coll-flight-recorder 1\n";
  out << "comm=" << comm_ << " rank=" << rank_ << " nranks=" << nranks_ << " host=" << host_ << " pid=" << getpid()
      << " reason=" << quoted(reason) << " time_us=" << now_us() << "\n";
  const uint64_t next = next_.load(std::memory_order_acquire);
  const uint64_t first = next > kEntries ? next - kEntries : 0;
  for (uint64_t i = first; i < next; ++i) {
    const OpRecord& r = ring_[i % kEntries];
    out << "op seq=" << r.seq.load(relaxed) << " collective=" << r.collective.load(relaxed)
        << " count=" << r.count.load(relaxed)
        << " dtype=" << reduce::datatype_name(static_cast<coll_datatype_t>(r.dtype.load(relaxed)))
        << " op=" << reduce::redop_name(static_cast<coll_redop_t>(r.op.load(relaxed)))
        << " root=" << r.root.load(relaxed) << " jobs=" << r.jobs.load(relaxed) << " algorithm=" << algorithm(r)
        << " steps=" << r.steps.load(relaxed) << " done=" << r.steps_done.load(relaxed)
        << " state=" << state_name(r.state.load(relaxed)) << " start_us=" << r.start_us.load(relaxed)
        << " end_us=" << r.end_us.load(relaxed) << " waiting_on=" << (r.waiting_on[0] ? r.waiting_on.data() : "-")
        << " error=" << quoted(r.error.data()) << "\n";
  }
  return out.str();
}

std::string FlightRecorder::dump(const char* reason) const {
  const std::string dir = config::get_string("COLL_FLIGHT_RECORDER_DIR");
  if (dir.empty()) return "";
  const std::string path = str_cat(dir, "/coll-fr.", comm_, ".rank", rank_, ".txt");
  std::ofstream file(path, std::ios::trunc);
  file << text(reason);
  if (!file) {
    log::warn(log::kColl, "flight recorder: cannot write ", path);
    return "";
  }
  log::warn(log::kColl, "flight recorder of rank ", rank_, " written to ", path, " (", reason, ")");
  return path;
}

void FlightRecorder::dump_all(const char* reason) {
  std::lock_guard<std::mutex> lock(g_registry_mutex);
  for (const FlightRecorder* r : registry()) r->dump(reason);
}

// The handler only writes a byte to a pipe (async-signal-safe); a thread
// that waits on the pipe does the dumping, with locks and files.
namespace {
int g_signal_pipe[2] = {-1, -1};
void on_sigusr1(int) {
  const char byte = 1;
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &byte, 1);
}
}  // namespace

void FlightRecorder::install_signal_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (config::get_string("COLL_FLIGHT_RECORDER_DIR").empty()) return;
    if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;
    std::thread([] {
      for (;;) {
        pollfd p{g_signal_pipe[0], POLLIN, 0};
        if (poll(&p, 1, -1) < 0 && errno != EINTR) return;
        char drain[64];
        while (read(g_signal_pipe[0], drain, sizeof(drain)) > 0) {
        }
        dump_all("SIGUSR1");
      }
    }).detach();
    struct sigaction action {};
    action.sa_handler = on_sigusr1;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &action, nullptr);
  });
}

}  // namespace coll
