#pragma once
// Keras's Flatten on a channels-last tensor: [batch, h, w, c] -> [batch, h * w * c] in the
// same row-major order, so the bytes do not change. A planner should alias the output to
// the input; these copies exist for a schedule that gives them separate buffers.

#include <cstddef>
#include <cstring>

#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"

namespace memopt::cpu_backend::onednn {

/// y = x as [batch, h * w * c]: a copy of `n` elements, nothing when y aliases x.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// std::vector<float> x(32 * 5 * 5 * 64), y(x.size());
/// flatten_forward(x.data(), y.data(), 32 * 5 * 5 * 64);
/// ```
template <detail::DnnlElement T>
void flatten_forward(const T* x, T* y, std::size_t n) {
  if (x != y) std::memmove(y, x, n * sizeof(T));
}

/// dx = dy reshaped back: a copy of `n` elements, nothing when dx aliases dy.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// std::vector<float> dy(32 * 5 * 5 * 64), dx(dy.size());
/// flatten_backward(dy.data(), dx.data(), 32 * 5 * 5 * 64);
/// ```
template <detail::DnnlElement T>
void flatten_backward(const T* dy, T* dx, std::size_t n) {
  if (dy != dx) std::memmove(dx, dy, n * sizeof(T));
}

}  // namespace memopt::cpu_backend::onednn
