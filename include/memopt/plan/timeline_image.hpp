#pragma once
// The arena's timeline (timeline_svg.hpp's picture) as pixels: for viewers that take only
// raster images, TensorBoard's Images dashboard first. No text: the rectangles, the peak step
// shaded, the lower bound as a dashed red line, and the arena's size as the plot's top edge.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "memopt/io/png_writer.hpp"
#include "memopt/plan/memory_report.hpp"
#include "memopt/plan/timeline_svg.hpp"

namespace memopt::plan {

/// An RGB picture of an arena and where its plot lies, so that readers can find a step's
/// column and an offset's row. Rows run top to bottom; offset 0 is the plot's bottom edge.
struct TimelineImage {
  int width = 0, height = 0;
  int plot_x = 0, plot_y = 0;  // the plot's top-left pixel, inside a 1-pixel frame
  int plot_w = 0, plot_h = 0;
  std::size_t steps = 0;
  std::vector<std::size_t> edges;  // the byte offsets where buffers begin or end, ascending
  std::vector<int> edge_rows;      // the row just above each edge's offset (edge_rows[0]:
                                   // plot_y + plot_h, below the plot)
  std::vector<std::uint8_t> rgb;

  /// The first column of step `s` (`s == steps`: one past the plot).
  int column_of(std::size_t s) const {
    const std::size_t n = steps ? steps : 1;
    return plot_x + static_cast<int>(s * static_cast<std::size_t>(plot_w) / n);
  }
  /// The row just above byte offset `bytes`: the rows of [a, b) are [row_of(b), row_of(a)).
  int row_of(std::size_t bytes) const {
    const auto at = std::lower_bound(edges.begin(), edges.end(), bytes);
    const auto k = static_cast<std::size_t>(at - edges.begin());
    if (k < edges.size() && edges[k] == bytes) return edge_rows[k];
    if (k == 0) return edge_rows.front();
    if (k >= edges.size()) return edge_rows.back();
    const double t =
        static_cast<double>(bytes - edges[k - 1]) / static_cast<double>(edges[k] - edges[k - 1]);
    return static_cast<int>(std::lround(edge_rows[k - 1] + t * (edge_rows[k] - edge_rows[k - 1])));
  }
  std::array<std::uint8_t, 3> pixel(int x, int y) const {
    const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) +
                           static_cast<std::size_t>(x)) *
                          3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

namespace detail {

/// "#rrggbb" as three bytes.
inline std::array<std::uint8_t, 3> rgb_of(std::string_view hex) {
  const auto nibble = [](char c) {
    return static_cast<std::uint8_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  };
  std::array<std::uint8_t, 3> out{};
  for (std::size_t i = 0; i < 3; ++i)
    out[i] = static_cast<std::uint8_t>(nibble(hex[1 + 2 * i]) * 16 + nibble(hex[2 + 2 * i]));
  return out;
}

}  // namespace detail

/// The colour a buffer of role `r` is filled with, in the SVG and in the image alike.
inline std::array<std::uint8_t, 3> role_rgb(BufferRole r) {
  return detail::rgb_of(detail::role_colour(r));
}

/// `r`'s arena as pixels: x the steps (equal columns), y the byte offset, one rectangle per
/// buffer in its role's colour with a white outline. As in the SVG, the offset axis is linear
/// between buffer boundaries but gives every band at least 16 rows (fewer only when a plan
/// has so many bands that the picture would pass 2400 rows), so small buffers stay visible
/// beside large gradients.
///
/// ```cpp
/// mo::plan::TimelineImage im = mo::plan::memory_timeline_image(model.memory_report(32));
/// std::string png = mo::io::encode_png(im.rgb, im.width, im.height);
/// ```
inline TimelineImage memory_timeline_image(const MemoryReport& r) {
  constexpr int margin = 10, max_plot_h = 2400;
  constexpr double min_band_px = 16;
  TimelineImage im;
  im.steps = r.steps.empty() ? 1 : r.steps.size();
  im.plot_w = static_cast<int>(std::clamp<std::size_t>(im.steps * 24, 720, 1600));
  const double arena = r.arena_bytes ? static_cast<double>(r.arena_bytes) : 1.0;

  im.edges = {0, r.arena_bytes};
  for (const BufferReport& b : r.buffers) {
    im.edges.push_back(b.offset);
    im.edges.push_back(b.offset + align_up(b.bytes));
  }
  std::sort(im.edges.begin(), im.edges.end());
  im.edges.erase(std::unique(im.edges.begin(), im.edges.end()), im.edges.end());
  const double bands = static_cast<double>(std::max<std::size_t>(im.edges.size(), 2) - 1);
  const double min_band = std::min(min_band_px, max_plot_h / (bands * 1.5));
  im.plot_h = static_cast<int>(std::max(480.0, std::ceil(bands * min_band * 1.5)));
  const double linear_h = im.plot_h - bands * min_band;  // shared in proportion to bytes

  im.plot_x = margin + 1;
  im.plot_y = margin + 1;
  im.width = im.plot_w + 2 * (margin + 1);
  im.height = im.plot_h + 2 * (margin + 1);
  double above = 0;  // rows above offset 0 so far
  im.edge_rows.push_back(im.plot_y + im.plot_h);
  for (std::size_t k = 1; k < im.edges.size(); ++k) {
    above += min_band + static_cast<double>(im.edges[k] - im.edges[k - 1]) / arena * linear_h;
    im.edge_rows.push_back(im.plot_y + im.plot_h - static_cast<int>(std::lround(above)));
  }

  im.rgb.assign(static_cast<std::size_t>(im.width) * static_cast<std::size_t>(im.height) * 3, 255);
  const auto fill = [&im](int x0, int y0, int x1, int y1, std::array<std::uint8_t, 3> c) {
    x0 = std::max(x0, 0), y0 = std::max(y0, 0);
    x1 = std::min(x1, im.width), y1 = std::min(y1, im.height);
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) {
        const std::size_t i = (static_cast<std::size_t>(y) * static_cast<std::size_t>(im.width) +
                               static_cast<std::size_t>(x)) *
                              3;
        im.rgb[i] = c[0], im.rgb[i + 1] = c[1], im.rgb[i + 2] = c[2];
      }
  };
  const int top = im.plot_y, bottom = im.plot_y + im.plot_h;

