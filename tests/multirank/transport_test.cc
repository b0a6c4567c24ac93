// The transport conformance suite: what every transport must do, written
// once and run for each (tcp, shm; later ones add themselves to the list):
// ordering, zero-length and odd sizes, many tiny messages, tag/length
// mismatch detection, a peer that goes away, an abort mid-transfer. Then
// what is TCP's own: strangers on its port, before and during a run.
#include "transport/transport.h"
#include "base/auth.h"
#include "base/error.h"
#include "base/socket.h"
#include "bootstrap/store_client.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/unique_id.h"
#include "support/multirank.h"
#include "support/transport_link.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, ManyMessagesOfEverySizeArriveInOrder) {
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& id) {
    Link link = connect_pair(rank, id, GetParam());
    const int peer = 1 - rank;
    const std::vector<size_t> sizes = {0, 1, 7, 4096, 65537, 1 << 20, 0, 3, 5 << 20};
    std::vector<std::vector<uint8_t>> out, in;
    std::vector<transport::RequestId> ids;
    for (int round = 0; round < 20; ++round)
      for (size_t k = 0; k < sizes.size(); ++k) {
        std::vector<uint8_t> msg(sizes[k]);
        for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i * 31 + k + round * 7 + rank);
        out.push_back(std::move(msg));
        in.emplace_back(sizes[k]);
      }
    // Post all sends and all receives at once: both directions stream together.
    for (size_t m = 0; m < out.size(); ++m) {
      ids.push_back(link.transport->post_send(peer, out[m].data(), out[m].size(), m));
      ids.push_back(link.transport->post_recv(peer, in[m].data(), in[m].size(), m));
    }
    wait_all(*link.transport, ids);
    for (size_t m = 0; m < in.size(); ++m) {
      size_t k = m % sizes.size(), round = m / sizes.size();
      for (size_t i = 0; i < in[m].size(); ++i)
        ASSERT_EQ(in[m][i], static_cast<uint8_t>(i * 31 + k + round * 7 + peer)) << "message " << m << " byte " << i;
    }
  });
}

// A receive into a sink (transports that deliver pieces): the pieces cover
// the message once, in order, each but the last a multiple of 64 bytes, and
// they interleave correctly with ordinary receives from the same peer.
TEST_P(Conformance, PiecesReachASinkInOrderWholeAndAligned) {
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& id) {
    Link link = connect_pair(rank, id, GetParam());
    if (!link.transport->delivers_pieces_from(1 - rank)) GTEST_SKIP() << GetParam() << " does not deliver pieces";
    const int peer = 1 - rank;
    struct Collected {
      std::vector<uint8_t> bytes;
      std::vector<std::pair<size_t, size_t>> pieces;  // (offset, length)
    };
    auto take = [](const transport::Sink& sink, size_t offset, const void* data, size_t n) {
      auto& c = *static_cast<Collected*>(sink.context);
      c.pieces.emplace_back(offset, n);
      if (offset + n > c.bytes.size()) c.bytes.resize(offset + n);
      std::memcpy(c.bytes.data() + offset, data, n);
    };
    const std::vector<size_t> sizes = {0, 1, 31, 32, 33, 4096, 65537, 1 << 20, 5 << 20};
    std::vector<std::vector<uint8_t>> out, plain(sizes.size());
    std::vector<Collected> sunk(sizes.size());
    std::vector<transport::RequestId> ids;
    for (size_t k = 0; k < sizes.size(); ++k) {
      std::vector<uint8_t> msg(sizes[k]);
      for (size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<uint8_t>(i * 13 + k + rank);
      out.push_back(msg);
      out.push_back(std::move(msg));  // each size twice: once to a sink, once to a buffer
    }
    for (size_t k = 0; k < sizes.size(); ++k) {
      plain[k].resize(sizes[k]);
      ids.push_back(link.transport->post_send(peer, out[2 * k].data(), sizes[k], 2 * k));
      ids.push_back(link.transport->post_send(peer, out[2 * k + 1].data(), sizes[k], 2 * k + 1));
      ids.push_back(link.transport->post_recv_sink(peer, sizes[k], 2 * k, {take, &sunk[k]}));
      ids.push_back(link.transport->post_recv(peer, plain[k].data(), sizes[k], 2 * k + 1));
    }
    wait_all(*link.transport, ids);
    for (size_t k = 0; k < sizes.size(); ++k) {
      size_t next = 0;
      for (size_t p = 0; p < sunk[k].pieces.size(); ++p) {
        auto [offset, n] = sunk[k].pieces[p];
        EXPECT_EQ(offset, next) << "size " << sizes[k] << " piece " << p;
        if (p + 1 < sunk[k].pieces.size()) EXPECT_EQ(n % 64, 0u) << "size " << sizes[k] << " piece " << p;
        next = offset + n;
      }
      EXPECT_EQ(next, sizes[k]);
      ASSERT_EQ(sunk[k].bytes.size(), sizes[k]);
      for (size_t i = 0; i < sizes[k]; ++i) {
        ASSERT_EQ(sunk[k].bytes[i], static_cast<uint8_t>(i * 13 + k + peer)) << "sink, size " << sizes[k];
        ASSERT_EQ(plain[k][i], static_cast<uint8_t>(i * 13 + k + peer)) << "buffer, size " << sizes[k];
      }
    }
  });
}

