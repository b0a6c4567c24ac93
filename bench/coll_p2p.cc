// coll_p2p: point-to-point latency and bandwidth between two ranks over one
// transport, for reading side by side with perftest (ib_write_bw,
// ib_write_lat) on a new fabric. Launched as any coll job:
//
//   collrun -n 2 coll_p2p -t ib -b 8 -e 1M        # or mpirun, srun, torchrun
//
// Rank 0 drives; rank 1 answers. Two tests, one-sided (put, as RDMA WRITE)
// and two-sided (send/recv), selected with -m put|send|both:
// - bandwidth: rank 0 keeps -d writes in flight, -n of them per size; the
//   columns are perftest's: #bytes #iterations BW peak BW average MsgRate,
//   in Gbit/s (perftest --report_gbits) and Mpps;
// - latency (-l): a ping-pong of one message, half the round trip, as
//   ib_write_lat's t_min t_typical (median) t_max t_avg, in microseconds.
#include "base/deadline.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/store_client.h"
#include "bootstrap/store_protocol.h"
#include "core/pair_exchange.h"
#include "transport/registry.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

using coll::transport::Buffer;
using coll::transport::RequestId;
using coll::transport::Transport;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string transport = "tcp";
  size_t min_bytes = 8, max_bytes = 1 << 20;
  int factor = 2, iters = 1000, warmup = 50, depth = 16;
  std::string mode = "both";
  bool latency = false;
};

size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  const char unit = *end;
  if (unit == 'K' || unit == 'k') v *= 1024;
  if (unit == 'M' || unit == 'm') v *= 1024 * 1024;
  if (unit == 'G' || unit == 'g') v *= 1024.0 * 1024 * 1024;
  return static_cast<size_t>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "-t")
      o.transport = v, ++i;
    else if (a == "-b")
      o.min_bytes = parse_size(v), ++i;
    else if (a == "-e")
      o.max_bytes = parse_size(v), ++i;
    else if (a == "-f")
      o.factor = std::atoi(v), ++i;
    else if (a == "-n")
      o.iters = std::atoi(v), ++i;
    else if (a == "-w")
      o.warmup = std::atoi(v), ++i;
    else if (a == "-d")
      o.depth = std::atoi(v), ++i;
    else if (a == "-m")
      o.mode = v, ++i;
    else if (a == "-l")
      o.latency = true;
    else {
      std::fprintf(stderr,
                   "usage: coll_p2p [-t TRANSPORT] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-d DEPTH]\n"
                   "                [-m put|send|both] [-l]   (two ranks: collrun -n 2 coll_p2p ...)\n");
      std::exit(a == "-h" || a == "--help" ? 0 : 2);
    }
  }
  if (o.factor < 2 || o.iters < 1 || o.depth < 1 || o.min_bytes > o.max_bytes) {
    std::fprintf(stderr, "coll_p2p: -f must be 2 or more, -n and -d 1 or more, -b at most -e\n");
    std::exit(2);
  }
  return o;
}

// Everything both ranks share for a run: the transport, connected, and the
// peer's registered window.
struct Link {
  int rank = 0, peer = 1;
  std::unique_ptr<Transport> transport;
  std::vector<char> window, local;
  coll::transport::RemoteMemory remote;
};

// Waits until every request of `ids` completed; completions of others that
// come meanwhile are kept for their own wait. stamps: when each completed.
void wait(Transport& t, std::vector<RequestId> ids, std::vector<double>* stamps = nullptr) {
  static std::set<RequestId> completed;
  std::vector<RequestId> done;
  for (;;) {
    for (auto it = ids.begin(); it != ids.end();) {
      if (completed.erase(*it) == 0) {
        ++it;
        continue;
      }
      it = ids.erase(it);
      if (stamps) stamps->push_back(std::chrono::duration<double>(Clock::now().time_since_epoch()).count());
    }
    if (ids.empty()) return;
    done.clear();
    t.poll(done, 100);
    completed.insert(done.begin(), done.end());
  }
}

// Rank 0 writes `iters` messages with `depth` in flight; the last one
// notifies (put) so that rank 1 knows the size is over.
double bandwidth(Link& l, const Options& o, size_t bytes, bool put, int total, double* peak_s) {
  Transport& t = *l.transport;
  const uint64_t note = 1;
  std::vector<double> posted, stamps;
  auto now = [] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); };
  if (l.rank == 0) {
    std::vector<RequestId> flying;
    const auto start = Clock::now();
    for (int i = 0; i < total; ++i) {
      if (static_cast<int>(flying.size()) == o.depth) {
        wait(t, {flying.front()}, &stamps);
        flying.erase(flying.begin());
      }
      const bool last = i + 1 == total;
      posted.push_back(now());
      flying.push_back(put ? t.post_put(l.peer, Buffer{l.local.data(), bytes}, l.remote, 0, last ? &note : nullptr)
                           : t.post_send(l.peer, Buffer{l.local.data(), bytes}, 1));
    }
    for (RequestId id : flying) wait(t, {id}, &stamps);
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    // perftest's peak: the best rate over any run of consecutive messages,
    // from the post of the first to the completion of the last.
    *peak_s = 1e9;
    for (size_t i = 0; i < posted.size(); ++i)
      for (size_t j = i; j < stamps.size(); ++j)
        *peak_s = std::min(*peak_s, (stamps[j] - posted[i]) / static_cast<double>(j - i + 1));
    uint64_t ack = 0;  // rank 1 has everything: the next size may start
    wait(t, {t.post_recv(l.peer, &ack, sizeof(ack), 2)});
    return s;
  }
  if (put) {
    uint64_t value = 0;
    wait(t, {t.post_notification(l.peer, &value)});
  } else {
    std::vector<RequestId> flying;
    for (int i = 0; i < total; ++i) {
      if (static_cast<int>(flying.size()) == o.depth) {
        wait(t, {flying.front()});
        flying.erase(flying.begin());
      }
      flying.push_back(t.post_recv(l.peer, Buffer{l.window.data(), bytes}, 1));
    }
    wait(t, flying);
  }
  uint64_t ack = 1;
  wait(t, {t.post_send(l.peer, &ack, sizeof(ack), 2)});
  return 0;
}

