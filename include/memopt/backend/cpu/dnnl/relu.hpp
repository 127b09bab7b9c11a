#pragma once
// The backward of a ReLU fused into a oneDNN primitive as an eltwise post-op: the primitive
// keeps no mask, so the gradient is gated by the stored output (relu(z) > 0 iff z > 0).

#include <cstddef>

#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"

namespace memopt::cpu_backend::onednn {

/// dz[i] = y[i] > 0 ? dy[i] : 0, where y = relu(z) is the fused primitive's output.
/// `dz` may alias `dy`.
///
/// ```cpp
/// conv.forward(x, w, b, y, scratch);            // y = relu(conv(x) + b)
/// relu_backward(y, dy, dy, conv.shape().output_elements());
/// conv.backward_data(dy, w, dx, scratch);       // dy is now dL/dz
/// ```
template <detail::DnnlElement T>
void relu_backward(const T* y, const T* dy, T* dz, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dz[i] = static_cast<float>(y[i]) > 0.0f ? dy[i] : T(0.0f);
}

}  // namespace memopt::cpu_backend::onednn