TEST_P(Conformance, ALengthMismatchIsAnErrorNotCorruption) {
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& id) {
    Link link = connect_pair(rank, id, GetParam());
    std::vector<uint8_t> buf(100, 1);
    if (rank == 0) {
      try {
        wait_all(*link.transport, {link.transport->post_send(1, buf.data(), 64, 5)});
      } catch (const Error& e) {
        // A rendezvous transport (nvlink) completes a send only once it is
        // matched: there the sender learns of the mismatch too.
        EXPECT_EQ(e.code(), Code::kInvalidUsage) << e.what();
        EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
      }
      usleep(500000);
      return;
    }
    try {
      // The error may come from the post itself: a transport may take a
      // message that is already there as the receive is posted.
      link.transport->post_recv(0, buf.data(), 100, 5);
      wait_all(*link.transport, {});
      std::vector<transport::RequestId> done;
      for (int i = 0; i < 200; ++i) link.transport->poll(done, 20);
      ADD_FAILURE() << "a 64-byte message completed a 100-byte receive";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kInvalidUsage);
      EXPECT_NE(std::string(e.what()).find("64 bytes"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
    }
    EXPECT_EQ(buf[99], 1) << "nothing may be written past what was checked";
  });
}

TEST_P(Conformance, APeerThatExitsIsARemoteErrorNamingIt) {
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& id) {
    Link link = connect_pair(rank, id, GetParam());
    if (rank == 1) leave_now();  // leaves without a word
    std::vector<uint8_t> buf(10);
    link.transport->post_recv(1, buf.data(), buf.size(), 1);
    try {
      std::vector<transport::RequestId> done;
      for (int i = 0; i < 500; ++i) link.transport->poll(done, 20);
      ADD_FAILURE() << "no error after the peer exited";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::kRemote);
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
    }
  });
}

// Closing (abort) mid-transfer: the aborting rank's calls fail at once, and
// its peer's pending transfer becomes an error, not a hang.
TEST_P(Conformance, AbortMidTransferFailsBothEnds) {
  run_ranks(
      2,
      [&](int rank, int, const coll_unique_id_t& id) {
        Link link = connect_pair(rank, id, GetParam());
        std::vector<uint8_t> buf(64 << 20, 7);
        if (rank == 0) {
          link.transport->post_send(1, buf.data(), buf.size(), 1);
          try {
            std::vector<transport::RequestId> done;
            for (int i = 0; i < 400; ++i) {
              link.transport->poll(done, 25);
              // A single-copy receive posted after our send takes it at once:
              // send again, so that a send is in flight when the peer aborts.
              if (!done.empty()) link.transport->post_send(1, buf.data(), buf.size(), 2), done.clear();
            }
            ADD_FAILURE() << "the send survived the receiver's abort";
          } catch (const Error& e) {
            EXPECT_EQ(e.code(), Code::kRemote) << e.what();
            EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
          }
          return;
        }
        link.transport->post_recv(0, buf.data(), buf.size(), 1);
        std::vector<transport::RequestId> done;
        // Not taking anything: the sender fills what buffering the transport
        // has and is left mid-transfer. (Polling here could take all 64 MiB
        // before the abort when the sender keeps up, and the test would race.)
        usleep(300000);
        link.transport->close(nullptr);
        EXPECT_THROW(link.transport->poll(done, 5), Error);
        usleep(3000000);  // stay alive: the peer must see the abort, not our exit
      },
      RankOptions{.limit_s = 60});
}

