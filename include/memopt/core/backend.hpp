#pragma once
// Backend tags: where a model's plan runs.

#include <string_view>

namespace memopt {

/// The reference backend: host memory, oneDNN's matmul and convolutions. Runs everywhere.
struct cpu {
  static constexpr std::string_view name = "cpu";
};

/// The GPU backend: cuBLASLt with fused epilogues, one CUDA graph per step. Needs
/// `#include <memopt/backend/cuda.hpp>` in a CUDA translation unit and `memopt::cuda`.
struct cuda {
  static constexpr std::string_view name = "cuda";
};

namespace detail {
template <class T>
inline constexpr bool backend_not_included = false;
}  // namespace detail

/// An executor for `Spec` on `Backend`; each backend's header specialises it. Without that
/// header the model cannot run, and says which header to include.
template <class Backend, class Spec>
struct executor_for {
  static_assert(detail::backend_not_included<Backend>,
                "Model: this backend's executor is not included in this file. For mo::cpu, "
                "include <memopt/backend/cpu.hpp> (or <memopt/memopt.hpp>). For mo::cuda, "
                "include <memopt/backend/cuda.hpp>, compile the file with nvcc as CUDA (a .cu "
                "file) and link memopt::cuda");
  using type = void;
};

}  // namespace memopt
