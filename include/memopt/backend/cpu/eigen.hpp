#pragma once
// The few Eigen pieces the CPU backend uses: column-major float maps and three products.

#include <cstddef>

#include <Eigen/Core>

namespace memopt::cpu_backend {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using MatrixMap = Eigen::Map<Matrix>;
using ConstMatrixMap = Eigen::Map<const Matrix>;

inline ConstMatrixMap view(const float* p, std::size_t rows, std::size_t cols) {
  return {p, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols)};
}
inline MatrixMap view(float* p, std::size_t rows, std::size_t cols) {
  return {p, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols)};
}

/// out (m x n) = a (m x k) * b (k x n)
inline void gemm_nn(const float* a, const float* b, float* out, std::size_t m, std::size_t k,
                    std::size_t n) {
  view(out, m, n).noalias() = view(a, m, k) * view(b, k, n);
}

/// out (m x n) = a (m x k) * b^T, with b (n x k)
inline void gemm_nt(const float* a, const float* b, float* out, std::size_t m, std::size_t k,
                    std::size_t n) {
  view(out, m, n).noalias() = view(a, m, k) * view(b, n, k).transpose();
}

/// out (m x n) = a^T * b (k x n), with a (k x m)
inline void gemm_tn(const float* a, const float* b, float* out, std::size_t m, std::size_t k,
                    std::size_t n) {
  view(out, m, n).noalias() = view(a, k, m).transpose() * view(b, k, n);
}

}  // namespace memopt::cpu_backend