// Many small messages both ways at once, fewer than the transport's buffering.
TEST_P(Conformance, ThousandsOfTinyMessagesBothWays) {
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& id) {
    Link link = connect_pair(rank, id, GetParam());
    const int kCount = 5000;
    std::vector<uint32_t> out(kCount), in(kCount, 0);
    std::vector<transport::RequestId> ids;
    for (int k = 0; k < kCount; ++k) {
      out[static_cast<size_t>(k)] = static_cast<uint32_t>(k * 7 + rank);
      ids.push_back(link.transport->post_send(1 - rank, &out[static_cast<size_t>(k)], 4, static_cast<uint64_t>(k)));
      ids.push_back(link.transport->post_recv(1 - rank, &in[static_cast<size_t>(k)], 4, static_cast<uint64_t>(k)));
    }
    wait_all(*link.transport, ids, 60000);
    for (int k = 0; k < kCount; ++k) ASSERT_EQ(in[static_cast<size_t>(k)], static_cast<uint32_t>(k * 7 + 1 - rank));
  });
}

// A ring of two names its one peer as both neighbours: connect({p, p})
// connects the pair once, on every transport.
TEST_P(Conformance, APeerNamedTwiceIsConnectedOnce) {
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& raw) {
    auto id = bootstrap::UniqueId::decode(raw);
    auto deadline = Deadline::after_ms(20000);
    bootstrap::StoreClient store(id, deadline, bootstrap::kStoreClientIdentity);
    StorePairExchange pairs(store, "", rank, 20000);
    auto t = make_transport(GetParam(), rank, 2, id);
    store.set("addr/" + std::to_string(rank), t->local_address(), deadline);
    std::vector<std::string> addresses = {store.get("addr/0", deadline, ""), store.get("addr/1", deadline, "")};
    t->connect({1 - rank, 1 - rank}, addresses, pairs, deadline);
    t->connect({1 - rank}, addresses, pairs, deadline);  // and again: nothing to do
    int value = rank + 20, got = 0;
    wait_all(*t, {t->post_send(1 - rank, &value, sizeof(value), 3), t->post_recv(1 - rank, &got, sizeof(got), 3)});
    EXPECT_EQ(got, 21 - rank);
  });
}

