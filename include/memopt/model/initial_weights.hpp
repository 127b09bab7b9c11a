#pragma once
// initial_weights: Keras's default initializers over a model's table of weights.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "memopt/core/random.hpp"
#include "memopt/model/spec.hpp"

namespace memopt {

/// Draws every weight of `weights` (a ModelSpec's `weights` table) as its layer declares it,
/// in declaration order from one generator seeded with `seed`: Glorot-uniform kernels, zero
/// biases, BatchNormalization's gamma and moving variance ones. Trainable weights land in
/// `trainable`, the others in `state`, at their offsets. Not a template, so that a program
/// with many models compiles it once.
///
/// ```cpp
/// std::vector<float> w(Spec::parameter_count), s(Spec::state_count);
/// mo::initial_weights(Spec::weights, 42, w, s);
/// ```
inline void initial_weights(std::span<const WeightEntry> weights, std::uint64_t seed,
                            std::span<float> trainable, std::span<float> state) {
  Rng rng(seed);
  for (const WeightEntry& e : weights) {
    float* w = (e.decl.trainable ? trainable : state).data() + e.offset;
    const std::size_t n = e.decl.size();
    switch (e.decl.init) {
      case Init::zeros:
        std::fill_n(w, n, 0.0f);
        break;
      case Init::ones:
        std::fill_n(w, n, 1.0f);
        break;
      case Init::glorot_uniform: {
        const float limit = std::sqrt(6.0f / static_cast<float>(e.decl.fan_in + e.decl.fan_out));
        for (std::size_t j = 0; j < n; ++j) w[j] = rng.uniform(-limit, limit);
        break;
      }
    }
  }
}

}  // namespace memopt
