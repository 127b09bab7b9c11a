#pragma once
// The CPU executor: runs a model's training and inference plans in host memory.
//
// It is the reference every other backend is tested against, so it favours clarity: one
// arena laid out by the constexpr plan, Eigen for the products, float math throughout.
// Under 16-bit policies the arena holds 16-bit activations (the memory really halves) and
// products read them through float scratch, as tensor cores accumulate in float.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>

#include "memopt/backend/cpu/eigen.hpp"
#include "memopt/backend/cpu/flush_denormals.hpp"
#include "memopt/backend/cpu/host_buffer.hpp"
#include "memopt/core/backend.hpp"
#include "memopt/core/convert.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/step_totals.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/layers/activation.hpp"
#include "memopt/plan/aux_layout.hpp"
#include "memopt/plan/step_plans.hpp"

namespace memopt::cpu_backend {

namespace detail {

// Float values of `count` elements at `p`: `p` itself for float, else converted into scratch.
template <class U>
const float* to_float(const U* p, std::size_t count, float* scratch) {
  if constexpr (std::is_same_v<U, float>) {
    return p;
  } else {
    convert(p, scratch, count);
    return scratch;
  }
}

}  // namespace detail

/// Runs `Spec`'s plans on the host.
template <class Spec>
class Executor {
 public:
  using T = typename Spec::compute_type;
  static constexpr std::size_t depth = Spec::depth;
  static constexpr bool narrow = !std::is_same_v<T, float>;
  static constexpr std::string_view backend_name = "cpu";

  Executor()
      : params_(Spec::parameter_count * sizeof(float)),
        working_(narrow ? Spec::parameter_count * sizeof(T) : 0) {}

  // Parameters and optimizer state ------------------------------------------------------

  void set_parameters(std::span<const float> values) {
    check_size("set_parameters", values.size(), Spec::parameter_count);
    std::copy(values.begin(), values.end(), params_.as<float>());
    refresh_working_copy();
  }
  void get_parameters(std::span<float> out) const {
    check_size("get_parameters", out.size(), Spec::parameter_count);
    std::copy_n(params_.as<float>(), Spec::parameter_count, out.begin());
  }
  std::size_t optimizer_state_size() const { return state_.size() / sizeof(float); }
  void set_optimizer_state(std::span<const float> values) {
    check_size("set_optimizer_state", values.size(), optimizer_state_size());
    std::copy(values.begin(), values.end(), state_.as<float>());
  }
  void get_optimizer_state(std::span<float> out) const {
    check_size("get_optimizer_state", out.size(), optimizer_state_size());
    std::copy_n(state_.as<float>(), optimizer_state_size(), out.begin());
  }

  /// The parameter gradients of the last training step, unscaled, laid out like the
  /// parameters (for tests and for comparing backends).
  void get_gradients(std::span<float> out) const {
    check_size("get_gradients", out.size(), Spec::parameter_count);
    if (capacity_ == 0) throw error("Executor::get_gradients: no training step has run");
    const auto& b = plan_.find(plan::BufferRole::parameter_grads);
    std::copy_n(reinterpret_cast<const float*>(arena_.data() + b.offset), Spec::parameter_count,
                out.begin());
  }

  /// Allocates the training arena for up to `capacity` rows and `state_floats` of optimizer
  /// state. The only allocations of training happen here.
  void prepare(std::size_t capacity, std::size_t state_floats) {
    if (capacity > capacity_) {
      plan_ = plan::training_plan<Spec>(capacity);
      arena_ = HostBuffer(plan_.arena_bytes);
      capacity_ = capacity;
      reserve_scratch();
    }
    if (state_floats * sizeof(float) != state_.size())
      state_ = HostBuffer(state_floats * sizeof(float));
  }
  std::size_t capacity() const { return capacity_; }
  std::size_t arena_bytes() const { return arena_.size(); }
  /// Float scratch that 16-bit policies read products through (0 under float32).
  std::size_t workspace_bytes() const { return scratch_.size(); }

  // Steps -------------------------------------------------------------------------------

