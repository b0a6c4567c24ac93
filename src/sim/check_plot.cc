#include "sim/check_plot.h"

#include "base/error.h"
#include "sim/appendf.h"
#include "sim/svg_text.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace coll::sim {
namespace {

constexpr const char* kHeader = "where,ranks,algorithm,bytes,predicted_us,measured_us";

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::istringstream in(line);
  for (std::string f; std::getline(in, f, ',');) fields.push_back(f);
  return fields;
}

// A number that fills the whole field.
bool number(const std::string& field, double* out) {
  char* end = nullptr;
  *out = std::strtod(field.c_str(), &end);
  return !field.empty() && end == field.c_str() + field.size() && std::isfinite(*out);
}

// A point, a circle or (a miss) a square, centred on (x, y), named by `tip` on hover.
void marker(std::string& svg, bool square, double x, double y, const char* colour, const std::string& tip = "") {
  const double r = 4.5;
  if (square)
    appendf(svg, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%g\" height=\"%g\"", x - r, y - r, 2 * r, 2 * r);
  else
    appendf(svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%g\"", x, y, r);
  appendf(svg, " fill=\"%s\">", colour);
  if (!tip.empty()) appendf(svg, "<title>%s</title>", escaped(tip).c_str());
  svg += square ? "</rect>\n" : "</circle>\n";
}

// Where a value is in a list of them (one that is there).
template <typename T>
size_t index_of(const std::vector<T>& list, const T& v) {
  return static_cast<size_t>(std::find(list.begin(), list.end(), v) - list.begin());
}

// Where a value first appears in a list of them, adding it if it is new.
template <typename T>
size_t index_in(std::vector<T>& seen, const T& v) {
  auto it = std::find(seen.begin(), seen.end(), v);
  if (it != seen.end()) return static_cast<size_t>(it - seen.begin());
  seen.push_back(v);
  return seen.size() - 1;
}

constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
constexpr const char* kBand = "#e3f2e3";

// Where things go: a panel per place and rank count, in the file's order;
// in each, sizes across (log, the algorithms side by side) and the error up.
struct Layout {
  std::vector<std::pair<std::string, int>> panels;
  std::vector<std::string> algorithms;
  double s0 = 1e300, s1 = 0;             // log2 of the sizes, a step of room each side
  static constexpr double kLimit = 0.5;  // errors beyond ±50% sit on the edge, their number in the tip
  static constexpr double pw = 260, ph = 300, gap = 30, left = 60, top = 50, bottom = 60, right = 170;

  explicit Layout(const std::vector<CheckPoint>& points) {
    for (const CheckPoint& p : points) {
      index_in(panels, std::make_pair(p.where, p.ranks));
      index_in(algorithms, p.algorithm);
      s0 = std::min(s0, log_size(static_cast<double>(p.bytes)));
      s1 = std::max(s1, log_size(static_cast<double>(p.bytes)));
    }
    s0 -= 1, s1 += 1;
  }
  static double log_size(double bytes) { return std::log2(std::max(bytes, 1.0)); }
  double width() const { return left + static_cast<double>(panels.size()) * (pw + gap) - gap + right; }
  double height() const { return top + ph + bottom; }
  double panel_x(size_t k) const { return left + static_cast<double>(k) * (pw + gap); }
  double x(size_t panel, double log2_bytes) const { return panel_x(panel) + (log2_bytes - s0) / (s1 - s0) * pw; }
  double x(const CheckPoint& p) const {
    const size_t a = index_of(algorithms, p.algorithm);
    const double spread = (static_cast<double>(a) + 0.5) / static_cast<double>(algorithms.size()) - 0.5;
    return x(index_of(panels, std::make_pair(p.where, p.ranks)), log_size(static_cast<double>(p.bytes)) + 0.8 * spread);
  }
  double y(double error) const { return top + ph / 2 - std::clamp(error, -kLimit, kLimit) / kLimit * (ph / 2); }
};

// The panels: the band, the grid, the sizes, the frame and the name of each.
void draw_panels(std::string& svg, const Layout& l) {
  for (size_t k = 0; k < l.panels.size(); ++k) {
    const double x0 = l.panel_x(k);
    appendf(svg, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"%s\"/>\n", x0, l.y(0.2), l.pw,
            l.y(-0.2) - l.y(0.2), kBand);
    for (double e : {-0.5, -0.25, 0.0, 0.25, 0.5}) {
      appendf(svg, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\"/>\n", x0, l.y(e), x0 + l.pw, l.y(e),
              e == 0 ? "#7a7" : "#ddd");
      if (k == 0)
        appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\" font-size=\"10\">%+.0f%%</text>\n", x0 - 5,
                l.y(e) + 4, 100 * e);
    }
    // From the smallest size, a label every 16 times (every 4 on a short axis), none at the edges.
    for (double b = l.s0 + 1; b <= l.s1 - 1; b += l.s1 - l.s0 > 10 ? 4 : 2)
      appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n", l.x(k, b),
              l.top + l.ph + 15, size_label(std::pow(2, b)).c_str());
    appendf(svg, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"black\"/>\n", x0, l.top,
            l.pw, l.ph);
    appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s, %d ranks</text>\n", x0 + l.pw / 2, l.top - 8,
            escaped(l.panels[k].first).c_str(), l.panels[k].second);
  }
  appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">message size</text>\n",
          l.left + (l.width() - l.left - l.right) / 2, l.height() - 15);
  appendf(svg,
          "<text x=\"15\" y=\"%g\" transform=\"rotate(-90 15 %g)\" text-anchor=\"middle\">"
          "predicted / measured - 1</text>\n",
          l.top + l.ph / 2, l.top + l.ph / 2);
}

