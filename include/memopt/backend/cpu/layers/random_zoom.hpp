#pragma once
// RandomZoom on the CPU: the shared affine sampler (backend/cpu/affine_sampler.hpp) with its
// transform, drawn per image in fit; a copy in evaluate and predict.

#include <cstddef>

#include "memopt/backend/cpu/affine_sampler.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/layers/random_zoom.hpp"

namespace memopt::cpu_backend {

template <class H, class... Rest, class Spec, std::size_t I>
struct LayerKernel<RandomZoom<H, Rest...>, Spec, I>
    : AffineAugmentationKernel<RandomZoom<H, Rest...>, Spec, I> {};

}  // namespace memopt::cpu_backend
