// Settings registry and interface choice.
#include "base/config.h"
#include "base/error.h"
#include "base/socket.h"
#include "transport/tcp/pair.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace coll {
namespace {

TEST(Config, DefaultsSuffixesAndErrorsNameTheVariable) {
  unsetenv("COLL_TIMEOUT_MS");
  EXPECT_EQ(config::get_int("COLL_TIMEOUT_MS"), 600000);
  setenv("COLL_CHUNK_BYTES", "64K", 1);
  EXPECT_EQ(config::get_int("COLL_CHUNK_BYTES"), 65536);
  setenv("COLL_CHUNK_BYTES", "1M", 1);
  EXPECT_EQ(config::get_int("COLL_CHUNK_BYTES"), 1 << 20);
  setenv("COLL_CHUNK_BYTES", "12Q", 1);
  try {
    config::get_int("COLL_CHUNK_BYTES");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("COLL_CHUNK_BYTES"), std::string::npos);
  }
  unsetenv("COLL_CHUNK_BYTES");
  EXPECT_THROW(config::get_string("COLL_NOT_A_SETTING"), Error);
  for (const auto& s : config::settings()) {
    EXPECT_EQ(std::string(s.name).rfind("COLL_", 0), 0u) << s.name;
    EXPECT_NE(std::string(s.doc), "") << s.name;
  }
}

TEST(Socket, InterfaceChoiceFollowsCollSocketIfname) {
  setenv("COLL_SOCKET_IFNAME", "lo", 1);
  std::string name;
  net::SockAddr a = net::choose_interface(&name);
  EXPECT_EQ(name, "lo");
  EXPECT_TRUE(a.is_loopback());
  setenv("COLL_SOCKET_IFNAME", "=no-such-interface", 1);
  EXPECT_THROW(net::choose_interface(&name), Error);
  setenv("COLL_SOCKET_IFNAME", "^lo", 1);
  try {
    net::choose_interface(&name);
    EXPECT_NE(name, "lo");
  } catch (const Error&) {
    // a machine with only loopback: nothing else to choose, which is an error
  }
  unsetenv("COLL_SOCKET_IFNAME");
}

TEST(Socket, AddressesParseAndPrint) {
  EXPECT_EQ(net::SockAddr::parse("127.0.0.1:80", "t").to_string(), "127.0.0.1:80");
  EXPECT_EQ(net::SockAddr::parse("[::1]:81", "t").to_string(), "[::1]:81");
  EXPECT_THROW(net::SockAddr::parse("no-port", "t"), Error);
  EXPECT_THROW(net::SockAddr::parse("[::1:81", "t"), Error);
}

// A listener that never accepts still takes connections (the kernel
// queues them): only a closed port refuses. connect_to waits for a closed
// port to open unless told that a refusal is final.
TEST(Socket, OnlyAClosedPortRefuses) {
  net::SockAddr bound;
  net::Fd listener = net::listen_on(net::SockAddr::parse("127.0.0.1:0", "test"), &bound, "test");
  EXPECT_FALSE(net::refuses_connections(bound, 200));
  EXPECT_TRUE(net::connect_to(bound, Deadline::after_ms(1000), "listener", net::Refused::kFail).valid());
  listener.reset();
  EXPECT_TRUE(net::refuses_connections(bound, 200));
  try {
    net::connect_to(bound, Deadline::after_ms(10000), "closed port", net::Refused::kFail);
    FAIL() << "a closed port was connected to";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kRemote);
    EXPECT_NE(std::string(e.what()).find("closed port refused"), std::string::npos) << e.what();
  }
  try {
    net::connect_to(bound, Deadline::after_ms(50), "closed port");
    FAIL() << "a closed port was connected to";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kTimeout) << e.what();
  }
}

TEST(TcpFrame, HeadersAreChecked) {
  using transport::tcp::check_frame;
  using transport::tcp::kFrameMagic;
  EXPECT_EQ(check_frame({kFrameMagic, transport::tcp::kFrameData, 5, 100}), "");
  EXPECT_NE(check_frame({0, 0, 5, 100}).find("magic"), std::string::npos);
  EXPECT_NE(check_frame({kFrameMagic, 7, 5, 100}).find("kind 7"), std::string::npos);
}

TEST(Transport, AMessageMustAnswerItsReceive) {
  EXPECT_NO_THROW(transport::check_match_or_fail(0, 1, "rank 1", 5, 100, 5, 100));
  try {
    transport::check_match_or_fail(0, 1, "rank 1", 6, 101, 5, 100);
    FAIL() << "no mismatch";
  } catch (const transport::Mismatch& m) {
    EXPECT_EQ(m.code(), Code::kInvalidUsage);
    EXPECT_EQ(m.peer, 1);
    EXPECT_EQ(m.got_tag, 6u);
    EXPECT_EQ(m.want_tag, 5u);
    EXPECT_NE(std::string(m.what()).find("101 bytes"), std::string::npos) << m.what();
  }
}

}  // namespace
}  // namespace coll
