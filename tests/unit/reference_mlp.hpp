#pragma once
// A float64 reference MLP for tests: forward, loss and backward written plainly, with no
// arena and no fusion, to check the backends against.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <memopt/layers/activation.hpp>

namespace memopt::testing {

struct ReferenceMlp {
  std::vector<std::size_t> dims;            // input width, then each layer's units
  std::vector<ActivationKind> activations;  // per layer
  std::vector<double> params;               // per layer: kernel (units x inputs, col-major), bias

  template <class Spec>
  static ReferenceMlp of(std::span<const float> weights) {
    ReferenceMlp r;
    r.dims.assign(Spec::dims.begin(), Spec::dims.end());
    r.activations.assign(Spec::activations.begin(), Spec::activations.end());
    r.params.assign(weights.begin(), weights.end());
    return r;
  }

  std::size_t depth() const { return activations.size(); }
  std::size_t kernel(std::size_t l) const {
    std::size_t o = 0;
    for (std::size_t i = 0; i < l; ++i) o += dims[i] * dims[i + 1] + dims[i + 1];
    return o;
  }
  std::size_t bias(std::size_t l) const { return kernel(l) + dims[l] * dims[l + 1]; }

  static double act(ActivationKind k, double z) {
    switch (k) {
      case ActivationKind::relu:
        return z > 0 ? z : 0;
      case ActivationKind::sigmoid:
        return 1 / (1 + std::exp(-z));
      case ActivationKind::tanh:
        return std::tanh(z);
      case ActivationKind::gelu: {
        const double c = std::sqrt(2 / 3.14159265358979323846);
        return 0.5 * z * (1 + std::tanh(c * (z + 0.044715 * z * z * z)));
      }
      default:
        return z;
    }
  }
  static double act_grad(ActivationKind k, double z) {
    const double h = 1e-6;  // central difference of the activation itself, in double
    if (k == ActivationKind::relu) return z > 0 ? 1 : 0;
    return (act(k, z + h) - act(k, z - h)) / (2 * h);
  }

  // Pre-activations z[l] and outputs a[l] (a[0] = x) for `rows` samples.
  void forward(std::span<const float> x, std::size_t rows, std::vector<std::vector<double>>& z,
               std::vector<std::vector<double>>& a) const {
    const std::size_t L = depth();
    z.assign(L + 1, {});
    a.assign(L + 1, {});
    a[0].assign(x.begin(), x.end());
    for (std::size_t l = 0; l < L; ++l) {
      const std::size_t in = dims[l], out = dims[l + 1];
      z[l + 1].assign(out * rows, 0.0);
      a[l + 1].assign(out * rows, 0.0);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t u = 0; u < out; ++u) {
          double s = params[bias(l) + u];
          for (std::size_t k = 0; k < in; ++k)
            s += params[kernel(l) + k * out + u] * a[l][r * in + k];
          z[l + 1][r * out + u] = s;
          a[l + 1][r * out + u] = l + 1 == L ? s : act(activations[l], s);
        }
    }
  }

  // Softmax probabilities of the last layer's outputs.
  std::vector<double> probabilities(std::span<const float> x, std::size_t rows) const {
    std::vector<std::vector<double>> z, a;
    forward(x, rows, z, a);
    const std::size_t k = dims.back();
    std::vector<double> p = a.back();
    for (std::size_t r = 0; r < rows; ++r) {
      double m = p[r * k], sum = 0;
      for (std::size_t u = 0; u < k; ++u) m = std::max(m, p[r * k + u]);
      for (std::size_t u = 0; u < k; ++u) sum += (p[r * k + u] = std::exp(p[r * k + u] - m));
      for (std::size_t u = 0; u < k; ++u) p[r * k + u] /= sum;
    }
    return p;
  }

  double loss(std::span<const float> x, std::span<const std::int32_t> y) const {
    const std::size_t rows = y.size(), k = dims.back();
    const std::vector<double> p = probabilities(x, rows);
    double l = 0;
    for (std::size_t r = 0; r < rows; ++r) l -= std::log(p[r * k + static_cast<std::size_t>(y[r])]);
    return l / static_cast<double>(rows);
  }

  // dLoss/dparams by backpropagation, in double.
  std::vector<double> gradients(std::span<const float> x, std::span<const std::int32_t> y) const {
    const std::size_t rows = y.size(), L = depth(), k = dims.back();
    std::vector<std::vector<double>> z, a;
    forward(x, rows, z, a);
    std::vector<double> g(params.size(), 0.0);
    std::vector<double> dz = probabilities(x, rows);
    for (std::size_t r = 0; r < rows; ++r) {
      dz[r * k + static_cast<std::size_t>(y[r])] -= 1;
      for (std::size_t u = 0; u < k; ++u) dz[r * k + u] /= static_cast<double>(rows);
    }
    for (std::size_t l = L; l-- > 0;) {
      const std::size_t in = dims[l], out = dims[l + 1];
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t u = 0; u < out; ++u) {
          g[bias(l) + u] += dz[r * out + u];
          for (std::size_t c = 0; c < in; ++c)
            g[kernel(l) + c * out + u] += dz[r * out + u] * a[l][r * in + c];
        }
      if (l == 0) break;
      std::vector<double> prev(in * rows, 0.0);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < in; ++c) {
          double s = 0;
          for (std::size_t u = 0; u < out; ++u)
            s += params[kernel(l) + c * out + u] * dz[r * out + u];
          prev[r * in + c] = s * act_grad(activations[l - 1], z[l][r * in + c]);
        }
      dz = std::move(prev);
    }
    return g;
  }
};

template <class A, class B>
double relative_error(const A& got, const B& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    num += d * d;
    den += static_cast<double>(want[i]) * static_cast<double>(want[i]);
  }
  return std::sqrt(num / den);
}

}  // namespace memopt::testing
