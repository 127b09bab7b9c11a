#pragma once
// RandomTranslation on the CPU: the shared affine sampler (backend/cpu/affine_sampler.hpp) with its
// transform, drawn per image in fit; a copy in evaluate and predict.

#include <cstddef>

#include "memopt/backend/cpu/affine_sampler.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/layers/random_translation.hpp"

namespace memopt::cpu_backend {

template <class H, class W, class... Os, class Spec, std::size_t I>
struct LayerKernel<RandomTranslation<H, W, Os...>, Spec, I>
    : AffineAugmentationKernel<RandomTranslation<H, W, Os...>, Spec, I> {};

}  // namespace memopt::cpu_backend
