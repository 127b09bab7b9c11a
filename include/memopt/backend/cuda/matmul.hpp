#pragma once
// Matmul: one cuBLASLt product with its epilogue, its algorithm chosen once.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <cublasLt.h>

#include "memopt/backend/cuda/cublaslt.hpp"
#include "memopt/backend/cuda/status.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cuda_backend {

/// Workspace every product may use: what cuBLASLt's Hopper kernels want for large shapes.
inline constexpr std::size_t matmul_workspace_bytes = std::size_t{32} << 20;

/// Everything cuBLASLt needs to pick an algorithm for `D = op(A) op(B)` (column-major, alpha
/// 1, beta 0) and its epilogue. Pointers are not part of it: they are bound at `run`, so a
/// choice made before the arena exists stays valid. The alignments say what the pointers
/// bound later will have (cuBLASLt's default assumption is 256 bytes).
struct MatmulShape {
  std::string where;  // for messages: "dense_1 dX"
  cublasOperation_t trans_a = CUBLAS_OP_N;
  cublasOperation_t trans_b = CUBLAS_OP_N;
  std::uint64_t m = 0, n = 0, k = 0;
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  cudaDataType_t a_type = CUDA_R_32F;
  cudaDataType_t b_type = CUDA_R_32F;
  cudaDataType_t d_type = CUDA_R_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  std::int64_t aux_ld = 0;  // bits for ReLU masks, elements for GELU inputs
  int bias_type = -1;       // a cudaDataType_t, or -1 for cuBLASLt's default (D's type)
  std::uint32_t align_a = 256, align_b = 256, align_d = 256, align_bias = 256, align_aux = 256;
  std::uint64_t max_workspace = matmul_workspace_bytes;
};

/// Whether `e` reads or writes the bias pointer (a bias, or a bias gradient).
constexpr bool epilogue_uses_bias(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_GELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    case CUBLASLT_EPILOGUE_BGRADA:
    case CUBLASLT_EPILOGUE_BGRADB:
      return true;
    default:
      return false;
  }
}

/// Whether `e` reads or writes the auxiliary matrix (a ReLU mask or a GELU input).
constexpr bool epilogue_uses_aux(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_RELU_AUX:
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DRELU:
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
    case CUBLASLT_EPILOGUE_GELU_AUX:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    case CUBLASLT_EPILOGUE_DGELU:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
      return true;
    default:
      return false;
  }
}

constexpr std::string_view epilogue_name(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      return "DEFAULT";
    case CUBLASLT_EPILOGUE_RELU:
      return "RELU";
    case CUBLASLT_EPILOGUE_BIAS:
      return "BIAS";
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_RELU_AUX:
      return "RELU_AUX";
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
      return "RELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DRELU:
      return "DRELU";
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
      return "DRELU_BGRAD";
    case CUBLASLT_EPILOGUE_GELU:
      return "GELU";
    case CUBLASLT_EPILOGUE_GELU_AUX:
      return "GELU_AUX";
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return "GELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
      return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_DGELU:
      return "DGELU";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
      return "DGELU_BGRAD";
    case CUBLASLT_EPILOGUE_BGRADA:
      return "BGRADA";
    case CUBLASLT_EPILOGUE_BGRADB:
      return "BGRADB";
    default:
      return "?";
  }
}

constexpr std::string_view data_type_name(int t) {
  switch (t) {
    case CUDA_R_32F:
      return "32F";
    case CUDA_R_16F:
      return "16F";
    case CUDA_R_16BF:
      return "16BF";
    case -1:
      return "default";
    default:
      return "?";
  }
}

/// Describes a shape for error messages.
inline std::string describe(const MatmulShape& s) {
  const auto op = [](cublasOperation_t o) { return o == CUBLAS_OP_N ? "N" : "T"; };
  std::string d = s.where + ": m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                  " k=" + std::to_string(s.k) + ", A " + std::string(data_type_name(s.a_type)) +
                  " (" + op(s.trans_a) + ", ld " + std::to_string(s.lda) + "), B " +
                  std::string(data_type_name(s.b_type)) + " (" + op(s.trans_b) + ", ld " +
                  std::to_string(s.ldb) + "), D " + std::string(data_type_name(s.d_type)) +
                  " (ld " + std::to_string(s.ldd) + "), epilogue " +
                  std::string(epilogue_name(s.epilogue));
  if (epilogue_uses_aux(s.epilogue)) d += " (aux ld " + std::to_string(s.aux_ld) + ")";
  if (epilogue_uses_bias(s.epilogue)) d += ", bias " + std::string(data_type_name(s.bias_type));
  return d;
}