  /// One training step on `rows` samples: forward, fused softmax and cross-entropy,
  /// backward, then, if every gradient is finite after unscaling, the optimizer update.
  template <class Optimizer, class LossScale>
  void train_step(const float* x, const std::int32_t* y, std::size_t rows, const Optimizer& opt,
                  std::int64_t& iterations, LossScale& scale) {
    check_rows(rows);
    const ScopedFlushDenormals no_subnormals;
    const Arena<plan_type> a{&plan_, arena_.data()};
    load_input(a, x, rows);
    std::copy_n(y, rows, a.template get<std::int32_t>(plan::BufferRole::labels));
    static_for<depth>([&](auto i) { forward<i>(a, rows, Pass::training); });
    float* scalars = a.template get<float>(plan::BufferRole::step_scalars);
    loss_and_gradient(a, y, rows, scale.value(), scalars);
    static_for<depth>([&](auto k) {
      constexpr std::size_t i = depth - 1 - k;
      recompute_before<i>(a, rows);  // the plan's recompute steps hosted by layer i
      backward(a, i, rows);
    });

    float* grads = a.template get<float>(plan::BufferRole::parameter_grads);
    const float inv = 1.0f / scale.value();
    auto g = Eigen::Map<Eigen::ArrayXf>(grads, Spec::parameter_count);
    g *= inv;
    const bool finite = g.allFinite();
    scalars[2] = finite ? 1.0f : 0.0f;
    if (scale.update(finite)) {
      opt.update(std::span<float>(params_.as<float>(), Spec::parameter_count),
                 std::span<const float>(grads, Spec::parameter_count),
                 std::span<float>(state_.as<float>(), optimizer_state_size()), iterations);
      ++iterations;
      refresh_working_copy();
    } else {
      ++totals_.skipped_steps;
    }
    totals_.loss_sum += scalars[0];
    totals_.correct += scalars[1];
    totals_.samples += rows;
  }

  /// Forward and loss only, accumulated into the totals (for evaluate and validation).
  void evaluate_batch(const float* x, const std::int32_t* y, std::size_t rows) {
    const float* logits = infer(x, rows);
    float scalars[3] = {};
    softmax_cross_entropy(const_cast<float*>(logits), y, rows, 0.0f, scalars);
    totals_.loss_sum += scalars[0];
    totals_.correct += scalars[1];
    totals_.samples += rows;
  }

  /// Probabilities (softmax of the outputs when the last layer is Softmax, else the raw
  /// outputs), `rows x outputs`, row after row.
  void predict(const float* x, std::size_t rows, float* out) {
    float* logits = const_cast<float*>(infer(x, rows));
    if constexpr (Spec::ends_in_softmax) {
      for (std::size_t r = 0; r < rows; ++r) softmax_column(logits + r * Spec::outputs);
    }
    std::copy_n(logits, rows * Spec::outputs, out);
  }

  StepTotals take_totals() {
    const StepTotals t = totals_;
    totals_ = {};
    return t;
  }
  /// The sums since the last take_totals, without resetting them (fit's running logs).
  const StepTotals& running_totals() const { return totals_; }

 private:
  using plan_type = decltype(plan::training_plan<Spec>(1));
  static constexpr auto chain_ = plan::chain_of<Spec>();

  // What a forward pass is for: training keeps what backward reads (the ReLU mask, GELU's
  // z), inference keeps nothing, recompute writes a Recompute layer's second copy.
  enum class Pass { training, inference, recompute };
  using inference_plan_type = decltype(plan::inference_plan<Spec>(1));

  // A plan and the memory it lays out.
  template <class Plan>
  struct Arena {
    const Plan* plan;
    std::byte* base;
    template <class U>
    U* get(plan::BufferRole role, int layer = -1) const {
      return reinterpret_cast<U*>(base + plan->find(role, layer).offset);
    }
  };

  static void check_size(const char* what, std::size_t found, std::size_t expected) {
    if (found != expected)
      throw error(std::string("Executor::") + what + ": expected " + std::to_string(expected) +
                  " floats, found " + std::to_string(found));
  }
  void check_rows(std::size_t rows) const {
    if (rows == 0 || rows > capacity_)
      throw error("train_step: a batch of " + std::to_string(rows) +
                  " rows does not fit the arena planned for " + std::to_string(capacity_));
  }

