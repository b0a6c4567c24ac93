#include "core/flight_recorder.h"

#include "core/config.h"
#include "core/error.h"
#include "core/log.h"
#include "reduce/dtype.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

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

OpRecord& FlightRecorder::begin(uint64_t seq, const char* collective, size_t count, int dtype, int op, int root,
                                uint32_t jobs, uint32_t steps, const std::string& algorithm) {
  std::lock_guard<std::mutex> lock(mutex_);
  OpRecord& r = ring_[next_++ % kEntries];
  r.seq = seq;
  r.collective = collective;
  r.count = count;
  r.dtype = dtype;
  r.op = op;
  r.root = root;
  r.jobs = jobs;
  r.steps = steps;
  r.steps_done.store(0, std::memory_order_relaxed);
  r.start_us = now_us();
  r.end_us = 0;
  copy_into(r.algorithm, algorithm.c_str());
  r.waiting_on[0] = '\0';
  r.error[0] = '\0';
  r.state.store(OpRecord::kRunning, std::memory_order_relaxed);
  return r;
}

void FlightRecorder::waiting_on(OpRecord& r, const std::string& peers) {
  std::lock_guard<std::mutex> lock(mutex_);
  copy_into(r.waiting_on, peers.c_str());
}

void FlightRecorder::end(OpRecord& r, const char* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  r.end_us = now_us();
  if (error != nullptr) copy_into(r.error, error);
  r.state.store(error != nullptr ? OpRecord::kFailed : OpRecord::kDone, std::memory_order_relaxed);
}

std::string FlightRecorder::text(const char* reason) const {
  std::ostringstream out;
  std::lock_guard<std::mutex> lock(mutex_);
  out << "coll-flight-recorder 1\n";
  out << "comm=" << comm_ << " rank=" << rank_ << " nranks=" << nranks_ << " host=" << host_ << " pid=" << getpid()
      << " reason=" << quoted(reason) << " time_us=" << now_us() << "\n";
  const uint64_t first = next_ > kEntries ? next_ - kEntries : 0;
  for (uint64_t i = first; i < next_; ++i) {
    const OpRecord& r = ring_[i % kEntries];
    out << "op seq=" << r.seq << " collective=" << r.collective << " count=" << r.count
        << " dtype=" << reduce::datatype_name(static_cast<coll_datatype_t>(r.dtype))
        << " op=" << reduce::redop_name(static_cast<coll_redop_t>(r.op)) << " root=" << r.root << " jobs=" << r.jobs
        << " algorithm=" << r.algorithm.data() << " steps=" << r.steps
        << " done=" << r.steps_done.load(std::memory_order_relaxed)
        << " state=" << state_name(r.state.load(std::memory_order_relaxed)) << " start_us=" << r.start_us
        << " end_us=" << r.end_us << " waiting_on=" << (r.waiting_on[0] ? r.waiting_on.data() : "-")
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
