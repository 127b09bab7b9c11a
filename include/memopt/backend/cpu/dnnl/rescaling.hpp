#pragma once
// Keras's Rescaling: y = x * scale + offset, so that 8-bit pixels can enter a model
// (Rescaling(1/255) maps [0, 255] to [0, 1]).

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"

namespace memopt::cpu_backend::onednn {

/// The inputs Rescaling takes: 8-bit pixels or floating-point values.
template <class T>
concept RescalingInput = std::same_as<T, std::uint8_t> || detail::DnnlElement<T>;

/// y = x * scale + offset, computed in float32.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// std::vector<std::uint8_t> pixels(32 * 28 * 28);
/// std::vector<float> x(pixels.size());
/// rescaling_forward(pixels.data(), x.data(), pixels.size(), 1.0f / 255.0f, 0.0f);  // to float
/// ```
template <RescalingInput In, detail::DnnlElement Out>
void rescaling_forward(const In* x, Out* y, std::size_t n, float scale, float offset) {
  for (std::size_t i = 0; i < n; ++i) y[i] = Out(static_cast<float>(x[i]) * scale + offset);
}

/// dx = dy * scale (only meaningful when the input is floating point and needs a gradient).
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// std::vector<float> dy(1024), dx(1024);
/// rescaling_backward(dy.data(), dx.data(), dy.size(), 2.0f);
/// ```
template <detail::DnnlElement T>
void rescaling_backward(const T* dy, T* dx, std::size_t n, float scale) {
  for (std::size_t i = 0; i < n; ++i) dx[i] = T(static_cast<float>(dy[i]) * scale);
}

}  // namespace memopt::cpu_backend::onednn