// Each run: a grey line to its error against the second sweep (how far the
// machine moved), then its point.
void draw_points(std::string& svg, const Layout& l, const std::vector<CheckPoint>& points) {
  for (const CheckPoint& p : points) {
    const double x = l.x(p);
    if (p.again_us > 0)
      appendf(svg, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-width=\"2\"/>\n", x,
              l.y(p.error), x, l.y(p.predicted_us / p.again_us - 1));
    std::string tip;
    appendf(tip, "%s, %d ranks, %s, %s: predicted %.1f us, measured %.1f us (%+.0f%%)", p.where.c_str(), p.ranks,
            p.algorithm.c_str(), size_label(static_cast<double>(p.bytes)).c_str(), p.predicted_us, p.measured_us,
            100 * p.error);
    if (p.again_us > 0) appendf(tip, ", again %.1f us", p.again_us);
    marker(svg, !within_20_percent(p), x, l.y(p.error), kColours[index_of(l.algorithms, p.algorithm) % 7], tip);
  }
}

// The colours, what a square and the band are, and the grey line where there is one.
void draw_legend(std::string& svg, const Layout& l, bool second_sweep) {
  const double lx = l.width() - l.right + 25;
  double ly = l.top + 10;
  for (size_t i = 0; i < l.algorithms.size(); ++i, ly += 18) {
    marker(svg, false, lx, ly - 4, kColours[i % 7]);
    appendf(svg, "<text x=\"%g\" y=\"%g\">%s</text>\n", lx + 12, ly, escaped(l.algorithms[i]).c_str());
  }
  ly += 8;
  marker(svg, true, lx, ly - 4, "#555");
  appendf(svg, "<text x=\"%g\" y=\"%g\">beyond 20%%</text>\n", lx + 12, ly);
  ly += 18;
  appendf(svg, "<rect x=\"%g\" y=\"%g\" width=\"10\" height=\"10\" fill=\"%s\"/>", lx - 5, ly - 9, kBand);
  appendf(svg, "<text x=\"%g\" y=\"%g\">within 20%%</text>\n", lx + 12, ly);
  ly += 18;
  appendf(svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\">beyond 50%%: on the edge</text>\n", lx - 5, ly);
  if (second_sweep)
    appendf(svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\">grey: to the second sweep</text>\n", lx - 5, ly + 16);
}

}  // namespace

std::vector<CheckPoint> parse_check(const std::string& text, const std::string& origin) {
  std::istringstream lines(text);
  std::string line;
  const auto next_line = [&] {
    if (!std::getline(lines, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written on Windows
    return true;
  };
  // The columns by name: the first six always; error and again_us where the header has them.
  const std::vector<std::string> want = split(kHeader);
  const std::vector<std::string> header = next_line() ? split(line) : std::vector<std::string>{};
  if (header.size() < want.size() || !std::equal(want.begin(), want.end(), header.begin()))
    fail(Code::kInvalidArgument, origin, ":1: expected the header '", kHeader,
         "...' that scripts/sim-check.sh writes, got '", line, "'");
  const auto column = [&](const char* name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? std::string::npos : static_cast<size_t>(it - header.begin());
  };
  const size_t error_at = column("error"), again_at = column("again_us");
  std::vector<CheckPoint> points;
  for (int number_of_line = 2; next_line(); ++number_of_line) {
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::vector<std::string> f = split(line);
    const auto field = [&](size_t at, double* out) { return at < f.size() && number(f[at], out); };
    CheckPoint p;
    double ranks = 0, bytes = 0;
    // Whole ranks and bytes in range, times above 0.
    const bool ok = f.size() >= want.size() && field(1, &ranks) && ranks >= 1 && ranks <= 1e9 &&
                    ranks == std::floor(ranks) && field(3, &bytes) && bytes >= 0 && bytes <= 1e18 &&
                    bytes == std::floor(bytes) && field(4, &p.predicted_us) && p.predicted_us > 0 &&
                    field(5, &p.measured_us) && p.measured_us > 0 &&
                    (error_at == std::string::npos || field(error_at, &p.error)) &&
                    (again_at == std::string::npos || (field(again_at, &p.again_us) && p.again_us > 0));
    if (!ok)
      fail(Code::kInvalidArgument, origin, ":", number_of_line,
           ": expected a run in the header's columns (whole ranks and bytes, times above 0), got '", line, "'");
    p.where = f[0];
    p.ranks = static_cast<int>(ranks);
    p.algorithm = f[2];
    p.bytes = static_cast<size_t>(bytes);
    if (error_at == std::string::npos) p.error = p.predicted_us / p.measured_us - 1;
    points.push_back(p);
  }
  if (points.empty()) fail(Code::kInvalidArgument, origin, ": no runs after the header: nothing to plot");
  return points;
}

bool within_20_percent(const CheckPoint& p) { return std::abs(p.error) <= 0.2; }

size_t count_within_20_percent(const std::vector<CheckPoint>& points) {
  return static_cast<size_t>(std::count_if(points.begin(), points.end(), within_20_percent));
}

std::string check_svg(const std::vector<CheckPoint>& points, const std::string& title) {
  const Layout l(points);
  std::string svg;
  appendf(svg,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
          "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          l.width(), l.height());
  appendf(svg, "<text x=\"%g\" y=\"22\" font-size=\"14\">%s: %zu of %zu within 20%%</text>\n", l.left,
          escaped(title).c_str(), count_within_20_percent(points), points.size());
  draw_panels(svg, l);
  draw_points(svg, l, points);
  draw_legend(svg, l, std::any_of(points.begin(), points.end(), [](const CheckPoint& p) { return p.again_us > 0; }));
  svg += "</svg>\n";
  return svg;
}

}  // namespace coll::sim
