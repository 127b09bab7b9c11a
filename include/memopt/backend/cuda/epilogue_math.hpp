#pragma once
// The element-wise math of the CUDA backend's epilogue fallback, for host and device alike.
//
// When cuBLASLt's heuristic has no algorithm for a product with its epilogue (bias,
// activation, ReLU mask, GELU input, bias gradient), the executor runs the plain product and
// memopt's own kernels, which call the functions here for each value. The plain product
// writes float32 (in place of the output when that is float32, else into a scratch buffer),
// so that every value is rounded to the compute type once, after the epilogue's math, as in
// cuBLASLt's fused epilogues and on the CPU:
// - forward: forward_item adds the bias, applies the activation and writes the output, the
//   mask or the GELU input;
// - backward: backward_value multiplies by f' (read from what the plan kept) and writes the
//   gradient; the kernel sums the stored values over rows into the bias gradient.
// No CUDA header is included: tests/unit runs the same functions on the host against the CPU
// backend.
//
// Layouts are the device's (device_layout.hpp): `rows` samples of `ld` values (the padded
// width, a multiple of 8), the first `width` of them real; the ReLU mask and the GELU input
// are laid out as plan/aux_layout.hpp says.

#include <cstddef>
#include <cstdint>

#include "memopt/core/host_device.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/plan/aux_layout.hpp"

namespace memopt::cuda_backend::epilogue {

/// Loads and stores through float with memopt's own element types (round to nearest even),
/// as the host sees them. Device kernels pass a policy with the same two functions that use
/// the hardware's conversions instead.
///
/// ```cpp
/// float f = HostConvert::load(mo::half(1.5f));
/// mo::half h = HostConvert::store<mo::half>(f);
/// ```
struct HostConvert {
  template <class E>
  static MEMOPT_HD float load(E v) {
    return static_cast<float>(v);
  }
  template <class E>
  static MEMOPT_HD E store(float f) {
    return E(f);
  }
};

/// f(z) for `kind` (Softmax is the loss kernel's: here it leaves z alone, as Linear does).
MEMOPT_HD_INLINE float activate(ActivationKind kind, float z) {
  switch (kind) {
    case ActivationKind::relu:
      return ReLU::apply(z);
    case ActivationKind::sigmoid:
      return Sigmoid::apply(z);
    case ActivationKind::tanh:
      return Tanh::apply(z);
    case ActivationKind::gelu:
      return GELU::apply(z);
    default:
      return z;
  }
}

/// The forward epilogue of one layer: from the float32 product Wx, `out` receives f(z) with
/// z = Wx + b, `pre` (GELU layers that keep their input) z, `mask` (ReLU layers that keep
/// their mask) z > 0. Padding values come out zero everywhere. `product` may be `out` itself
/// when Out is float.
template <class Out, class Bias, class Pre>
struct ForwardArgs {
  ActivationKind kind = ActivationKind::linear;
  const float* product = nullptr;  // rows x ld
  Out* out = nullptr;              // rows x ld
  const Bias* bias = nullptr;      // ld
  Pre* pre = nullptr;              // rows x pre_ld, or nullptr
  std::size_t pre_ld = 0;          // plan::gelu_aux_ld(ld)
  std::uint8_t* mask = nullptr;    // rows x mask_ld bits, or nullptr
  std::size_t mask_ld = 0;         // plan::relu_mask_ld(ld)
  std::size_t rows = 0, width = 0, ld = 0;
};

/// Work items of the forward epilogue: one per 8 consecutive values of a row, so that each
/// item writes whole bytes of the mask and no two items share one.
template <class Out, class Bias, class Pre>
MEMOPT_HD std::size_t forward_items(const ForwardArgs<Out, Bias, Pre>& a) {
  return a.rows * (a.ld / 8);
}

/// Item `item` of the forward epilogue (see forward_items).
template <class Cvt = HostConvert, class Out, class Bias, class Pre>
MEMOPT_HD void forward_item(const ForwardArgs<Out, Bias, Pre>& a, std::size_t item) {
  const std::size_t groups = a.ld / 8;
  const std::size_t r = item / groups, u0 = item % groups * 8;
  unsigned bits = 0;
  for (unsigned e = 0; e < 8; ++e) {
    const std::size_t u = u0 + e, j = r * a.ld + u;
    float z = 0.0f, f = 0.0f;
    if (u < a.width) {
      z = a.product[j] + Cvt::load(a.bias[u]);
      f = activate(a.kind, z);
    }
    if (a.pre) a.pre[r * a.pre_ld + u] = Cvt::template store<Pre>(z);
    if (z > 0.0f) bits |= 1u << e;
    a.out[j] = Cvt::template store<Out>(f);
  }
  if (a.mask) a.mask[(r * a.mask_ld + u0) / 8] = static_cast<std::uint8_t>(bits);
}

/// The backward epilogue of one layer: `grad` receives dL/dz from dL/da, which is read from
/// `product` (the fallback's float32 dX product) or, when that is null, from `grad` itself;
/// f'(z) is read from what the plan kept: the mask (ReLU), z (GELU), the output (Sigmoid,
/// Tanh), nothing (Linear: `out`, `mask` and `pre` may be null and are not read).
template <class T>
struct BackwardArgs {
  ActivationKind kind = ActivationKind::linear;
  const float* product = nullptr;      // rows x ld, or nullptr
  T* grad = nullptr;                   // rows x ld
  const T* out = nullptr;              // rows x ld: a = f(z) (Sigmoid, Tanh)
  const std::uint8_t* mask = nullptr;  // rows x mask_ld bits (ReLU)
  std::size_t mask_ld = 0;
  const T* pre = nullptr;  // rows x pre_ld: z (GELU)
  std::size_t pre_ld = 0;
  std::size_t rows = 0, width = 0, ld = 0;
};

/// dL/dz at row `r`, unit `u`, stored back into `grad` in T; returns the stored value as
/// float (what the weight gradient reads, and what the bias gradient sums, as on the CPU).
/// Padding units get zero.
template <class Cvt = HostConvert, class T>
MEMOPT_HD float backward_value(const BackwardArgs<T>& a, std::size_t r, std::size_t u) {
  const std::size_t j = r * a.ld + u;
  float g = 0.0f;
  if (u < a.width) {
    g = a.product ? a.product[j] : Cvt::load(a.grad[j]);
    switch (a.kind) {
      case ActivationKind::relu:
        // A select, not a product: an inf gradient where the unit was off stays 0, as on the
        // CPU.
        if (!plan::mask_bit(a.mask, a.mask_ld, u, r)) g = 0.0f;
        break;
      case ActivationKind::gelu:
        g *= GELU::derivative(Cvt::load(a.pre[r * a.pre_ld + u]));
        break;
      case ActivationKind::sigmoid:
      case ActivationKind::tanh:
        g *= derivative_from_output(a.kind, Cvt::load(a.out[j]));
        break;
      default:
        break;  // Linear: f' = 1, nothing kept to read
    }
  }
  const T stored = Cvt::template store<T>(g);
  a.grad[j] = stored;
  return Cvt::load(stored);
}

}  // namespace memopt::cuda_backend::epilogue
