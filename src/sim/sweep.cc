#include "sim/sweep.h"

#include "algorithms/select.h"
#include "base/error.h"
#include "sim/appendf.h"
#include "sim/svg_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace coll::sim {

std::vector<std::string> algorithms_for(const Cluster& cluster, algo::Collective c) {
  const Fabric& f = cluster.fabric;
  const bool one_node = f.place(0).node == f.place(f.nranks() - 1).node;
  std::vector<std::string> names;
  for (const algo::Algorithm& a : algo::all_algorithms())
    if (a.collective == c && (one_node || std::string(a.name) != "direct")) names.push_back(a.name);
  return names;
}

Sweep sweep(const Cluster& cluster, const CollectiveRun& base, size_t min_bytes, size_t max_bytes,
            const std::vector<std::string>& algorithms) {
  Sweep s;
  s.algorithms = algorithms;
  if (min_bytes > max_bytes)
    fail(Code::kInvalidArgument, "sweep: the smallest size (", min_bytes, ") is larger than the largest (", max_bytes,
         ")");
  for (size_t b = std::max<size_t>(min_bytes, base.elem_size); b <= max_bytes; b *= 4) {
    s.sizes.push_back(b);
    if (b > max_bytes / 4) {  // the next would pass max_bytes (or overflow)
      if (b != max_bytes) s.sizes.push_back(max_bytes);
      break;
    }
  }
  std::string best_before;
  for (size_t bytes : s.sizes) {
    std::vector<double> row;
    CollectiveRun r = base;
    r.bytes = bytes;
    std::string choice = "-";
    for (const std::string& a : algorithms) {
      r.algorithm = a;
      try {
        const Prediction p = predict(cluster, r);
        row.push_back(p.busbw_bytes_per_s);
        choice = p.auto_choice;
      } catch (const TooBig&) {
        row.push_back(0);  // left out, not the sweep
      }
    }
    s.auto_choice.push_back(choice);
    const size_t best = static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin());
    if (!best_before.empty() && algorithms[best] != best_before)
      s.crossovers.push_back({bytes, best_before, algorithms[best]});
    best_before = algorithms[best];
    s.busbw.push_back(std::move(row));
  }
  return s;
}

std::string sweep_svg(const Sweep& s, const std::string& title) {
  const double w = 800, h = 480, left = 70, right = 170, top = 40, bottom = 50;
  const double x0 = std::log2(static_cast<double>(s.sizes.front()));
  const double x1 = std::max(x0 + 1, std::log2(static_cast<double>(s.sizes.back())));
  double ymax = 0;
  for (const auto& row : s.busbw)
    for (double v : row) ymax = std::max(ymax, v / 1e9);
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  auto X = [&](double bytes) { return left + (std::log2(bytes) - x0) / (x1 - x0) * (w - left - right); };
  auto Y = [&](double gbs) { return h - bottom - gbs / ymax * (h - top - bottom); };
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};
  std::string svg;
  appendf(svg,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" font-family=\"sans-serif\" "
          "font-size=\"12\">\n",
          w, h);
  appendf(svg, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  appendf(svg, "<text x=\"%g\" y=\"22\" font-size=\"14\">%s</text>\n", left, escaped(title).c_str());
  appendf(svg, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", left, h - bottom, w - right,
          h - bottom);
  appendf(svg, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"black\"/>\n", left, top, left, h - bottom);
  for (size_t bytes : s.sizes)
    appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n",
            X(static_cast<double>(bytes)), h - bottom + 15, size_label(static_cast<double>(bytes)).c_str());
  for (int k = 0; k <= 4; ++k)
    appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\" font-size=\"10\">%.3g</text>\n", left - 5,
            Y(ymax * k / 4) + 4, ymax * k / 4);
  appendf(svg, "<text x=\"%g\" y=\"%g\" text-anchor=\"middle\">message size</text>\n", (left + w - right) / 2, h - 10);
  appendf(svg, "<text x=\"15\" y=\"%g\" transform=\"rotate(-90 15 %g)\" text-anchor=\"middle\">busbw (GB/s)</text>\n",
          (top + h - bottom) / 2, (top + h - bottom) / 2);
  for (size_t a = 0; a < s.algorithms.size(); ++a) {
    const char* colour = colours[a % 7];
    std::string points;
    for (size_t i = 0; i < s.sizes.size(); ++i) {
      appendf(points, "%.1f,%.1f ", X(static_cast<double>(s.sizes[i])), Y(s.busbw[i][a] / 1e9));
    }
    appendf(svg, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", colour, points.c_str());
    appendf(svg, "<text x=\"%g\" y=\"%g\" fill=\"%s\">%s</text>\n", w - right + 10,
            top + 18.0 * static_cast<double>(a + 1), colour, s.algorithms[a].c_str());
  }
  for (const Sweep::Crossover& c : s.crossovers) {
    const double x = X(static_cast<double>(c.bytes));
    appendf(svg, "<line x1=\"%g\" y1=\"%g\" x2=\"%g\" y2=\"%g\" stroke=\"gray\" stroke-dasharray=\"4 3\"/>\n", x, top,
            x, h - bottom);
    appendf(svg, "<text x=\"%g\" y=\"%g\" font-size=\"10\" fill=\"gray\">%s &#8594; %s</text>\n", x + 3, top + 10,
            c.from.c_str(), c.to.c_str());
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace coll::sim
