#pragma once
// Element-wise activations. Each is a tag type with its function and its derivative, in
// float, callable on host and device.

#include <cmath>
#include <string_view>

#include "memopt/core/host_device.hpp"

namespace memopt {

/// What the backward pass needs kept from the forward pass to differentiate an activation.
enum class ActivationKind { linear, relu, sigmoid, tanh, gelu, softmax };

/// f(z) = z.
struct Linear {
  static constexpr ActivationKind kind = ActivationKind::linear;
  static constexpr std::string_view name = "linear";
  static MEMOPT_HD float apply(float z) { return z; }
};

/// f(z) = max(z, 0). Its derivative is read from the output (a > 0). A NaN stays NaN, so
/// that bad input surfaces as a NaN loss instead of vanishing.
struct ReLU {
  static constexpr ActivationKind kind = ActivationKind::relu;
  static constexpr std::string_view name = "relu";
  static MEMOPT_HD float apply(float z) { return !(z <= 0.0f) ? z : 0.0f; }
};

/// f(z) = 1 / (1 + e^-z). Its derivative is a (1 - a).
struct Sigmoid {
  static constexpr ActivationKind kind = ActivationKind::sigmoid;
  static constexpr std::string_view name = "sigmoid";
  static MEMOPT_HD float apply(float z) { return 1.0f / (1.0f + std::exp(-z)); }
};

/// f(z) = tanh z. Its derivative is 1 - a^2.
struct Tanh {
  static constexpr ActivationKind kind = ActivationKind::tanh;
  static constexpr std::string_view name = "tanh";
  static MEMOPT_HD float apply(float z) { return std::tanh(z); }
};

/// GELU in its tanh form, the one cuBLASLt's GELU epilogues and PyTorch's
/// `approximate="tanh"` compute. Its derivative needs the pre-activation z.
struct GELU {
  static constexpr ActivationKind kind = ActivationKind::gelu;
  static constexpr std::string_view name = "gelu";
  static constexpr float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
  static constexpr float k1 = 0.044715f;
  static MEMOPT_HD float apply(float z) {
    return 0.5f * z * (1.0f + std::tanh(k0 * (z + k1 * z * z * z)));
  }
  static MEMOPT_HD float derivative(float z) {
    const float t = std::tanh(k0 * (z + k1 * z * z * z));
    return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * k0 * (1.0f + 3.0f * k1 * z * z);
  }
};

/// Softmax over a sample's outputs. Only the last layer may use it: it is fused with the
/// cross-entropy loss, which makes its gradient simply p - onehot(y).
struct Softmax {
  static constexpr ActivationKind kind = ActivationKind::softmax;
  static constexpr std::string_view name = "softmax";
};

/// f'(z) for activations whose derivative is read from the output a = f(z).
MEMOPT_HD_INLINE float derivative_from_output(ActivationKind kind, float a) {
  switch (kind) {
    case ActivationKind::relu:
      return a > 0.0f ? 1.0f : 0.0f;
    case ActivationKind::sigmoid:
      return a * (1.0f - a);
    case ActivationKind::tanh:
      return 1.0f - a * a;
    default:
      return 1.0f;
  }
}

/// The activation tags memopt knows.
template <class A>
concept ActivationFunction = requires {
  { A::kind } -> std::convertible_to<ActivationKind>;
  { A::name } -> std::convertible_to<std::string_view>;
};

}  // namespace memopt