// Half round trips of a ping-pong, in microseconds, sorted.
std::vector<double> latency(Link& l, const Options& o, size_t bytes, bool put) {
  Transport& t = *l.transport;
  std::vector<double> half;
  for (int i = 0; i < o.warmup + o.iters; ++i) {
    const auto start = Clock::now();
    uint64_t note = static_cast<uint64_t>(i), got = 0;
    auto out = [&] {
      return put ? t.post_put(l.peer, Buffer{l.local.data(), bytes}, l.remote, 0, &note)
                 : t.post_send(l.peer, Buffer{l.local.data(), bytes}, 3);
    };
    auto in = [&] {
      return put ? t.post_notification(l.peer, &got) : t.post_recv(l.peer, Buffer{l.window.data(), bytes}, 3);
    };
    if (l.rank == 0) {
      RequestId r = in();
      wait(t, {out(), r});
    } else {
      wait(t, {in()});
      wait(t, {out()});
    }
    if (i >= o.warmup) half.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / 2);
  }
  std::sort(half.begin(), half.end());
  return half;
}

Link connect(const Options& o) {
  coll::bootstrap::EnvJob job = coll::bootstrap::join_from_env();
  if (job.nranks != 2) {
    std::fprintf(stderr, "coll_p2p: runs on exactly 2 ranks, not %d\n", job.nranks);
    std::exit(2);
  }
  const coll::Deadline deadline = coll::Deadline::after_ms(60000);
  static coll::bootstrap::StoreClient store(job.id, deadline, coll::bootstrap::kStoreClientIdentity);
  static coll::StorePairExchange pairs(store, "p2p/", job.rank, 60000);
  Link l;
  l.rank = job.rank;
  l.peer = 1 - job.rank;
  l.transport = coll::transport::find(o.transport)
                    .make({job.rank, 2, job.id.secret, coll::transport::job_tag(job.id.secret, "p2p"),
                           coll::transport::host_id()});
  store.set("p2p/addr/" + std::to_string(l.rank), l.transport->local_address(), deadline);
  std::vector<std::string> addresses = {store.get("p2p/addr/0", deadline, "rank 0's address"),
                                        store.get("p2p/addr/1", deadline, "rank 1's address")};
  l.transport->connect({l.peer}, addresses, pairs, deadline);
  l.window.assign(o.max_bytes, 0);
  l.local.assign(o.max_bytes, 1);
  if (o.mode != "send") {
    const coll::transport::Registration* mine =
        l.transport->register_memory(l.window.data(), l.window.size(), coll::transport::MemoryKind::kHost);
    l.transport->register_memory(l.local.data(), l.local.size(), coll::transport::MemoryKind::kHost);
    if (mine == nullptr) {
      std::fprintf(stderr, "coll_p2p: the %s transport registers no memory: use -m send\n", o.transport.c_str());
      std::exit(2);
    }
    store.set("p2p/window/" + std::to_string(l.rank),
              std::string(reinterpret_cast<const char*>(mine->handle.bytes.data()), mine->handle.bytes.size()),
              deadline);
    const std::string theirs = store.get("p2p/window/" + std::to_string(l.peer), deadline, "the peer's window");
    std::memcpy(l.remote.handle.bytes.data(), theirs.data(), l.remote.handle.bytes.size());
    l.remote.bytes = o.max_bytes;
  }
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    Link l = connect(o);
    for (const bool put : {true, false}) {
      if ((put && o.mode == "send") || (!put && o.mode == "put")) continue;
      if (l.rank == 0) {
        std::printf("# coll_p2p: %s %s over %s, %d iterations, %s\n", put ? "put (one-sided)" : "send/recv",
                    o.latency ? "latency" : "bandwidth", o.transport.c_str(), o.iters,
                    o.latency ? "half round trip" : ("window " + std::to_string(o.depth)).c_str());
        if (o.latency)
          std::printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n");
        else
          std::printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
      }
      for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= static_cast<size_t>(o.factor)) {
        if (o.latency) {
          const std::vector<double> t = latency(l, o, bytes, put);
          double sum = 0;
          for (double v : t) sum += v;
          if (l.rank == 0)
            std::printf(" %-7zu %-10d     %-14.2f %-14.2f %-16.2f %-10.2f\n", bytes, o.iters, t.front(), t.back(),
                        t[t.size() / 2], sum / static_cast<double>(t.size()));
        } else {
          double peak_s = 0;
          if (o.warmup > 0) bandwidth(l, o, bytes, put, std::min(o.warmup, o.iters), &peak_s);
          const double s = bandwidth(l, o, bytes, put, o.iters, &peak_s);
          if (l.rank == 0) {
            const double avg = static_cast<double>(bytes) * o.iters * 8 / s / 1e9;
            std::printf(" %-10zu %-10d       %-18.4f %-20.4f %-10.6f\n", bytes, o.iters,
                        static_cast<double>(bytes) * 8 / peak_s / 1e9, avg, o.iters / s / 1e6);
          }
        }
        std::fflush(stdout);
        if (bytes == 0) break;
      }
    }
    l.transport->close(nullptr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coll_p2p: %s\n", e.what());
    return 1;
  }
  return 0;
}
