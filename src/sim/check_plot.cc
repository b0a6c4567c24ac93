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

// A point: a circle (shape 0), a square (1), a triangle or a diamond, centred on (x, y), named by
// `tip` on hover.
void marker(std::string& svg, size_t shape, double x, double y, const char* colour, bool hollow,
            const std::string& tip = "") {
  const double r = 4.5;
  const char* element = shape % 4 == 0 ? "circle" : shape % 4 == 1 ? "rect" : "polygon";
  if (shape % 4 == 0)
    appendf(svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%g\"", x, y, r);
  else if (shape % 4 == 1)
    appendf(svg, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%g\" height=\"%g\"", x - r, y - r, 2 * r, 2 * r);
  else if (shape % 4 == 2)
    appendf(svg, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x, y - r - 1, x + r + 1, y + r, x - r - 1, y + r);
  else
    appendf(svg, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\"", x, y - r - 1, x + r + 1, y, x,
            y + r + 1, x - r - 1, y);
  appendf(svg, " fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\">", hollow ? "white" : colour, colour);
  if (!tip.empty()) appendf(svg, "<title>%s</title>", escaped(tip).c_str());
  appendf(svg, "</%s>\n", element);
}

// Where a value first appears in a list of them.
template <typename T>
size_t index_in(std::vector<T>& seen, const T& v) {
  auto it = std::find(seen.begin(), seen.end(), v);
  if (it != seen.end()) return static_cast<size_t>(it - seen.begin());
  seen.push_back(v);
  return seen.size() - 1;
}

}  // namespace

std::vector<CheckPoint> parse_check(const std::string& text, const std::string& origin) {
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line.rfind(kHeader, 0) != 0)
    fail(Code::kInvalidArgument, origin, ":1: expected the header '", kHeader,
         "...' that scripts/sim-check.sh writes, got '", line, "'");
  std::vector<CheckPoint> points;
  for (int number_of_line = 2; std::getline(lines, line); ++number_of_line) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::vector<std::string> f = split(line);
    CheckPoint p;
    double ranks = 0, bytes = 0;
    const bool ok = f.size() >= 6 && number(f[1], &ranks) && ranks >= 1 && number(f[3], &bytes) && bytes >= 0 &&
                    number(f[4], &p.predicted_us) && p.predicted_us > 0 && number(f[5], &p.measured_us) &&
                    p.measured_us > 0 && (f.size() < 7 || number(f[6], &p.error)) &&
                    (f.size() < 8 || (number(f[7], &p.again_us) && p.again_us > 0));
    if (!ok)
      fail(Code::kInvalidArgument, origin, ":", number_of_line,
           ": expected 'where,ranks,algorithm,bytes,predicted_us,measured_us[,error[,again_us,...]]' with times "
           "above 0, got '",
           line, "'");
    p.where = f[0];
    p.ranks = static_cast<int>(ranks);
    p.algorithm = f[2];
    p.bytes = static_cast<size_t>(bytes);
    if (f.size() < 7) p.error = p.predicted_us / p.measured_us - 1;
    points.push_back(p);
  }
  if (points.empty()) fail(Code::kInvalidArgument, origin, ": no runs after the header: nothing to plot");
  return points;
}

bool within_20_percent(const CheckPoint& p) { return std::abs(p.error) <= 0.2; }

