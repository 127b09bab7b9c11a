#pragma once
// The arena as a picture: step on the x axis, byte offset on the y axis, one labelled
// rectangle per buffer. The picture to look at when asking "where did my memory go".

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/plan/report.hpp"

namespace memopt::plan {

namespace detail {

inline std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

inline std::string short_bytes(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20))
    return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (std::size_t{1} << 10))
    return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

// Fill colours by role: forward values blue, what backward keeps for derivatives teal,
// gradients orange, the step's inputs green, whole-step buffers grey.
inline std::string_view role_colour(BufferRole r) {
  switch (r) {
    case BufferRole::input:
      return "#59a14f";
    case BufferRole::labels:
      return "#8cd17d";
    case BufferRole::activation:
      return "#4e79a7";
    case BufferRole::recomputed_activation:
      return "#a0cbe8";
    case BufferRole::pre_activation:
      return "#499894";
    case BufferRole::relu_mask:
    case BufferRole::saved:
      return "#86bcb6";
    case BufferRole::logits:
      return "#b07aa1";
    case BufferRole::logits_grad:
      return "#d4a6c8";
    case BufferRole::activation_grad:
    case BufferRole::branch_grad:
      return "#f28e2b";
    case BufferRole::parameter_grads:
      return "#9d7660";
    case BufferRole::step_scalars:
      return "#79706e";
  }
  return "#bab0ac";
}

}  // namespace detail

