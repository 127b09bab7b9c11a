#pragma once
// The backward of a ReLU fused into a oneDNN primitive as an eltwise post-op. The primitive
// keeps no mask: the gradient is gated by the stored output (relu(z) > 0 iff z > 0), or by a
// 1-bit mask packed from that output, so that the output itself need not be kept.

#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"

namespace memopt::cpu_backend::onednn {

/// dz[i] = y[i] > 0 ? dy[i] : 0, where y = relu(z) is the fused primitive's output.
/// `dz` may alias `dy`.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// Conv2d<float> conv(Conv2dShape{.batch = 32, .height = 28, .width = 28, .filters = 32,
///                                .kernel_h = 3, .kernel_w = 3, .relu = true});
/// const Conv2dShape& s = conv.shape();
/// std::vector<float> x(s.input_elements()), dx(x.size()), w(s.kernel_elements()), b(32);
/// std::vector<float> y(s.output_elements()), dy(y.size());
/// std::vector<std::byte> scratch(conv.scratchpad_bytes());
/// conv.forward(x.data(), w.data(), b.data(), y.data(), scratch.data());  // relu(conv(x) + b)
/// relu_backward(y.data(), dy.data(), dy.data(), s.output_elements());   // dy is now dL/dz
/// conv.backward_data(dy.data(), w.data(), dx.data(), scratch.data());
/// ```
template <detail::DnnlElement T>
void relu_backward(const T* y, const T* dy, T* dz, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dz[i] = static_cast<float>(y[i]) > 0.0f ? dy[i] : T(0.0f);
}

/// 64-bit words of a 1-bit ReLU mask for `n` elements (bit i % 64 of word i / 64).
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// const std::size_t n = 32 * 128;
/// std::vector<std::uint64_t> mask(relu_mask_words(n));
/// ```
constexpr std::size_t relu_mask_words(std::size_t n) {
  return (n + 63) / 64;
}

/// Packs y > 0 into `mask` (relu_mask_words(n) words): 1/32 of a float32 output's bytes.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// const std::size_t n = 32 * 128;
/// std::vector<float> y(n);
/// std::vector<std::uint64_t> mask(relu_mask_words(n));
/// relu_mask_pack(y.data(), mask.data(), n);  // y may now be freed or overwritten
/// ```
template <detail::DnnlElement T>
void relu_mask_pack(const T* y, std::uint64_t* mask, std::size_t n) {
  for (std::size_t w = 0; w < relu_mask_words(n); ++w) {
    std::uint64_t bits = 0;
    const std::size_t end = n - w * 64 < 64 ? n - w * 64 : 64;
    for (std::size_t b = 0; b < end; ++b)
      bits |= static_cast<std::uint64_t>(static_cast<float>(y[w * 64 + b]) > 0.0f) << b;
    mask[w] = bits;
  }
}

/// dz[i] = bit i of `mask` ? dy[i] : 0. `dz` may alias `dy`.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// const std::size_t n = 32 * 128;
/// std::vector<float> dy(n);
/// std::vector<std::uint64_t> mask(relu_mask_words(n));  // as relu_mask_pack left it
/// relu_backward_masked(mask.data(), dy.data(), dy.data(), n);
/// ```
template <detail::DnnlElement T>
void relu_backward_masked(const std::uint64_t* mask, const T* dy, T* dz, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dz[i] = (mask[i / 64] >> (i % 64)) & 1u ? dy[i] : T(0.0f);
}

}  // namespace memopt::cpu_backend::onednn