/// One product `D = op(A) op(B)` with its epilogue and the algorithm cuBLASLt's heuristic
/// chose for it. Made once per layer, pass and batch size; run any number of times (also
/// while a CUDA graph is being captured).
///
/// ```cpp
/// MatmulShape s{.where = "dense forward", .m = 128, .n = 256, .k = 784, .lda = 128,
///               .ldb = 784, .ldd = 128, .epilogue = CUBLASLT_EPILOGUE_RELU_BIAS};
/// Matmul mm = Matmul::require(lt.get(), s);
/// mm.run(lt.get(), stream, w, x, y, bias, nullptr, workspace);
/// ```
class Matmul {
 public:
  /// The product, or nothing when cuBLASLt has no algorithm for this combination (the
  /// heuristic found none, or refused the combination as unsupported or invalid). `status`,
  /// when given, receives what the heuristic said.
  static std::optional<Matmul> find(cublasLtHandle_t lt, const MatmulShape& shape,
                                    cublasStatus_t* status = nullptr) {
    Matmul mm;
    mm.shape_ = shape;
    mm.desc_ = MatmulDesc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
    mm.desc_.set(CUBLASLT_MATMUL_DESC_TRANSA, shape.trans_a);
    mm.desc_.set(CUBLASLT_MATMUL_DESC_TRANSB, shape.trans_b);
    mm.desc_.set(CUBLASLT_MATMUL_DESC_EPILOGUE, shape.epilogue);
    if (epilogue_uses_bias(shape.epilogue)) {
      if (shape.bias_type != -1) mm.desc_.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, shape.bias_type);
      // The heuristic reads only the alignment of this value: a stand-in with the alignment
      // the real pointer will have.
      mm.desc_.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, stand_in(shape.align_bias));
    }
    if (epilogue_uses_aux(shape.epilogue)) {
      mm.desc_.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, shape.aux_ld);
      mm.desc_.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, stand_in(shape.align_aux));
    }
    const bool ta = shape.trans_a != CUBLAS_OP_N, tb = shape.trans_b != CUBLAS_OP_N;
    mm.a_ = MatrixLayout(shape.a_type, ta ? shape.k : shape.m, ta ? shape.m : shape.k, shape.lda);
    mm.b_ = MatrixLayout(shape.b_type, tb ? shape.n : shape.k, tb ? shape.k : shape.n, shape.ldb);
    mm.d_ = MatrixLayout(shape.d_type, shape.m, shape.n, shape.ldd);

    MatmulPreference pref;
    pref.set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, shape.max_workspace);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, shape.align_a);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, shape.align_b);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, shape.align_d);
    pref.set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, shape.align_d);

    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t s =
        cublasLtMatmulAlgoGetHeuristic(lt, mm.desc_.get(), mm.a_.get(), mm.b_.get(), mm.d_.get(),
                                       mm.d_.get(), pref.get(), 1, &result, &found);
    if (s == CUBLAS_STATUS_SUCCESS && (found == 0 || result.state != CUBLAS_STATUS_SUCCESS))
      s = CUBLAS_STATUS_NOT_SUPPORTED;
    if (status) *status = s;
    if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE) return std::nullopt;
    check(s, "cublasLtMatmulAlgoGetHeuristic", describe(shape));
    mm.algo_ = result.algo;
    mm.workspace_ = result.workspaceSize;
    return mm;
  }

  /// The product, or `memopt::error` describing the combination cuBLASLt cannot run.
  static Matmul require(cublasLtHandle_t lt, const MatmulShape& shape) {
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    std::optional<Matmul> mm = find(lt, shape, &status);
    if (!mm)
      throw error("cublasLtMatmulAlgoGetHeuristic: expected an algorithm for " + describe(shape) +
                  ", found none (" + cublasLtGetStatusName(status) + ")");
    return std::move(*mm);
  }

  /// Queues the product on `stream`. `bias` and `aux` are read or written as the epilogue
  /// says; `workspace` holds at least `matmul_workspace_bytes`.
  void run(cublasLtHandle_t lt, cudaStream_t stream, const void* a, const void* b, void* d,
           const void* bias, const void* aux, void* workspace) {
    if (epilogue_uses_bias(shape_.epilogue)) desc_.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
    if (epilogue_uses_aux(shape_.epilogue))
      desc_.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
    const float alpha = 1.0f, beta = 0.0f;
    check(cublasLtMatmul(lt, desc_.get(), &alpha, a, a_.get(), b, b_.get(), &beta, d, d_.get(), d,
                         d_.get(), &algo_, workspace, workspace_, stream),
          "cublasLtMatmul", describe(shape_));
  }

  const MatmulShape& shape() const { return shape_; }
  std::size_t workspace_bytes() const { return workspace_; }

 private:
  Matmul() = default;
  static const void* stand_in(std::uint32_t alignment) {
    return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(alignment));
  }

  MatmulShape shape_{};
  MatmulDesc desc_{};
  MatrixLayout a_{}, b_{}, d_{};
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_ = 0;
};

}  // namespace memopt::cuda_backend
