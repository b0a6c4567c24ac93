// The plot of collsim's predictions against coll_perf's measurements
// (scripts/sim-check.sh's check.csv): what it reads, what it counts, what
// it draws, and the errors of a file that is not one.
#include "base/error.h"
#include "sim/check_plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace coll::sim {
namespace {

const std::string kHeader = "where,ranks,algorithm,bytes,predicted_us,measured_us,error\n";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The element whose hover text begins with `tip`: "circle", "rect", ...
std::string element_named(const std::string& svg, const std::string& tip) {
  const size_t at = svg.find("<title>" + tip);
  if (at == std::string::npos || at == 0) return "";
  const size_t open = svg.rfind('<', at - 1);
  return svg.substr(open + 1, svg.find(' ', open) - open - 1);
}

std::string error_of(const std::string& text) {
  try {
    parse_check(text, "check.csv");
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(CheckPlot, ReadsTheRunsAndCountsThoseWithin20Percent) {
  const std::vector<CheckPoint> points = parse_check(kHeader +
                                                         "shm,2,ring,65536,10.0,8.0,+0.250\n"
                                                         "shm,2,ring,1048576,120.0,100.0,+0.200\n"
                                                         "shm,8,tree,67108864,75.0,100.0,-0.250\n"
                                                         "emulated,4,hierarchical,1024,1.0,1.0,+0.000\n",
                                                     "check.csv");
  ASSERT_EQ(points.size(), 4u);
  EXPECT_EQ(points[2].where, "shm");
  EXPECT_EQ(points[2].ranks, 8);
  EXPECT_EQ(points[2].algorithm, "tree");
  EXPECT_EQ(points[2].bytes, size_t{64} << 20);
  EXPECT_EQ(points[2].predicted_us, 75.0);
  EXPECT_EQ(points[2].measured_us, 100.0);
  EXPECT_EQ(points[2].error, -0.25);
  EXPECT_EQ(points[2].again_us, 0);
  // The file's own error decides, as sim-check counts: +0.200 is within.
  EXPECT_FALSE(within_20_percent(points[0]));
  EXPECT_TRUE(within_20_percent(points[1]));
  EXPECT_FALSE(within_20_percent(points[2]));
  EXPECT_TRUE(within_20_percent(points[3]));
  EXPECT_EQ(count_within_20_percent(points), 2u);

  const std::string svg = check_svg(points, "t");
  EXPECT_NE(svg.find("t: 2 of 4 within 20%"), std::string::npos);
  // A panel for each place and rank count, in the file's order (its title, not a point's).
  const size_t two = svg.find(">shm, 2 ranks</text>"), eight = svg.find(">shm, 8 ranks</text>"),
               emulated = svg.find(">emulated, 4 ranks</text>");
  ASSERT_NE(emulated, std::string::npos);
  EXPECT_LT(two, eight);
  EXPECT_LT(eight, emulated);
  EXPECT_EQ(count(svg, " ranks</text>"), 3u);
  // A point for each run, named on hover; a miss is a square; no second sweep, no grey line.
  EXPECT_EQ(count(svg, "<title>"), 4u);
  EXPECT_NE(svg.find("<title>shm, 8 ranks, tree, 64 MiB: predicted 75.0 us, measured 100.0 us (-25%)</title>"),
            std::string::npos);
  EXPECT_EQ(element_named(svg, "shm, 8 ranks, tree"), "rect");
  EXPECT_EQ(element_named(svg, "shm, 2 ranks, ring, 64 KiB"), "rect");
  EXPECT_EQ(element_named(svg, "shm, 2 ranks, ring, 1 MiB"), "circle");
  EXPECT_EQ(element_named(svg, "emulated, 4 ranks"), "circle");
  EXPECT_EQ(count(svg, "stroke=\"#999\""), 0u);
}

TEST(CheckPlot, ASecondSweepIsALineFromTheFirst) {
  const std::vector<CheckPoint> points = parse_check(
      "where,ranks,algorithm,bytes,predicted_us,measured_us,error,again_us,again_error\n"
      "shm,4,ring,262144,80.0,100.0,-0.200,80.0,-0.200\n",
      "check.csv");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].again_us, 80.0);
  const std::string svg = check_svg(points, "t");
  EXPECT_EQ(count(svg, "stroke=\"#999\""), 1u);
  EXPECT_NE(svg.find(", again 80.0 us</title>"), std::string::npos);
}

TEST(CheckPlot, WithoutTheErrorColumnItIsComputed) {
  const std::vector<CheckPoint> points =
      parse_check("where,ranks,algorithm,bytes,predicted_us,measured_us\nshm,2,ring,4,50,100\n", "c");
  ASSERT_EQ(points.size(), 1u);
  EXPECT_DOUBLE_EQ(points[0].error, -0.5);
}

TEST(CheckPlot, ColumnsAreFoundByName) {
  // A column the plot does not know, where error would be: the error is computed, not read from it.
  const std::vector<CheckPoint> points =
      parse_check("where,ranks,algorithm,bytes,predicted_us,measured_us,ratio\r\nshm,2,ring,4,50,100,1.25\r\n", "c");
  ASSERT_EQ(points.size(), 1u);  // and the line ends of Windows are read
  EXPECT_DOUBLE_EQ(points[0].error, -0.5);
  EXPECT_EQ(points[0].again_us, 0);
}

TEST(CheckPlot, TextFromTheFileCannotBreakTheSvg) {
  const std::string svg = check_svg(parse_check(kHeader + "a<b&\x01"
                                                          "c,2,ring,4,1.0,1.0,+0\n",
                                                "c"),
                                    "t");
  EXPECT_NE(svg.find("a&lt;b&amp;c, 2 ranks</text>"), std::string::npos);
  EXPECT_EQ(svg.find('\x01'), std::string::npos);
}

TEST(CheckPlot, AFileThatIsNotOneIsRefusedWithItsLine) {
  EXPECT_NE(error_of("ranks,bytes\n").find("check.csv:1: expected the header"), std::string::npos);
  EXPECT_NE(error_of("where,ranks,algorithm,bytes,predicted_us,measured_usX\n").find("check.csv:1: expected"),
            std::string::npos);
  EXPECT_NE(error_of("").find("check.csv:1: expected the header"), std::string::npos);
  EXPECT_NE(error_of(kHeader).find("check.csv: no runs after the header"), std::string::npos);
  EXPECT_NE(error_of(kHeader + "shm,2,ring,4,1.0\n").find("check.csv:2: expected"), std::string::npos);
  EXPECT_NE(error_of(kHeader + "shm,2,ring,4,1.0,0,+0\n").find("check.csv:2: expected"), std::string::npos);
  EXPECT_NE(error_of(kHeader + "shm,2,ring,4,1.0,2.0,+0\nshm,two,ring,4,1,1,0\n").find("check.csv:3: expected"),
            std::string::npos);
  EXPECT_NE(error_of(kHeader + "shm,2,ring,4,1.0,1.0,x\n").find("check.csv:2: expected"), std::string::npos);
  // Ranks and bytes whole and in range.
  EXPECT_NE(error_of(kHeader + "shm,2.5,ring,4,1.0,1.0,+0\n").find("check.csv:2: expected"), std::string::npos);
  EXPECT_NE(error_of(kHeader + "shm,2,ring,1e30,1.0,1.0,+0\n").find("check.csv:2: expected"), std::string::npos);
  EXPECT_NE(error_of(kHeader + "shm,1e10,ring,4,1.0,1.0,+0\n").find("check.csv:2: expected"), std::string::npos);
  EXPECT_EQ(error_of(kHeader + "shm,2,ring,4,1.0,1.0,+0\n\n"), "accepted");
}

}  // namespace
}  // namespace coll::sim