  void reserve_scratch() {
    const std::size_t capacity = std::max(capacity_, inference_capacity_);
    if constexpr (narrow) {
      std::size_t widest = 0, largest_kernel = 0;
      for (std::size_t i = 0; i <= depth; ++i) widest = std::max(widest, Spec::dims[i]);
      for (std::size_t i = 0; i < depth; ++i)
        largest_kernel = std::max(largest_kernel, Spec::kernel_size(i));
      if (widest * capacity <= scratch_stride_) return;
      scratch_stride_ = widest * capacity;
      scratch_ = HostBuffer((3 * scratch_stride_ + largest_kernel) * sizeof(float));
    }
  }
  float* scratch(std::size_t slot) const { return scratch_.as<float>() + slot * scratch_stride_; }

  void refresh_working_copy() {
    if constexpr (narrow) {
      const float* p = params_.as<float>();
      T* w = working_.as<T>();
      convert(p, w, Spec::parameter_count);
    }
  }
  const T* weights() const {
    if constexpr (narrow)
      return working_.as<T>();
    else
      return params_.as<float>();
  }

  template <class Plan>
  void load_input(const Arena<Plan>& a, const float* x, std::size_t rows) {
    T* in = a.template get<T>(plan::BufferRole::input);
    convert(x, in, rows * Spec::inputs);
  }

  // The output of hidden layer i as backward (and recomputation) reads it.
  template <class Plan>
  static T* kept_output(const Arena<Plan>& a, std::size_t i) {
    return a.template get<T>(chain_.recompute[i] ? plan::BufferRole::recomputed_activation
                                                 : plan::BufferRole::activation,
                             static_cast<int>(i));
  }

