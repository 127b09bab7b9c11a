#pragma once
// RandomRotation on the CPU: the shared affine sampler (backend/cpu/affine_sampler.hpp) with its
// transform, drawn per image in fit; a copy in evaluate and predict.

#include <cstddef>

#include "memopt/backend/cpu/affine_sampler.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/layers/random_rotation.hpp"

namespace memopt::cpu_backend {

template <class F, class... Os, class Spec, std::size_t I>
struct LayerKernel<RandomRotation<F, Os...>, Spec, I>
    : AffineAugmentationKernel<RandomRotation<F, Os...>, Spec, I> {};

}  // namespace memopt::cpu_backend
