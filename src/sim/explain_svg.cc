#include "sim/appendf.h"
#include "sim/explain.h"

#include <cmath>
#include <cstdio>

namespace coll::sim {
namespace {

constexpr double kRoundSeconds = 1.5;  // of animation per round
constexpr double kPi = 3.14159265358979323846;

// Visible during round k of `rounds`, and not otherwise (discrete keyframes).
std::string visible_in(size_t k, size_t rounds) {
  const double total = kRoundSeconds * static_cast<double>(rounds);
  const double a = static_cast<double>(k) / static_cast<double>(rounds);
  const double b = static_cast<double>(k + 1) / static_cast<double>(rounds);
  char values[16], times[64];
  // From 0 until a hidden (but for the first round), shown until b, hidden after (but for the last).
  const bool first = k == 0, last = k + 1 == rounds;
  std::snprintf(values, sizeof values, "%s%s", first ? "1" : "0;1", last ? "" : ";0");
  if (first && last)
    std::snprintf(times, sizeof times, "0");
  else if (first)
    std::snprintf(times, sizeof times, "0;%.6f", b);
  else if (last)
    std::snprintf(times, sizeof times, "0;%.6f", a);
  else
    std::snprintf(times, sizeof times, "0;%.6f;%.6f", a, b);
  char text[256];
  std::snprintf(text, sizeof text,
                "<animate attributeName=\"opacity\" calcMode=\"discrete\" values=\"%s\" keyTimes=\"%s\" dur=\"%gs\" "
                "repeatCount=\"indefinite\"/>",
                values, times, total);
  return text;
}

}  // namespace

std::string explain_svg(const Explanation& e, const CollectiveRun& run) {
  const int n = e.plan.shape.nranks;
  const size_t elem = e.plan.shape.elem_size;
  const double size = 560, cx = size / 2, cy = size / 2 + 20, radius = size / 2 - 70;
  auto x = [&](int r) { return cx + radius * std::sin(2 * kPi * r / n); };
  auto y = [&](int r) { return cy - radius * std::cos(2 * kPi * r / n); };
  std::string svg;
  appendf(svg,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
          "font-size=\"13\">\n",
          size, size + 40);
  appendf(svg,
          "<defs><marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
          "orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"context-stroke\"/></marker></defs>\n");
  appendf(svg, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  appendf(svg,
          "<text x=\"10\" y=\"22\" font-size=\"15\">%s %s, %d ranks, %zu bytes: red is reduced, blue copied</text>\n",
          e.plan.algorithm->name, algo::collective_name(e.plan.shape.collective), n, run.bytes);
  for (size_t k = 0; k < e.rounds.size(); ++k) {
    const Round& round = e.rounds[k];
    svg += "<g opacity=\"" + std::string(k == 0 ? "1" : "0") + "\">" + visible_in(k, e.rounds.size()) + "\n";
    appendf(svg, "<text x=\"10\" y=\"44\">round %zu of %zu</text>\n", k + 1, e.rounds.size());
    for (const Transfer& t : round.transfers) {
      // Shortened at both ends so that the arrow stops at the rank's circle.
      const double dx = x(t.to) - x(t.from), dy = y(t.to) - y(t.from), len = std::hypot(dx, dy);
      const double ux = len > 0 ? dx / len : 0, uy = len > 0 ? dy / len : 0, r = 24;
      // Messages both ways between two ranks: each drawn a little to its side.
      const double ox = -uy * 6, oy = ux * 6;
      const char* colour = t.reduce ? "#d62728" : "#1f77b4";
      appendf(svg,
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2.5\" "
              "marker-end=\"url(#head)\"/>\n",
              x(t.from) + ux * r + ox, y(t.from) + uy * r + oy, x(t.to) - ux * r + ox, y(t.to) - uy * r + oy, colour);
      appendf(svg, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\" text-anchor=\"middle\">[%zu,%zu)</text>\n",
              (x(t.from) + x(t.to)) / 2 + ox * 2.5, (y(t.from) + y(t.to)) / 2 + oy * 2.5, colour, t.src.offset / elem,
              (t.src.offset + t.bytes) / elem);
    }
    svg += "</g>\n";
  }
  for (int r = 0; r < n; ++r) {
    appendf(svg, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"22\" fill=\"#f4f4f4\" stroke=\"black\"/>\n", x(r), y(r));
    appendf(svg, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", x(r), y(r) + 5, r);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace coll::sim