  // The peak step shaded; the step columns' boundaries in light grey.
  const auto peak = static_cast<std::size_t>(r.peak_step());
  fill(im.column_of(peak), top, im.column_of(peak + 1), bottom, detail::rgb_of("#fff3c4"));
  for (std::size_t s = 1; s < im.steps; ++s)
    fill(im.column_of(s), top, im.column_of(s) + 1, bottom, detail::rgb_of("#e4e4e4"));

  // The buffers, outlined in white as the SVG strokes them, when big enough to keep a fill.
  for (const BufferReport& b : r.buffers) {
    const int x0 = im.column_of(static_cast<std::size_t>(b.first));
    const int x1 = im.column_of(static_cast<std::size_t>(b.last) + 1);
    const int y0 = im.row_of(b.offset + align_up(b.bytes));
    const int y1 = im.row_of(b.offset);
    if (x1 - x0 >= 3 && y1 - y0 >= 3) {
      fill(x0, y0, x1, y1, {255, 255, 255});
      fill(x0 + 1, y0 + 1, x1 - 1, y1 - 1, role_rgb(b.role));
    } else {
      fill(x0, y0, x1, y1, role_rgb(b.role));
    }
  }

  // The lower bound, dashed 6 on 4 off, two rows thick.
  const int lb = im.row_of(r.lower_bound_bytes);
  for (int x = im.plot_x; x < im.plot_x + im.plot_w; x += 10)
    fill(x, lb - 1, std::min(x + 6, im.plot_x + im.plot_w), lb + 1, detail::rgb_of("#d62728"));

  // The frame: its top edge is the arena's size.
  const std::array<std::uint8_t, 3> frame = detail::rgb_of("#333333");
  fill(im.plot_x - 1, top - 1, im.plot_x + im.plot_w + 1, top, frame);
  fill(im.plot_x - 1, bottom, im.plot_x + im.plot_w + 1, bottom + 1, frame);
  fill(im.plot_x - 1, top - 1, im.plot_x, bottom + 1, frame);
  fill(im.plot_x + im.plot_w, top - 1, im.plot_x + im.plot_w + 1, bottom + 1, frame);
  return im;
}

/// `memory_timeline_image(r)` as PNG bytes.
///
/// ```cpp
/// #include <fstream>
/// const mo::plan::MemoryReport r = model.memory_report(32);
/// std::ofstream("arena.png", std::ios::binary) << mo::plan::memory_timeline_png(r);
/// ```
inline std::string memory_timeline_png(const MemoryReport& r) {
  const TimelineImage im = memory_timeline_image(r);
  return io::encode_png(im.rgb, im.width, im.height);
}

}  // namespace memopt::plan
