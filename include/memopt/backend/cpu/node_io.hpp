#pragma once
// What the CPU executor hands a layer's kernel for one step: the plan's buffers for that node,
// resolved to pointers. A kernel never looks up the plan itself.

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "memopt/backend/cpu/parallel_rows.hpp"
#include "memopt/backend/cpu/relu_mask.hpp"
#include "memopt/core/convert.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/plan/aux_layout.hpp"

namespace memopt::cpu_backend {

/// Float values of `count` elements at `p`: `p` itself for float, else converted into scratch.
template <class U>
const float* to_float(const U* p, std::size_t count, float* scratch) {
  if constexpr (std::is_same_v<U, float>) {
    return p;
  } else {
    convert(p, scratch, count);
    return scratch;
  }
}

/// A forward pass of one node over `rows` samples. `Out` is the compute type `T`, or float
/// for the last node (its logits). Pointers the plan has no buffer for in this pass are null:
/// inference keeps nothing for backward.
template <class T, class Out>
struct ForwardIo {
  std::size_t rows = 0;
  const T* x = nullptr;
  const T* x2 = nullptr;  // a second input: Add's shortcut
  Out* y = nullptr;
  std::uint8_t* relu_mask = nullptr;  // ReLU's z > 0 (plan/aux_layout.hpp's layout)
  T* pre_activation = nullptr;        // GELU's z, leading dimension gelu_aux_ld(width)
  std::array<std::byte*, 2> saved{};  // the node's SavedDecl buffers
  const float* params = nullptr;      // the node's float32 master weights
  const T* weights = nullptr;         // the same in the compute type
  float* state = nullptr;             // the node's non-trainable weights
  bool training = false;              // fit's forward (Dropout drops, BatchNormalization
                                      // uses the batch's statistics) or a recomputation
  bool update_state = false;          // fit's first forward: update moving statistics
  std::uint64_t seed = 0;             // this step's random stream (Dropout)
  float* scratch = nullptr;           // the node's scratch_bytes(rows)
};

/// The derivative of the activation of the node below, which a node's input gradient applies
/// before it stores dL/dz of that node (Keras's activation, fused as cuBLASLt's DRELU/DGELU).
/// The executor, which knows the kind at compile time, points `derivative` at that kind's
/// loop, so that a program compiles only the derivatives its models use.
template <class T>
struct ActivationGrad {
  ActivationKind kind = ActivationKind::linear;
  std::size_t width = 0;                    // values per sample
  const std::uint8_t* relu_mask = nullptr;  // ReLU
  const T* pre_activation = nullptr;        // GELU
  const T* output = nullptr;                // Sigmoid, Tanh
  // multiply_by_derivative<kind>, or null for f' = 1
  void (*derivative)(const ActivationGrad&, float*, std::size_t) = nullptr;

  /// da *= f'(z), row after row, for `rows` samples of `width` floats.
  void apply(float* da, std::size_t rows) const {
    if (derivative != nullptr) derivative(*this, da, rows);
  }

  template <ActivationKind Kind>
  static void multiply_by_derivative(const ActivationGrad& g, float* da, std::size_t rows) {
    const std::size_t width = g.width;
    parallel_rows(rows, width, [&](std::size_t begin, std::size_t end) {
      if constexpr (Kind == ActivationKind::relu) {
        // Each sample's bits start on a byte (the leading dimension is a multiple of 128).
        const std::size_t row_bytes = plan::relu_mask_ld(width) / 8;
        for (std::size_t r = begin; r < end; ++r)
          mask_relu_gradient(g.relu_mask + r * row_bytes, 0, da + r * width, width);
      } else if constexpr (Kind == ActivationKind::gelu) {
        const std::size_t ld = plan::gelu_aux_ld(width);
        for (std::size_t r = begin; r < end; ++r)
          for (std::size_t u = 0; u < width; ++u)
            da[r * width + u] *= GELU::derivative(static_cast<float>(g.pre_activation[r * ld + u]));
      } else if constexpr (Kind == ActivationKind::sigmoid || Kind == ActivationKind::tanh) {
        for (std::size_t j = begin * width; j < end * width; ++j)
          da[j] *= derivative_from_output(Kind, static_cast<float>(g.output[j]));
      }
    });
  }