/// The SVG of `r`'s arena. Each buffer is a rectangle spanning its steps and its bytes,
/// labelled inside when the label fits and numbered otherwise; the legend on the right lists
/// every buffer with its number, bytes, offset and steps.
///
/// The offset axis is linear between consecutive buffer boundaries, but no such band is drawn
/// thinner than 16 pixels: at small batches the parameter gradients dwarf everything else,
/// and a strictly linear axis would leave the activations as hairlines. The tick labels are
/// true offsets.
///
/// ```cpp
/// std::string svg = mo::plan::memory_timeline_svg(model.memory_report(32));
/// ```
inline std::string memory_timeline_svg(const MemoryReport& r) {
  const double left = 96, top = 58, legend_w = 430, bottom = 150, min_band = 16;
  const auto nsteps = static_cast<double>(r.steps.empty() ? 1 : r.steps.size());
  const double col = nsteps * 64 < 720 ? 720 / nsteps : 64;
  const double plot_w = col * nsteps;
  const double arena = r.arena_bytes ? static_cast<double>(r.arena_bytes) : 1.0;

  // Bands between buffer boundaries, each at least min_band pixels tall.
  std::vector<std::size_t> edges{0, r.arena_bytes};
  for (const BufferReport& b : r.buffers) {
    edges.push_back(b.offset);
    edges.push_back(b.offset + align_up(b.bytes));
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  const double bands = static_cast<double>(edges.size() - 1);
  const double plot_h = 560 > bands * min_band * 1.5 ? 560 : bands * min_band * 1.5;
  const double linear_h = plot_h - bands * min_band;  // shared in proportion to bytes
  std::vector<double> edge_y{0};                      // pixels above offset 0
  for (std::size_t k = 1; k < edges.size(); ++k)
    edge_y.push_back(edge_y.back() + min_band +
                     static_cast<double>(edges[k] - edges[k - 1]) / arena * linear_h);
  const auto y_of = [&](std::size_t bytes) {
    std::size_t k = static_cast<std::size_t>(std::lower_bound(edges.begin(), edges.end(), bytes) -
                                             edges.begin());
    if (k < edges.size() && edges[k] == bytes) return top + plot_h - edge_y[k];
    if (k == 0 || k >= edges.size()) return top + plot_h;
    const double t =
        static_cast<double>(bytes - edges[k - 1]) / static_cast<double>(edges[k] - edges[k - 1]);
    return top + plot_h - (edge_y[k - 1] + t * (edge_y[k] - edge_y[k - 1]));
  };

  const double line_h = 15;
  const double legend_h = 40 + line_h * static_cast<double>(r.buffers.size());
  const double width = left + plot_w + 24 + legend_w;
  const double height = top + (plot_h + bottom > legend_h ? plot_h + bottom : legend_h) + 10;

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      width, height, width, height);
  s += fmt::format(
      "<text x=\"{:.0f}\" y=\"24\" font-size=\"17\" font-weight=\"bold\">memopt {} arena, batch "
      "{}, {}: {} ({} bytes)</text>\n",
      left, detail::xml_escape(r.kind), r.batch, detail::xml_escape(r.policy),
      detail::short_bytes(r.arena_bytes), detail::with_commas(r.arena_bytes));
  s += fmt::format(
      "<text x=\"{:.0f}\" y=\"44\" font-size=\"13\" fill=\"#444\">lower bound {} ({}), naive "
      "{} ({:.2f}x the arena). x: the step's kernels in order; y: byte offset, every band "
      "at least {:.0f} px</text>\n",
      left, detail::short_bytes(r.lower_bound_bytes),
      r.arena_bytes == r.lower_bound_bytes ? "reached" : "not reached",
      detail::short_bytes(r.naive_bytes), static_cast<double>(r.naive_bytes) / arena, min_band);

  // The peak step, shaded; the columns and their names.
  const int peak = r.peak_step();
  s += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"#fff3c4\"/>\n",
      left + col * peak, top, col, plot_h);
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const double x = left + col * static_cast<double>(i);
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.0f}\" x2=\"{0:.1f}\" y2=\"{2:.0f}\" stroke=\"#e4e4e4\"/>\n",
        x, top, top + plot_h);
    const double cx = x + col / 2;
    const double ty = top + plot_h + 12;
    s += fmt::format(
        "<text x=\"{0:.1f}\" y=\"{1:.0f}\" font-size=\"11\" text-anchor=\"end\" "
        "transform=\"rotate(-50 {0:.1f} {1:.0f})\"{3}>{2}</text>\n",
        cx, ty, detail::xml_escape(r.steps[i]),
        static_cast<int>(i) == peak ? " font-weight=\"bold\"" : "");
  }
  // Offsets: a tick at each boundary with room for its label, from the top down.
  double last_label = -100;
  std::string last_text;
  for (std::size_t k = edges.size(); k-- > 0;) {
    const double y = y_of(edges[k]);
    if ((y - last_label < 14 && k != 0) || detail::short_bytes(edges[k]) == last_text) continue;
    last_label = y;
    last_text = detail::short_bytes(edges[k]);
    s += fmt::format(
        "<line x1=\"{0:.0f}\" y1=\"{1:.1f}\" x2=\"{2:.0f}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{3:.0f}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5}</text>\n",
        left, y, left + plot_w, left - 6, y + 4, detail::short_bytes(edges[k]));
  }
  s += fmt::format(
      "<text x=\"18\" y=\"{0:.0f}\" font-size=\"12\" transform=\"rotate(-90 18 {0:.0f})\" "
      "text-anchor=\"middle\">byte offset in the arena</text>\n",
      top + plot_h / 2);

  // The buffers.
  for (std::size_t k = 0; k < r.buffers.size(); ++k) {
    const BufferReport& b = r.buffers[k];
    const double x = left + col * b.first;
    const double w = col * (b.last - b.first + 1);
    const double y1 = y_of(b.offset);
    const double y0 = y_of(b.offset + align_up(b.bytes));
    const double h = y1 - y0;
    s += fmt::format(
        "<g><title>{} #{}: {} bytes at offset {}, steps {} to {} ({} .. {})</title>"
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\" "
        "stroke=\"white\" stroke-width=\"1\"/>",
        detail::xml_escape(b.name), k + 1, detail::with_commas(b.bytes),
        detail::with_commas(b.offset), b.first, b.last,
        detail::xml_escape(r.steps[static_cast<std::size_t>(b.first)]),
        detail::xml_escape(r.steps[static_cast<std::size_t>(b.last)]), x, y0, w, h,
        detail::role_colour(b.role));
    // A name fits at about 6.2 pixels a character in 11-pixel text.
    const std::string label = fmt::format("{} {}", b.name, detail::short_bytes(b.bytes));
    const std::string number = fmt::format("{}", k + 1);
    if (h >= 14 && w >= 6.2 * static_cast<double>(label.size()) + 6)
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"white\">{}</text>",
                       x + 4, y0 + h / 2 + 4, detail::xml_escape(label));
    else if (h >= 14 && w >= 6.2 * static_cast<double>(b.name.size()) + 6)
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" fill=\"white\">{}</text>",
                       x + 4, y0 + h / 2 + 4, detail::xml_escape(b.name));
    else if (h >= 10 && w >= 8 * static_cast<double>(number.size()))
      s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"9\" fill=\"white\">{}</text>",
                       x + 2, y0 + h / 2 + 3, number);
    s += "</g>\n";
  }
  // Axes and the lower bound.
  s += fmt::format(
      "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.1f}\" height=\"{:.0f}\" fill=\"none\" "
      "stroke=\"#333\"/>\n",
      left, top, plot_w, plot_h);
  const double lb_y = y_of(r.lower_bound_bytes);
  s += fmt::format(
      "<line x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#d62728\" "
      "stroke-dasharray=\"6 4\" stroke-width=\"1.5\"/>\n",
      left, lb_y, left + plot_w, lb_y);

  // The legend: every buffer, numbered.
  const double lx = left + plot_w + 24;
  s += fmt::format(
      "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"12\" font-weight=\"bold\">#  buffer: bytes "
      "@ offset, steps</text>\n",
      lx, top + 4);
  for (std::size_t k = 0; k < r.buffers.size(); ++k) {
    const BufferReport& b = r.buffers[k];
    const double y = top + 22 + line_h * static_cast<double>(k);
    s += fmt::format(
        "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{:.0f}\" y=\"{:.0f}\" font-size=\"11\">{}  {}: {} @ {}, {}..{}</text>\n",
        lx, y - 9, detail::role_colour(b.role), lx + 15, y, k + 1, detail::xml_escape(b.name),
        detail::with_commas(b.bytes), detail::with_commas(b.offset), b.first, b.last);
  }
  s += "</svg>\n";
  return s;
}

/// Writes `memory_timeline_svg(r)` to `path`, through a temporary file renamed into place so
/// that no half-written picture is ever left. Raises memopt::error when it cannot.
///
/// ```cpp
/// mo::plan::write_memory_timeline_svg("arena.svg", model.memory_report(32));
/// ```
inline void write_memory_timeline_svg(const std::filesystem::path& path, const MemoryReport& r) {
  const std::string svg = memory_timeline_svg(r);
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    throw error("write_memory_timeline_svg: expected a writable file at " + tmp.string() +
                ", found none (does the folder exist?)");
  const bool written = std::fwrite(svg.data(), 1, svg.size(), f) == svg.size();
  const bool flushed = std::fflush(f) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !flushed || !closed) {
    std::error_code ignore;
    std::filesystem::remove(tmp, ignore);
    throw error("write_memory_timeline_svg: expected to write " + std::to_string(svg.size()) +
                " bytes to " + tmp.string() + ", found the write failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw error("write_memory_timeline_svg: expected to rename " + tmp.string() + " to " +
                path.string() + ", found: " + ec.message());
  }
}

}  // namespace memopt::plan
