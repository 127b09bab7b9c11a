#pragma once
// Backend tags: where a model's plan runs.

#include <string_view>

namespace memopt {

/// The reference backend: host memory, Eigen matrix products. Runs everywhere.
struct cpu {
  static constexpr std::string_view name = "cpu";
};

/// The GPU backend: cuBLASLt with fused epilogues, one CUDA graph per step. Needs
/// `#include <memopt/backend/cuda.hpp>` in a CUDA translation unit and `memopt::cuda`.
struct cuda {
  static constexpr std::string_view name = "cuda";
};

/// An executor for `Spec` on `Backend`; each backend specialises it.
template <class Backend, class Spec>
struct executor_for;

}  // namespace memopt
