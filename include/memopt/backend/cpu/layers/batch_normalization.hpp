#pragma once
// BatchNormalization on the CPU: oneDNN's batch normalization primitives; the moving
// statistics are updated after each training forward pass.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "memopt/backend/cpu/dnnl/batch_norm.hpp"
#include "memopt/backend/cpu/layer_kernel.hpp"
#include "memopt/backend/cpu/node_io.hpp"
#include "memopt/backend/cpu/per_batch.hpp"
#include "memopt/layers/batch_normalization.hpp"
#include "memopt/plan/step_plans.hpp"

namespace memopt::cpu_backend {

template <class M, class E, class Spec, std::size_t I>
struct LayerKernel<BatchNormalizationWith<M, E>, Spec, I> {
  using L = BatchNormalizationWith<M, E>;
  using T = typename Spec::compute_type;
  static constexpr Shape in = Spec::nodes[I].in;
  static constexpr std::size_t c = in.channels();
  // Without a node below that needs dx, the weight gradient runs oneDNN's backward alone and
  // its dx goes to scratch; otherwise the input gradient computes dx, dgamma and dbeta at once.
  static constexpr bool has_input_grad = plan::graph_of<Spec>().has_input_grad(I);
  static_assert(I + 1 < Spec::depth, "BatchNormalization: cannot be the model's last layer");

  static onednn::BatchNormShape shape(std::size_t rows) {
    const bool image = in.is_image();
    return {.batch = static_cast<std::int64_t>(rows),
            .height = static_cast<std::int64_t>(image ? in.height() : 1),
            .width = static_cast<std::int64_t>(image ? in.width() : 1),
            .channels = static_cast<std::int64_t>(c),
            .epsilon = static_cast<float>(L::epsilon)};
  }

  void prepare(std::size_t rows) {
    bn_.select(rows, [](std::size_t r) { return onednn::BatchNorm<T>(shape(r)); });
    statistics_.resize(2 * c);
  }
  std::size_t scratch_bytes(std::size_t rows) const {
    return bn_->scratchpad_bytes() + (has_input_grad ? 0 : dx_bytes(rows));
  }

  template <class Out>
  void forward(const ForwardIo<T, Out>& io) {
    const float* gamma = io.params;
    const float* beta = io.params + c;
    if (!io.training) {
      bn_->forward_inference(io.x, gamma, beta, io.state, io.state + c, io.y, io.scratch);
      return;
    }
    float* mean = io.saved[0] ? reinterpret_cast<float*>(io.saved[0]) : statistics_.data();
    float* variance = io.saved[1] ? reinterpret_cast<float*>(io.saved[1]) : statistics_.data() + c;
    bn_->forward_training(io.x, gamma, beta, io.y, mean, variance, io.scratch);
    if (io.update_state)
      onednn::update_moving_statistics(io.state, io.state + c, mean, variance, c,
                                       static_cast<float>(L::momentum));
  }
  void weight_grad(const BackwardIo<T>& io) {
    if constexpr (!has_input_grad) {
      auto* dx =
          reinterpret_cast<T*>(reinterpret_cast<std::byte*>(io.scratch) + bn_->scratchpad_bytes());
      backward(io, dx);
    }
  }
  void input_grad(const BackwardIo<T>& io) {
    backward(io, io.dx);
    apply_activation_grad(io);
  }

 private:
  static constexpr std::size_t dx_bytes(std::size_t rows) {
    return (in.size() * rows * sizeof(T) + 63) / 64 * 64;
  }
  void backward(const BackwardIo<T>& io, T* dx) {
    bn_->backward(io.x, io.dy, io.params, reinterpret_cast<const float*>(io.saved[0]),
                  reinterpret_cast<const float*>(io.saved[1]), dx, io.grads, io.grads + c,
                  io.scratch);
  }

  PerBatch<onednn::BatchNorm<T>> bn_;
  std::vector<float> statistics_;  // batch statistics when the plan keeps none (no backward)
};

}  // namespace memopt::cpu_backend
