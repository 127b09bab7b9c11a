#pragma once
// Status checks for the CUDA runtime and cuBLASLt. Every call the backend makes goes through
// one of these, so a failure names the call, the status and the part of the model that made it.

#include <cstddef>
#include <string>
#include <string_view>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "memopt/core/error.hpp"

namespace memopt::cuda_backend {

namespace detail {

inline std::string status_message(std::string_view call, std::string_view status,
                                  std::string_view description, std::string_view where) {
  std::string m;
  m.reserve(call.size() + status.size() + description.size() + where.size() + 32);
  m.append(call).append(" failed: ").append(status);
  if (!description.empty()) m.append(" (").append(description).append(")");
  if (!where.empty()) m.append(" in ").append(where);
  return m;
}

}  // namespace detail

/// Throws `memopt::error` naming `call`, the status and `where` (a layer, or what the backend
/// was doing) unless `status` is `cudaSuccess`.
///
/// ```cpp
/// check(cudaStreamSynchronize(s), "cudaStreamSynchronize", "take_totals");
/// // memopt::error: cudaStreamSynchronize failed: cudaErrorIllegalAddress (an illegal
/// //                memory access was encountered) in take_totals
/// ```
inline void check(cudaError_t status, std::string_view call, std::string_view where = {}) {
  if (status == cudaSuccess) return;
  throw error(
      detail::status_message(call, cudaGetErrorName(status), cudaGetErrorString(status), where));
}

/// The same for cuBLASLt statuses.
///
/// ```cpp
/// check(cublasLtMatmul(...), "cublasLtMatmul", "dense_1 forward");
/// ```
inline void check(cublasStatus_t status, std::string_view call, std::string_view where = {}) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw error(detail::status_message(call, cublasLtGetStatusName(status),
                                     cublasLtGetStatusString(status), where));
}

/// Checks the launch of the kernel just queued (launch errors surface through
/// cudaGetLastError, not through the launch expression).
///
/// ```cpp
/// my_kernel<<<grid, block, 0, stream>>>(...);
/// check_launch("my_kernel", "loss");
/// ```
inline void check_launch(std::string_view kernel, std::string_view where = {}) {
  check(cudaGetLastError(), kernel, where);
}

/// Whether a usable GPU is present: any error from cudaGetDeviceCount (no driver, a driver
/// older than the toolkit, no device) counts as none.
///
/// ```cpp
/// if (!mo::cuda_backend::gpu_available()) std::puts("[skipped: no GPU]");
/// ```
inline bool gpu_available() {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  return devices > 0;
}

}  // namespace memopt::cuda_backend