std::string check_svg(const std::vector<CheckPoint>& points, const std::string& title) {
  // A panel per place and rank count, in the file's order; sizes across each (log), the error up.
  std::vector<std::pair<std::string, int>> panels;
  std::vector<std::string> algorithms;
  double s0 = 1e300, s1 = 0;
  for (const CheckPoint& p : points) {
    index_in(panels, std::make_pair(p.where, p.ranks));
    index_in(algorithms, p.algorithm);
    s0 = std::min(s0, std::log2(std::max<double>(static_cast<double>(p.bytes), 1)));
    s1 = std::max(s1, std::log2(std::max<double>(static_cast<double>(p.bytes), 1)));
  }
  s0 -= 1, s1 += 1;          // room for the algorithms side by side
  const double limit = 0.5;  // errors beyond ±50% sit on the edge, their number in the tip
  const double pw = 260, ph = 300, gap = 30, left = 60, top = 50, bottom = 60, right = 170;
  const double w = left + static_cast<double>(panels.size()) * (pw + gap) - gap + right, h = top + ph + bottom;
  auto X = [&](size_t panel, double bytes, size_t algorithm) {
    const double spread = (static_cast<double>(algorithm) + 0.5) / static_cast<double>(algorithms.size()) - 0.5;
    return left + static_cast<double>(panel) * (pw + gap) +
           (std::log2(std::max(bytes, 1.0)) + 0.8 * spread - s0) / (s1 - s0) * pw;
  };
  auto Y = [&](double error) { return top + ph / 2 - std::clamp(error, -limit, limit) / limit * (ph / 2); };

  std::string svg;
  appendf(svg,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
          "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          w, h);
  const size_t within = static_cast<size_t>(std::count_if(points.begin(), points.end(), within_20_percent));
  appendf(svg, "<text x=\"%g\" y=\"22\" font-size=\"14\">%s: %zu of %zu within 20%%</text>\n", left,
          escaped(title).c_str(), within, points.size());
  appendf(svg,
          "<text x=\"15\" y=\"%g\" transform=\"rotate(-90 15 %g)\" text-anchor=\"middle\">"
          "predicted / measured - 1</text>\n",
          top + ph / 2, top + ph / 2);
  for (size_t k = 0; k < panels.size(); ++k) {
    const double x0 = left + static_cast<double>(k) * (pw + gap);
    appendf(svg, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"#e3f2e3\"/>\n", x0, Y(0.2), pw,
            Y(-0.2) - Y(0.2));
    for (double e : {-0.5, -0.25, 0.0, 0.25, 0.5}) {
      appendf(svg, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"%s\"/>\n", x0, Y(e), x0 + pw, Y(e),
              e == 0 ? "#7a7" : "#ddd");
      if (k == 0)
        appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\" font-size=\"10\">%+.0f%%</text>\n", x0 - 5, Y(e) + 4,
                100 * e);
    }
    // From the smallest size, a label every 16 times (every 4 on a short axis), none at the edges.
    for (double b = s0 + 1; b <= s1 - 1; b += s1 - s0 > 10 ? 4 : 2)
      appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n",
              left + static_cast<double>(k) * (pw + gap) + (b - s0) / (s1 - s0) * pw, top + ph + 15,
              size_label(std::pow(2, b)).c_str());
    appendf(svg, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"black\"/>\n", x0, top, pw,
            ph);
    appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">%s, %d ranks</text>\n", x0 + pw / 2, top - 8,
            escaped(panels[k].first).c_str(), panels[k].second);
  }
  appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">message size</text>\n", left + (w - left - right) / 2,
          h - 15);

  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
  for (const CheckPoint& p : points) {
    const size_t panel = index_in(panels, std::make_pair(p.where, p.ranks)), a = index_in(algorithms, p.algorithm);
    const double x = X(panel, static_cast<double>(p.bytes), a);
    if (p.again_us > 0)  // the prediction against the second sweep: how far the machine moved
      appendf(svg, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-width=\"2\"/>\n", x,
              Y(p.error), x, Y(p.predicted_us / p.again_us - 1));
    std::string tip;
    appendf(tip, "%s, %d ranks, %s, %s: predicted %.1f us, measured %.1f us (%+.0f%%)", p.where.c_str(), p.ranks,
            p.algorithm.c_str(), size_label(static_cast<double>(p.bytes)).c_str(), p.predicted_us, p.measured_us,
            100 * p.error);
    if (p.again_us > 0) appendf(tip, ", again %.1f us", p.again_us);
    marker(svg, within_20_percent(p) ? 0 : 1, x, Y(p.error), colours[a % 7], false, tip);
  }

  // The legend: the colours; a square is a miss; the grey line.
  const double lx = w - right + 25;
  double ly = top + 10;
  for (size_t i = 0; i < algorithms.size(); ++i, ly += 18) {
    marker(svg, 0, lx, ly - 4, colours[i % 7], false);
    appendf(svg, "<text x=\"%g\" y=\"%g\">%s</text>\n", lx + 12, ly, escaped(algorithms[i]).c_str());
  }
  ly += 8;
  marker(svg, 1, lx, ly - 4, "#555", false);
  appendf(svg, "<text x=\"%g\" y=\"%g\">beyond 20%%</text>\n", lx + 12, ly);
  ly += 18;
  appendf(svg, "<rect x=\"%g\" y=\"%g\" width=\"10\" height=\"10\" fill=\"#e3f2e3\"/>", lx - 5, ly - 9);
  appendf(svg, "<text x=\"%g\" y=\"%g\">within 20%%</text>\n", lx + 12, ly);
  ly += 18;
  appendf(svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\">beyond 50%%: on the edge</text>\n", lx - 5, ly);
  if (std::any_of(points.begin(), points.end(), [](const CheckPoint& p) { return p.again_us > 0; }))
    appendf(svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\">grey: to the second sweep</text>\n", lx - 5, ly + 16);
  svg += "</svg>\n";
  return svg;
}

}  // namespace coll::sim
