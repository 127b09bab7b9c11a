#pragma once
// Owned cuBLASLt objects: the library handle, matmul descriptors, matrix layouts and
// algorithm-search preferences.

#include <cstdint>
#include <string_view>
#include <utility>

#include <cublasLt.h>

#include "memopt/backend/cuda/status.hpp"

namespace memopt::cuda_backend {

namespace detail {

// One owner for every cuBLASLt object kind: the pointer and the function that destroys it.
template <class Handle, cublasStatus_t (*Destroy)(Handle)>
class LtObject {
 public:
  LtObject() = default;
  LtObject(LtObject&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  LtObject& operator=(LtObject&& o) noexcept {
    if (this != &o) {
      release();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  LtObject(const LtObject&) = delete;
  LtObject& operator=(const LtObject&) = delete;
  ~LtObject() { release(); }

  Handle get() const { return h_; }

 protected:
  Handle h_ = nullptr;

 private:
  void release() noexcept {
    if (h_) (void)Destroy(h_);
    h_ = nullptr;
  }
};

}  // namespace detail

/// The cuBLASLt library context of one executor.
///
/// ```cpp
/// mo::cuda_backend::CublasLtHandle lt;
/// cublasLtMatmul(lt.get(), ...);
/// ```
class CublasLtHandle : public detail::LtObject<cublasLtHandle_t, cublasLtDestroy> {
 public:
  CublasLtHandle() { check(cublasLtCreate(&h_), "cublasLtCreate", "CublasLtHandle"); }
};

/// A matmul descriptor: compute type, scale type, transposes, epilogue and its pointers.
///
/// ```cpp
/// mo::cuda_backend::MatmulDesc d(CUBLAS_COMPUTE_32F, CUDA_R_32F);
/// d.set(CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_RELU_BIAS);
/// ```
class MatmulDesc : public detail::LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> {
 public:
  MatmulDesc() = default;
  MatmulDesc(cublasComputeType_t compute, cudaDataType_t scale) {
    check(cublasLtMatmulDescCreate(&h_, compute, scale), "cublasLtMatmulDescCreate", "MatmulDesc");
  }
  template <class V>
  void set(cublasLtMatmulDescAttributes_t attribute, const V& value) {
    check(cublasLtMatmulDescSetAttribute(h_, attribute, &value, sizeof(V)),
          "cublasLtMatmulDescSetAttribute", "MatmulDesc::set");
  }
};

/// The layout of one matrix: element type, rows, columns and leading dimension (column-major).
///
/// ```cpp
/// mo::cuda_backend::MatrixLayout x(CUDA_R_16F, 784, 256, 784);  // features x batch
/// ```
class MatrixLayout : public detail::LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> {
 public:
  MatrixLayout() = default;
  MatrixLayout(cudaDataType_t type, std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
    check(cublasLtMatrixLayoutCreate(&h_, type, rows, cols, ld), "cublasLtMatrixLayoutCreate",
          "MatrixLayout");
  }
};

/// Preferences for cublasLtMatmulAlgoGetHeuristic: the workspace it may use and the
/// alignment the operands are known to have.
///
/// ```cpp
/// mo::cuda_backend::MatmulPreference p;
/// p.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, std::uint64_t{32} << 20);
/// ```
class MatmulPreference
    : public detail::LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> {
 public:
  MatmulPreference() {
    check(cublasLtMatmulPreferenceCreate(&h_), "cublasLtMatmulPreferenceCreate",
          "MatmulPreference");
  }
  template <class V>
  void set(cublasLtMatmulPreferenceAttributes_t attribute, const V& value) {
    check(cublasLtMatmulPreferenceSetAttribute(h_, attribute, &value, sizeof(V)),
          "cublasLtMatmulPreferenceSetAttribute", "MatmulPreference::set");
  }
};

}  // namespace memopt::cuda_backend