// Registration, per-pair data and one-sided operations (transport v2):
// each rank registers a window and hands its handle over; rank 1 puts into
// rank 0's window with a notification, rank 0 sees the bytes once notified
// and answers with a notification of its own; rank 1 then gets the bytes
// rank 0 wrote into its window, at an offset. Sizes 0, 1, a prime and
// 1 MiB + 1; out of bounds is an error before anything moves.
TEST_P(Conformance, PutsWithNotificationAndGetsReachRegisteredMemory) {
  run_ranks(2, [&](int rank, int, const coll_unique_id_t& raw) {
    Link link = connect_pair(rank, raw, GetParam());
    transport::Transport& t = *link.transport;
    const int peer = 1 - rank;
    const size_t window_bytes = (1 << 20) + 64;
    std::vector<uint8_t> window(window_bytes, 0);
    const transport::Registration* mine = t.register_memory(window.data(), window.size(), transport::MemoryKind::kHost);
    ASSERT_NE(mine, nullptr) << GetParam() << " registers no host memory";
    EXPECT_EQ(t.register_memory(window.data(), window.size(), transport::MemoryKind::kHost), mine)
        << "the same range is the same registration";
    t.deregister(mine);  // one count left
    EXPECT_EQ(t.register_memory(nullptr, 0, transport::MemoryKind::kCuda), nullptr) << "no device memory here";
    const transport::RemoteMemory remote = swap_registrations(link, rank, *mine);  // windows of one size
    uint64_t value = 0;
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4099}, size_t{(1 << 20) + 1}}) {
      const size_t offset = bytes % 61;
      std::vector<uint8_t> out(bytes), in(bytes);
      for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(i * 7 + bytes + rank);
      if (rank == 1) {
        const uint64_t note = 1000 + bytes;
        wait_all(t, {t.post_put(peer, transport::Buffer{out.data(), bytes}, remote, offset, &note)});
        wait_all(t, {t.post_notification(peer, &value)});
        EXPECT_EQ(value, 2000 + bytes);
        wait_all(t, {t.post_get(peer, transport::Buffer{in.data(), bytes}, remote, offset + 3)});
        for (size_t i = 0; i < bytes; ++i)
          ASSERT_EQ(in[i], static_cast<uint8_t>(i * 7 + bytes + 1 + 5)) << "get of " << bytes << ", byte " << i;
        wait_all(t, {t.post_put(peer, transport::Buffer{nullptr, 0}, remote, 0, &note)});  // done with the window
      } else {
        wait_all(t, {t.post_notification(peer, &value)});
        EXPECT_EQ(value, 1000 + bytes);
        for (size_t i = 0; i < bytes; ++i)
          ASSERT_EQ(window[offset + i], static_cast<uint8_t>(i * 7 + bytes + 1))
              << "put of " << bytes << ", byte " << i;
        for (size_t i = 0; i < bytes; ++i) window[offset + 3 + i] = static_cast<uint8_t>(i * 7 + bytes + 1 + 5);
        const uint64_t note = 2000 + bytes;
        // Rank 0 keeps polling (its wait) while rank 1's get is served.
        wait_all(
            t, {t.post_put(peer, transport::Buffer{nullptr, 0}, remote, 0, &note), t.post_notification(peer, &value)});
      }
    }
    uint8_t one = 0;
    EXPECT_THROW(t.post_put(peer, transport::Buffer{&one, 1}, remote, window_bytes, nullptr), Error);
    EXPECT_THROW(t.post_get(peer, transport::Buffer{window.data(), 64}, remote, window_bytes - 63), Error);
    // Messages still flow after one-sided traffic, in order.
    int mine_v = rank + 40, got = 0;
    wait_all(t, {t.post_send(peer, &mine_v, sizeof(mine_v), 5), t.post_recv(peer, &got, sizeof(got), 5)});
    EXPECT_EQ(got, peer + 40);
    t.deregister(mine);
    EXPECT_THROW(t.deregister(mine), Error) << "released twice";
  });
}

INSTANTIATE_TEST_SUITE_P(Transports, Conformance, ::testing::ValuesIn(kTransportsUnderTest),
                         [](const auto& info) { return std::string(info.param); });

// A stranger connects to rank 0's transport port before rank 1 does: it must
// be refused, and rank 1 still gets through.
TEST(TcpTransport, AStrangerOnTheTransportPortIsRefused) {
  run_ranks(3, [](int rank, int, const coll_unique_id_t& raw) {
    auto id = bootstrap::UniqueId::decode(raw);
    auto deadline = Deadline::after_ms(20000);
    bootstrap::StoreClient store(id, deadline, bootstrap::kStoreClientIdentity);
    if (rank == 2) {
      net::Fd fd = net::connect_to(tcp_socket_of(store.get("addr/0", deadline, "rank 0")), deadline, "rank 0");
      std::string junk(100, 'z');
      net::send_all(fd.get(), junk.data(), junk.size(), deadline, "rank 0");
      store.set("stranger-done", "1", deadline);
      usleep(500000);
      return;
    }
    auto t = make_transport("tcp", rank, 2, id);
    StorePairExchange pairs(store, "", rank, 20000);
    store.set("addr/" + std::to_string(rank), t->local_address(), deadline);
    std::vector<std::string> addresses = {store.get("addr/0", deadline, ""), store.get("addr/1", deadline, "")};
    if (rank == 1) store.get("stranger-done", deadline, "the stranger");
    t->connect({1 - rank}, addresses, pairs, deadline);
    int value = rank + 10, got = 0;
    wait_all(*t, {t->post_send(1 - rank, &value, sizeof(value), 9), t->post_recv(1 - rank, &got, sizeof(got), 9)});
    EXPECT_EQ(got, 11 - rank);
  });
}