  /// `multiply_by_derivative<Kind>`, or null where f' is 1 (linear, or Softmax: the loss's).
  template <ActivationKind Kind>
  static constexpr auto derivative_of() {
    using Fn = void (*)(const ActivationGrad&, float*, std::size_t);
    if constexpr (Kind == ActivationKind::linear || Kind == ActivationKind::softmax)
      return Fn{nullptr};
    else
      return Fn{&multiply_by_derivative<Kind>};
  }
};

/// The backward steps of one node over `rows` samples: `dy` is dL/dz of this node (its
/// activation's derivative already applied), `dx` receives dL/dz of the node below (the
/// executor sums it with a residual's other branch where two nodes read that node).
template <class T>
struct BackwardIo {
  std::size_t rows = 0;
  const T* x = nullptr;
  const T* dy = nullptr;
  T* dx = nullptr;
  T* dx2 = nullptr;  // Add's: dL/dz of its second input, null where that takes no gradient
  std::array<std::byte*, 2> saved{};
  const float* params = nullptr;
  const T* weights = nullptr;
  float* state = nullptr;
  float* grads = nullptr;  // the node's slice of the parameter gradients
  ActivationGrad<T> below{};
  ActivationGrad<T> below2{};  // of the node that is Add's second input
  std::uint64_t seed = 0;      // the forward's random stream: a random layer redraws, not stores
  float* scratch = nullptr;
};

/// Whether an input gradient applies the derivative of an activation below it: not of a
/// linear one, nor of Softmax (the loss's business).
constexpr bool applies_derivative(ActivationKind k) {
  return k != ActivationKind::linear && k != ActivationKind::softmax;
}

/// Applies the derivative of the activation of the node below to the `io.rows` rows of
/// `io.dx` that an input gradient has just written (through float scratch for 16-bit `T`).
template <class T>
void apply_activation_grad(const BackwardIo<T>& io) {
  if (!applies_derivative(io.below.kind)) return;
  if constexpr (std::is_same_v<T, float>) {
    io.below.apply(io.dx, io.rows);
  } else {
    const std::size_t n = io.rows * io.below.width;
    convert(io.dx, io.scratch, n);
    io.below.apply(io.scratch, io.rows);
    convert(io.scratch, io.dx, n);
  }
}

/// Bytes of the float scratch that apply_activation_grad takes in node `I`'s input gradient,
/// `rows` rows of it: none under float32, on the model's input, below an activation whose
/// derivative is not applied, or below a ReLU that the input gradient carries itself (a
/// tiling max pool's argmax: BackwardReads::input_grad_carries_relu_below).
template <class Spec, std::size_t I>
constexpr std::size_t activation_grad_scratch_bytes(std::size_t rows) {
  if constexpr (std::is_same_v<typename Spec::compute_type, float> ||
                Spec::nodes[I].sources[0] < 0) {
    return 0;
  } else {
    constexpr ActivationKind below = Spec::input_activation(I);
    constexpr bool carried =
        below == ActivationKind::relu && Spec::nodes[I].reads.input_grad_carries_relu_below;
    return applies_derivative(below) && !carried ? rows * Spec::nodes[I].in.size() * sizeof(float)
                                                 : 0;
  }
}

/// f(z) for an activation kind known at compile time (Softmax is the loss's business).
template <ActivationKind Act>
inline float activate(float z) {
  if constexpr (Act == ActivationKind::relu)
    return ReLU::apply(z);
  else if constexpr (Act == ActivationKind::sigmoid)
    return Sigmoid::apply(z);
  else if constexpr (Act == ActivationKind::tanh)
    return Tanh::apply(z);
  else if constexpr (Act == ActivationKind::gelu)
    return GELU::apply(z);
  else
    return z;
}

/// Adds the per-channel bias to `z` (rows x channels, channels fastest), applies the activation
/// and writes what backward needs (ReLU's mask, GELU's z) where `io` has buffers for them, then
/// stores the result in `io.y`. `z` may be `io.y` itself when `Out` is float.
template <ActivationKind Act, class T, class Out>
void bias_activation_epilogue(float* z, const float* bias, std::size_t rows, std::size_t channels,
                              std::size_t per_sample, const ForwardIo<T, Out>& io) {
  const std::size_t mask_row_bytes = plan::relu_mask_ld(per_sample) / 8;
  const std::size_t pre_ld = plan::gelu_aux_ld(per_sample);
  const bool converts = static_cast<const void*>(z) != static_cast<const void*>(io.y);
  parallel_rows(rows, per_sample, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) {
      float* zr = z + r * per_sample;
      if (bias)
        for (std::size_t p = 0; p < per_sample; p += channels)
          for (std::size_t c = 0; c < channels; ++c) zr[p + c] += bias[c];
      if constexpr (Act == ActivationKind::gelu)
        if (io.pre_activation)
          for (std::size_t j = 0; j < per_sample; ++j) io.pre_activation[r * pre_ld + j] = T(zr[j]);
      if constexpr (Act == ActivationKind::relu)
        if (io.relu_mask) pack_relu_mask(zr, per_sample, io.relu_mask + r * mask_row_bytes);
      if constexpr (Act != ActivationKind::linear && Act != ActivationKind::softmax)
        for (std::size_t j = 0; j < per_sample; ++j) zr[j] = activate<Act>(zr[j]);
    }
    if (converts)
      convert(z + begin * per_sample, io.y + begin * per_sample, (end - begin) * per_sample);
  });
}

/// Writes ReLU's mask for the `io.rows` rows of `io.y`, which a library primitive has written
/// as relu(z) with the ReLU fused: relu(z) > 0 exactly where z > 0 (a NaN is neither), so
/// the mask needs no pre-activation and no float copy of a 16-bit output.
template <class T, class Out>
void relu_mask_of_output(std::size_t per_sample, const ForwardIo<T, Out>& io) {
  if (!io.relu_mask) return;
  const std::size_t row_bytes = plan::relu_mask_ld(per_sample) / 8;
  parallel_rows(io.rows, per_sample, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r)
      pack_relu_mask(io.y + r * per_sample, per_sample, io.relu_mask + r * row_bytes);
  });
}

/// Applies `Act` to `io.y` in place, which a library primitive has just written with its bias
/// added, keeping what backward needs (ReLU's mask, GELU's z); 16-bit values pass through
/// float scratch of `rows * per_sample` floats.
template <ActivationKind Act, class T, class Out>
void activation_epilogue(std::size_t channels, std::size_t per_sample,
                         const ForwardIo<T, Out>& io) {
  if constexpr (Act == ActivationKind::linear) {
    return;
  } else if constexpr (std::is_same_v<Out, float>) {
    bias_activation_epilogue<Act>(io.y, nullptr, io.rows, channels, per_sample, io);
  } else {
    convert(io.y, io.scratch, io.rows * per_sample);
    bias_activation_epilogue<Act>(io.scratch, nullptr, io.rows, channels, per_sample, io);
  }
}

}  // namespace memopt::cpu_backend