  // Layer I's forward: z = W x + b, then its activation, into the plan's buffers.
  template <std::size_t I, class Plan>
  void forward(const Arena<Plan>& a, std::size_t rows, Pass pass) {
    constexpr std::size_t in_w = Spec::dims[I], out_w = Spec::dims[I + 1];
    constexpr ActivationKind act = Spec::activations[I];
    constexpr bool last = I + 1 == depth;
    const T* in = I == 0 ? a.template get<T>(plan::BufferRole::input)
                  : pass == Pass::recompute
                      ? kept_output(a, I - 1)
                      : a.template get<T>(plan::BufferRole::activation, int(I) - 1);
    const float* inf = detail::to_float(in, in_w * rows, scratch(0));
    const float* wf = detail::to_float(weights() + Spec::kernel_offset(I), out_w * in_w,
                                       scratch(0) + 3 * scratch_stride_);
    const float* bias = params_.as<float>() + Spec::bias_offset(I);
    const std::size_t n = out_w * rows;

    if constexpr (last) {
      float* z = a.template get<float>(plan::BufferRole::logits, int(I));
      gemm_nn(wf, inf, z, out_w, in_w, rows);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t u = 0; u < out_w; ++u) z[r * out_w + u] += bias[u];
      if constexpr (act != ActivationKind::softmax && act != ActivationKind::linear) {
        for (std::size_t j = 0; j < n; ++j) z[j] = apply<act>(z[j]);
      }
    } else {
      T* out = a.template get<T>(pass == Pass::recompute ? plan::BufferRole::recomputed_activation
                                                         : plan::BufferRole::activation,
                                 int(I));
      // What backward reads instead of the output: GELU's z (leading dimension rounded to 8)
      // and ReLU's mask (cuBLASLt's RELU_AUX layout), written where the plan has them.
      T* pre = nullptr;
      std::uint8_t* mask = nullptr;
      if constexpr (act == ActivationKind::gelu)
        if (pass == Pass::training)
          pre = a.template get<T>(plan::BufferRole::pre_activation, int(I));
      if constexpr (act == ActivationKind::relu)
        if ((pass == Pass::training && !chain_.recompute[I]) || pass == Pass::recompute)
          mask = a.template get<std::uint8_t>(plan::BufferRole::relu_mask, int(I));
      constexpr std::size_t pre_ld = plan::gelu_aux_ld(out_w), mask_ld = plan::relu_mask_ld(out_w);
      float* z = narrow ? scratch(1) : reinterpret_cast<float*>(out);
      gemm_nn(wf, inf, z, out_w, in_w, rows);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t u = 0; u < out_w; ++u) {
          const std::size_t j = r * out_w + u;
          const float zj = z[j] + bias[u];
          if (pre) pre[r * pre_ld + u] = T(zj);
          if (mask) plan::set_mask_bit(mask, mask_ld, u, r, zj > 0.0f);
          z[j] = apply<act>(zj);  // in place: z is `out` itself under float32
        }
      }
      if constexpr (narrow) convert(z, out, rows * out_w);
    }
  }

  template <ActivationKind act>
  static float apply(float z) {
    if constexpr (act == ActivationKind::relu)
      return ReLU::apply(z);
    else if constexpr (act == ActivationKind::sigmoid)
      return Sigmoid::apply(z);
    else if constexpr (act == ActivationKind::tanh)
      return Tanh::apply(z);
    else if constexpr (act == ActivationKind::gelu)
      return GELU::apply(z);
    else
      return z;
  }

  static void softmax_column(float* z) {
    const float m = *std::max_element(z, z + Spec::outputs);
    float sum = 0;
    for (std::size_t u = 0; u < Spec::outputs; ++u) sum += (z[u] = std::exp(z[u] - m));
    const float inv = 1.0f / sum;
    for (std::size_t u = 0; u < Spec::outputs; ++u) z[u] *= inv;
  }

  // Softmax, cross-entropy and correct count over `rows` columns of logits. With a
  // non-zero `grad_scale` the logits are replaced by grad_scale * (p - onehot(y)) / rows.
  static void softmax_cross_entropy(float* logits, const std::int32_t* y, std::size_t rows,
                                    float grad_scale, float* scalars) {
    constexpr std::size_t k = Spec::outputs;
    double loss = 0;
    float correct = 0;
    const float g = grad_scale / static_cast<float>(rows);
    for (std::size_t r = 0; r < rows; ++r) {
      float* z = logits + r * k;
      const std::int32_t label = y[r];
      if (label < 0 || static_cast<std::size_t>(label) >= k)
        throw error("SparseCategoricalCrossentropy: label " + std::to_string(label) + " at row " +
                    std::to_string(r) + " is outside [0, " + std::to_string(k) + ")");
      const std::size_t best = static_cast<std::size_t>(std::max_element(z, z + k) - z);
      correct += best == static_cast<std::size_t>(label) ? 1.0f : 0.0f;
      const float m = z[best];
      float sum = 0;
      for (std::size_t u = 0; u < k; ++u) sum += std::exp(z[u] - m);
      loss += static_cast<double>(std::log(sum) + m - z[label]);
      if (grad_scale != 0.0f) {
        const float inv = 1.0f / sum;
        for (std::size_t u = 0; u < k; ++u) z[u] = g * std::exp(z[u] - m) * inv;
        z[label] -= g;
      }
    }
    scalars[0] = static_cast<float>(loss);
    scalars[1] = correct;
  }

  template <class Plan>
  void loss_and_gradient(const Arena<Plan>& a, const std::int32_t* y, std::size_t rows, float scale,
                         float* scalars) {
    float* logits = a.template get<float>(plan::BufferRole::logits, int(depth) - 1);
    softmax_cross_entropy(logits, y, rows, scale, scalars);
    if constexpr (narrow) {
      T* g = a.template get<T>(plan::BufferRole::logits_grad, int(depth) - 1);
      convert(logits, g, rows * Spec::outputs);
    }
  }

  // Layer i's backward: dW = dZ X^T, db = sum dZ, and (i > 0) the previous layer's dZ.
  template <class Plan>
  void backward(const Arena<Plan>& a, std::size_t i, std::size_t rows) {
    using plan::BufferRole;
    const std::size_t in_w = Spec::dims[i], out_w = Spec::dims[i + 1];
    const int li = static_cast<int>(i);
    const float* dz = nullptr;
    if (i + 1 == depth) {
      dz = narrow ? detail::to_float(a.template get<T>(BufferRole::logits_grad, li), out_w * rows,
                                     scratch(0))
                  : a.template get<float>(BufferRole::logits, li);
    } else {
      dz = detail::to_float(a.template get<T>(BufferRole::activation_grad, li), out_w * rows,
                            scratch(0));
    }
    const T* in = i == 0 ? a.template get<T>(BufferRole::input) : kept_output(a, i - 1);
    const float* inf = detail::to_float(in, in_w * rows, scratch(1));
    float* grads = a.template get<float>(BufferRole::parameter_grads);
    gemm_nt(dz, inf, grads + Spec::kernel_offset(i), out_w, rows, in_w);
    float* db = grads + Spec::bias_offset(i);
    std::fill_n(db, out_w, 0.0f);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t u = 0; u < out_w; ++u) db[u] += dz[r * out_w + u];
    if (i == 0) return;

    // dX: from here on the previous layer's output may share memory with prev_grad (the plan
    // ends its life at dW), so only Sigmoid and Tanh, whose output outlives dX, read it.
    const float* wf = detail::to_float(weights() + Spec::kernel_offset(i), out_w * in_w,
                                       scratch(0) + 3 * scratch_stride_);
    T* prev_grad = a.template get<T>(BufferRole::activation_grad, li - 1);
    float* da = narrow ? scratch(2) : reinterpret_cast<float*>(prev_grad);
    gemm_tn(wf, dz, da, in_w, out_w, rows);
    const ActivationKind act = Spec::activations[i - 1];
    const std::size_t n = in_w * rows;
    if (act == ActivationKind::gelu) {
      const T* pre = a.template get<T>(BufferRole::pre_activation, li - 1);
      const std::size_t ld = plan::gelu_aux_ld(in_w);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t u = 0; u < in_w; ++u)
          da[r * in_w + u] *= GELU::derivative(static_cast<float>(pre[r * ld + u]));
    } else if (act == ActivationKind::relu) {
      const auto* mask = a.template get<std::uint8_t>(BufferRole::relu_mask, li - 1);
      const std::size_t ld = plan::relu_mask_ld(in_w);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t u = 0; u < in_w; ++u)
          if (!plan::mask_bit(mask, ld, u, r)) da[r * in_w + u] = 0.0f;
    } else if (act == ActivationKind::sigmoid || act == ActivationKind::tanh) {
      const T* out = kept_output(a, i - 1);
      for (std::size_t j = 0; j < n; ++j)
        da[j] *= derivative_from_output(act, static_cast<float>(out[j]));
    }
    // da is prev_grad itself under float32; 16-bit policies store it rounded, in one pass.
    if constexpr (narrow) convert(da, prev_grad, n);
  }

  // The recompute steps the plan runs just before layer I's backward: every Recompute layer
  // hosted there, lowest first (a run of them is recomputed as one segment).
  template <std::size_t I, class Plan>
  void recompute_before(const Arena<Plan>& a, std::size_t rows) {
    static_for<I>([&](auto j) {
      if constexpr (chain_.recompute[j] && chain_.recompute_host(j) == I) {
        if constexpr (Spec::activations[j] == ActivationKind::gelu) {
          // GELU keeps z for its derivative: its output is one element-wise pass away.
          constexpr std::size_t w = Spec::dims[j + 1], ld = plan::gelu_aux_ld(w);
          const T* pre = a.template get<T>(plan::BufferRole::pre_activation, int(j));
          T* out = a.template get<T>(plan::BufferRole::recomputed_activation, int(j));
          for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t u = 0; u < w; ++u)
              out[r * w + u] = T(GELU::apply(static_cast<float>(pre[r * ld + u])));
        } else {
          forward<j>(a, rows, Pass::recompute);
        }
      }
    });
  }

  // Forward through the inference plan; returns the logits (rows x outputs).
  const float* infer(const float* x, std::size_t rows) {
    if (rows > inference_capacity_) {
      inference_plan_ = plan::inference_plan<Spec>(rows);
      inference_arena_ = HostBuffer(inference_plan_.arena_bytes);
      inference_capacity_ = rows;
      reserve_scratch();
    }
    const Arena<inference_plan_type> a{&inference_plan_, inference_arena_.data()};
    load_input(a, x, rows);
    static_for<depth>([&](auto i) { forward<i>(a, rows, Pass::inference); });
    return a.template get<float>(plan::BufferRole::logits, int(depth) - 1);
  }

  HostBuffer params_;   // float32 master weights
  HostBuffer working_;  // their 16-bit copy under mixed policies
  HostBuffer state_;    // optimizer slots
  HostBuffer arena_;
  HostBuffer inference_arena_;
  HostBuffer scratch_;
  std::size_t scratch_stride_ = 0;
  plan_type plan_{};
  inference_plan_type inference_plan_{};
  std::size_t capacity_ = 0;
  std::size_t inference_capacity_ = 0;
  StepTotals totals_{};
};

}  // namespace memopt::cpu_backend

namespace memopt {

template <class Spec>
struct executor_for<cpu, Spec> {
  using type = cpu_backend::Executor<Spec>;
};

}  // namespace memopt