// The pair's token: a connection that proves the job secret but not the
// token rank 0 handed rank 1 through the pair exchange (one of another
// communicator's pairs, say) is refused; rank 1's own then gets in.
TEST(TcpTransport, AConnectionWithoutThePairsTokenIsRefused) {
  run_ranks(2, [](int rank, int, const coll_unique_id_t& raw) {
    auto id = bootstrap::UniqueId::decode(raw);
    auto deadline = Deadline::after_ms(20000);
    bootstrap::StoreClient store(id, deadline, bootstrap::kStoreClientIdentity);
    StorePairExchange pairs(store, "", rank, 20000);
    auto t = make_transport("tcp", rank, 2, id);
    store.set("addr/" + std::to_string(rank), t->local_address(), deadline);
    std::vector<std::string> addresses = {store.get("addr/0", deadline, ""), store.get("addr/1", deadline, "")};
    if (rank == 1) {
      const std::string token = store.get("pair/0>1", deadline, "rank 0's token for the pair");
      EXPECT_EQ(token.size(), 32u);
      net::Fd fd = net::connect_to(tcp_socket_of(addresses[0]), deadline, "rank 0");
      EXPECT_THROW(auth::client_handshake(fd.get(), id.secret, "tcp>0/" + std::string(32, '0'), 1, deadline, "rank 0"),
                   Error);
    }
    t->connect({1 - rank}, addresses, pairs, deadline);
    int value = rank + 30, got = 0;
    wait_all(*t, {t->post_send(1 - rank, &value, sizeof(value), 4), t->post_recv(1 - rank, &got, sizeof(got), 4)});
    EXPECT_EQ(got, 31 - rank);
  });
}

// Rank 0 accepts while waiting for rank 2 only; rank 1 knocks first and
// answers our greeting only after rank 0 has returned with rank 2. Its
// handshake must go on (poll, the next connect), not be dropped with the
// accept loop that started it.
TEST(TcpTransport, AHandshakeUnderWayOutlivesTheAcceptThatStartedIt) {
  run_ranks(3, [](int rank, int, const coll_unique_id_t& raw) {
    auto id = bootstrap::UniqueId::decode(raw);
    auto deadline = Deadline::after_ms(20000);
    bootstrap::StoreClient store(id, deadline, bootstrap::kStoreClientIdentity);
    if (rank == 1) {
      net::Fd fd = net::connect_to(tcp_socket_of(store.get("addr/0", deadline, "rank 0")), deadline, "rank 0");
      store.set("one-knocked", "1", deadline);
      store.get("zero-has-two", deadline, "rank 0 to connect rank 2");
      const std::string token = store.get("pair/0>1", deadline, "rank 0's token for the pair");
      auth::client_handshake(fd.get(), id.secret, "tcp>0/" + token, 1, deadline, "rank 0");  // throws if dropped
      return;
    }
    auto t = make_transport("tcp", rank, 3, id);
    StorePairExchange pairs(store, "", rank, 20000);
    store.set("addr/" + std::to_string(rank), t->local_address(), deadline);
    std::vector<std::string> addresses = {store.get("addr/0", deadline, ""), "unused",
                                          store.get("addr/2", deadline, "")};
    if (rank == 2) {
      store.get("one-knocked", deadline, "rank 1 to knock");
      t->connect({0}, addresses, pairs, deadline);
      return;
    }
    t->connect({2}, addresses, pairs, deadline);
    store.set("zero-has-two", "1", deadline);
    t->connect({1}, addresses, pairs, deadline);  // rank 1's handshake, begun in the connect above, ends here
  });
}

