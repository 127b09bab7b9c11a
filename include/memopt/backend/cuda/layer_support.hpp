#pragma once
// Which layers the CUDA backend runs today: Dense only. A model with any other layer fails to
// compile for mo::cuda, naming the layer, rather than failing deep inside the executor; so
// does a policy asking for what its step does not do (UpdateInBackward).

#include <cstddef>
#include <type_traits>

#include "memopt/core/type_list.hpp"
#include "memopt/core/update_in_backward.hpp"
#include "memopt/layers.hpp"

namespace memopt::cuda_backend {

template <class L>
struct LayerSupport {
  static_assert(::memopt::detail::dependent_false<L>,
                "this layer is not yet supported by the CUDA backend; use mo::cpu");
};
template <std::size_t U, class A>
struct LayerSupport<Dense<U, A>> {
  static constexpr bool value = true;
};
template <std::size_t F, auto K, class... Os>
struct LayerSupport<Conv2D<F, K, Os...>> {
  static_assert(::memopt::detail::dependent_false<Conv2D<F, K, Os...>>,
                "Conv2D: not yet supported by the CUDA backend; use mo::cpu");
};
template <auto K, class... Os>
struct LayerSupport<DepthwiseConv2D<K, Os...>> {
  static_assert(::memopt::detail::dependent_false<decltype(K)>,
                "DepthwiseConv2D: not yet supported by the CUDA backend; use mo::cpu");
};
template <std::size_t F, auto K, class... Os>
struct LayerSupport<SeparableConv2D<F, K, Os...>> {
  static_assert(::memopt::detail::dependent_false<decltype(K)>,
                "SeparableConv2D: not yet supported by the CUDA backend; use mo::cpu");
};
template <auto K, class... Os>
struct LayerSupport<MaxPooling2D<K, Os...>> {
  static_assert(::memopt::detail::dependent_false<decltype(K)>,
                "MaxPooling2D: not yet supported by the CUDA backend; use mo::cpu");
};
template <auto K, class... Os>
struct LayerSupport<AveragePooling2D<K, Os...>> {
  static_assert(::memopt::detail::dependent_false<decltype(K)>,
                "AveragePooling2D: not yet supported by the CUDA backend; use mo::cpu");
};
template <>
struct LayerSupport<GlobalAveragePooling2D> {
  static constexpr bool value = false;  // checked below, with its name
};
template <>
struct LayerSupport<Flatten> {
  static constexpr bool value = false;
};
template <>
struct LayerSupport<Add> {
  static constexpr bool value = false;  // checked below: a Residual's, named as such
};
template <class R>
struct LayerSupport<Dropout<R>> {
  static_assert(::memopt::detail::dependent_false<R>,
                "Dropout: not yet supported by the CUDA backend; use mo::cpu");
};
template <class M, class E>
struct LayerSupport<BatchNormalizationWith<M, E>> {
  static_assert(::memopt::detail::dependent_false<M>,
                "BatchNormalization: not yet supported by the CUDA backend; use mo::cpu");
};
template <class M>
struct LayerSupport<RandomFlip<M>> {
  static_assert(::memopt::detail::dependent_false<M>,
                "RandomFlip: not yet supported by the CUDA backend; use mo::cpu");
};
template <class F, class... Os>
struct LayerSupport<RandomContrast<F, Os...>> {
  static_assert(::memopt::detail::dependent_false<F>,
                "RandomContrast: not yet supported by the CUDA backend; use mo::cpu");
};
template <std::size_t H, std::size_t W>
struct LayerSupport<RandomCrop<H, W>> {
  static_assert(::memopt::detail::dependent_false<RandomCrop<H, W>>,
                "RandomCrop: not yet supported by the CUDA backend; use mo::cpu");
};
template <class A>
struct LayerSupport<Activation<A>> {
  static_assert(::memopt::detail::dependent_false<A>,
                "Activation: not yet supported by the CUDA backend; use mo::cpu, or give the "
                "activation to the Dense layer before it (Dense<64, ReLU>)");
};
template <class H, class W, class... Os>
struct LayerSupport<RandomTranslation<H, W, Os...>> {
  static_assert(::memopt::detail::dependent_false<H>,
                "RandomTranslation: not yet supported by the CUDA backend; use mo::cpu");
};
template <class H, class... Rest>
struct LayerSupport<RandomZoom<H, Rest...>> {
  static_assert(::memopt::detail::dependent_false<H>,
                "RandomZoom: not yet supported by the CUDA backend; use mo::cpu");
};
template <class F, class... Os>
struct LayerSupport<RandomRotation<F, Os...>> {
  static_assert(::memopt::detail::dependent_false<F>,
                "RandomRotation: not yet supported by the CUDA backend; use mo::cpu");
};
template <class S, class O>
struct LayerSupport<Rescaling<S, O>> {
  static_assert(::memopt::detail::dependent_false<S>,
                "Rescaling: not yet supported by the CUDA backend; use mo::cpu");
};

template <class... Ls>
consteval bool supports_layers(type_list<Ls...>*) {
  static_assert((!std::is_same_v<Ls, GlobalAveragePooling2D> && ...),
                "GlobalAveragePooling2D: not yet supported by the CUDA backend; use mo::cpu");
  static_assert((!std::is_same_v<Ls, Flatten> && ...),
                "Flatten: not yet supported by the CUDA backend; use mo::cpu");
  static_assert((!std::is_same_v<Ls, Add> && ...),
                "Residual: not yet supported by the CUDA backend; use mo::cpu");
  return (LayerSupport<Ls>::value && ...);
}

// The policy's options beyond precision that the CUDA step does not run.
template <class P>
consteval bool supports_policy() {
  static_assert(!updates_in_backward_v<P>,
                "UpdateInBackward: not yet supported by the CUDA backend; use mo::cpu (its "
                "fused update runs once per step, after backward)");
  return !updates_in_backward_v<P>;
}

/// True when the CUDA backend runs every layer of `Spec` and its policy; otherwise a
/// diagnostic names the first layer (or the policy's option) it does not.
template <class Spec>
inline constexpr bool supports_v = supports_layers(static_cast<typename Spec::layers*>(nullptr)) &&
                                   supports_policy<typename Spec::policy>();

}  // namespace memopt::cuda_backend
