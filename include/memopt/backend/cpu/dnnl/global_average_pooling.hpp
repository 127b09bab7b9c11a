#pragma once
// Keras's GlobalAveragePooling2D on NHWC tensors: [batch, height, width, channels] ->
// [batch, channels]. Plain loops: a reduction this small gains nothing from a primitive.

#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"

namespace memopt::cpu_backend::onednn {

/// y[n, c] = mean over (h, w) of x[n, h, w, c], accumulated in float32.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// std::vector<float> x(32 * 5 * 5 * 64), y(32 * 64);
/// global_average_pooling_forward(x.data(), y.data(), 32, 5, 5, 64);  // y: [32, 64]
/// ```
template <detail::DnnlElement T>
void global_average_pooling_forward(const T* x, T* y, std::size_t batch, std::size_t height,
                                    std::size_t width, std::size_t channels) {
  const std::size_t pixels = height * width;
  const float inv = 1.0f / static_cast<float>(pixels);
  for (std::size_t n = 0; n < batch; ++n) {
    T* out = y + n * channels;
    const T* in = x + n * pixels * channels;
    for (std::size_t c = 0; c < channels; ++c) {
      float sum = 0.0f;
      for (std::size_t p = 0; p < pixels; ++p) sum += static_cast<float>(in[p * channels + c]);
      out[c] = T(sum * inv);
    }
  }
}

/// dx[n, h, w, c] = dy[n, c] / (height * width).
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// std::vector<float> dy(32 * 64), dx(32 * 5 * 5 * 64);
/// global_average_pooling_backward(dy.data(), dx.data(), 32, 5, 5, 64);
/// ```
template <detail::DnnlElement T>
void global_average_pooling_backward(const T* dy, T* dx, std::size_t batch, std::size_t height,
                                     std::size_t width, std::size_t channels) {
  const std::size_t pixels = height * width;
  const float inv = 1.0f / static_cast<float>(pixels);
  for (std::size_t n = 0; n < batch; ++n) {
    const T* g = dy + n * channels;
    T* out = dx + n * pixels * channels;
    for (std::size_t p = 0; p < pixels; ++p)
      for (std::size_t c = 0; c < channels; ++c)
        out[p * channels + c] = T(static_cast<float>(g[c]) * inv);
  }
}

}  // namespace memopt::cpu_backend::onednn