// Strangers on every rank's TCP port while three ranks run collectives
// (from their first connections on): five connections held open that say
// nothing, then garbage, a truncated greeting, or a greeting made with the
// wrong secret, again and again. Every result stays exact, and the run
// ends within 10 s: the silent ones may not hold the ranks behind them in
// the accept queue for their 2 s each.
TEST(TcpTransport, StrangersDuringARunChangeNothing) {
  run_ranks(
      4,
      [](int rank, int, const coll_unique_id_t& raw) {
        auto id = bootstrap::UniqueId::decode(raw);
        if (rank < 3) {
          coll_comm_t comm = init_or_die(rank, 3, raw);
          ASSERT_NE(comm, nullptr);
          const auto start = std::chrono::steady_clock::now();
          for (int64_t i = 1; i <= 40; ++i) {
            int64_t x = (rank + 1) * i, mine = i * rank, everyone[3] = {-1, -1, -1};
            ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS)
                << coll_get_last_error(comm);
            ASSERT_EQ(x, 6 * i);
            ASSERT_EQ(coll_allgather(&mine, everyone, 1, COLL_INT64, comm, nullptr), COLL_SUCCESS);
            for (int64_t r = 0; r < 3; ++r) ASSERT_EQ(everyone[r], i * r);
          }
          EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10.0);
          if (rank == 0) {
            bootstrap::StoreClient store(id, Deadline::after_ms(5000), bootstrap::kStoreClientIdentity);
            store.set("run-done", "1", Deadline::after_ms(5000));
          }
          coll_comm_destroy(comm);
          return;
        }
        // The stranger learns the ports from the job's store (a real one
        // would scan for them) and knows no secret.
        auto deadline = Deadline::after_ms(20000);
        bootstrap::StoreClient store(id, deadline, bootstrap::kStoreClientIdentity);
        std::vector<net::SockAddr> ports;
        for (int r = 0; r < 3; ++r)
          ports.push_back(tcp_socket_of(store.get("addr/" + std::to_string(r), deadline, "a rank's address")));
        std::vector<net::Fd> silent;
        for (int k = 0; k < 5; ++k)  // queued ahead of the ranks: 5 x 2 s each, were they heard in turn
          for (const auto& port : ports) silent.push_back(net::connect_to(port, deadline, "a rank"));
        const auth::Secret wrong = auth::random_secret();
        auto run_done = [&] {
          try {
            return store.add("run-done", 0, deadline) > 0;
          } catch (const Error&) {
            return true;  // the ranks are gone, and their store with them
          }
        };
        for (int round = 0; !run_done() && !deadline.expired(); ++round) {
          const net::SockAddr& port = ports[static_cast<size_t>(round) % ports.size()];
          try {
            net::Fd fd = net::connect_to(port, Deadline::after_ms(1000), "a rank");
            if (round % 3 == 0) {
              std::string junk(4096, static_cast<char>(round));
              net::send_all(fd.get(), junk.data(), junk.size(), Deadline::after_ms(1000), "a rank");
            } else if (round % 3 == 1) {
              net::send_all(fd.get(), "COLL", 4, Deadline::after_ms(1000), "a rank");
            } else {
              auth::client_handshake(fd.get(), wrong, "tcp>0", 1, Deadline::after_ms(1000), "a rank");
              ADD_FAILURE() << "a handshake with the wrong secret was accepted";
            }
          } catch (const Error&) {
            // refused, dropped or timed out: what a stranger should get
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        EXPECT_FALSE(deadline.expired()) << "the run did not finish while strangers knocked";
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "20000"}, {"COLL_TRANSPORTS", "tcp"}}});
}

}  // namespace
}  // namespace coll::testing
