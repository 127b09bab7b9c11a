#pragma once
// Conv2dTuning's automatic rows per pass and layouts (its comment gives the measurements);
// the arithmetic is Conv2d's to resolve, since it may time the CPU (arithmetic_probe.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/conv2d_shape.hpp"
#include "memopt/backend/cpu/dnnl/layout.hpp"

namespace memopt::cpu_backend::onednn::detail {

/// `t` with its rows per pass and layouts resolved for `s` (capped at the batch).
inline Conv2dTuning with_rows_and_layouts(Conv2dTuning t, const Conv2dShape& s) {
  constexpr std::size_t kSliceBytes = std::size_t{1} << 20;
  if (t.rows_per_pass <= 0) {
    const std::size_t row_bytes = (s.input_row_elements() + s.output_row_elements()) * 4;
    std::int64_t rows = 1;
    while (static_cast<std::size_t>(rows * 2) * row_bytes <= kSliceBytes) rows *= 2;
    t.rows_per_pass = rows;
  }
  t.rows_per_pass = std::min(t.rows_per_pass, s.batch);
  if (has_avx512_core()) {
    for (Layout* l : {&t.forward, &t.backward_data, &t.backward_weights})
      if (*l == Layout::automatic) *l = Layout::blocked_weights;
    return t;
  }
  const bool few_channels = s.in_channels < 4;
  if (t.forward == Layout::automatic) t.forward = Layout::blocked;
  if (t.backward_data == Layout::automatic)
    t.backward_data = few_channels || t.rows_per_pass <= 16 ? Layout::plain : Layout::blocked;
  if (t.backward_weights == Layout::automatic)
    t.backward_weights = few_channels ? Layout::plain : Layout::blocked;
  return t;
}

}  // namespace memopt::cpu_backend::onednn::detail
