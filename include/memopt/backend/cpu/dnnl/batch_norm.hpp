#pragma once
// BatchNorm: Keras's BatchNormalization over the last axis of an NHWC (or [batch, features])
// tensor through oneDNN: training with batch statistics, inference with moving statistics,
// and the backward with the gamma and beta gradients.

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"
#include "memopt/backend/cpu/dnnl/detail/execute.hpp"
#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cpu_backend::onednn {

/// The static description of a batch normalization over [batch, height, width, channels]
/// (height = width = 1 for a [batch, features] input). Keras's defaults.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// BatchNormShape s{.batch = 32, .height = 13, .width = 13, .channels = 32};
/// ```
struct BatchNormShape {
  std::int64_t batch = 1;
  std::int64_t height = 1;
  std::int64_t width = 1;
  std::int64_t channels = 1;
  float epsilon = 1e-3f;
  bool scale = true;   ///< Keras's scale: multiply by gamma
  bool center = true;  ///< Keras's center: add beta

  constexpr std::size_t elements() const {
    return static_cast<std::size_t>(batch * height * width * channels);
  }
};

/// Keras's BatchNormalization (axis -1) through oneDNN for `T` = float, bfloat16 or half
/// (statistics, gamma and beta always float32; 16-bit data is normalized in float32 through
/// the scratchpad where this CPU has no 16-bit kernel: `native()`).
///
/// Training: y = gamma * (x - mean) / sqrt(var + epsilon) + beta with the batch's mean and
/// biased variance (dividing by the count, as Keras does), both written to caller memory for
/// `backward`. Inference: the same with the moving statistics. gamma (beta) is not read
/// without `scale` (`center`), and its gradient not written. Not safe to call from two
/// threads at once.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// BatchNorm<float> bn(BatchNormShape{.batch = 32, .height = 13, .width = 13, .channels = 32});
/// std::vector<float> x(bn.shape().elements()), y(x.size()), dy(x.size()), dx(x.size());
/// std::vector<float> gamma(32, 1.0f), beta(32), mean(32), var(32), dgamma(32), dbeta(32);
/// std::vector<float> moving_mean(32), moving_var(32, 1.0f);
/// std::vector<std::byte> scratch(bn.scratchpad_bytes());  // 64-byte aligned in practice
/// void* s = scratch.data();
/// bn.forward_training(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), var.data(), s);
/// update_moving_statistics(moving_mean.data(), moving_var.data(), mean.data(), var.data(), 32);
/// bn.backward(x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(),
///             dgamma.data(), dbeta.data(), s);
/// bn.forward_inference(x.data(), gamma.data(), beta.data(), moving_mean.data(),
///                      moving_var.data(), y.data(), s);
/// ```
template <detail::DnnlElement T>
class BatchNorm {
 public:
  explicit BatchNorm(const BatchNormShape& shape) : shape_(shape) {
    const BatchNormShape& s = shape_;
    if (s.batch <= 0 || s.height <= 0 || s.width <= 0 || s.channels <= 0 || !(s.epsilon > 0.0f))
      throw error("BatchNorm: expected positive sizes and epsilon");
    bool built = false;
    if constexpr (!std::is_same_v<T, float>)
      built = build(detail::data_type_of<T>(), /*allow_empty=*/true);
    if (!built) {
      native_ = std::is_same_v<T, float>;
      build(::dnnl::memory::data_type::f32, /*allow_empty=*/false);
    }
    scratchpad_bytes_ = detail::align_up(
        std::max({train_pd_.scratchpad_desc().get_size(), infer_pd_.scratchpad_desc().get_size(),
                  bwd_pd_.scratchpad_desc().get_size()}));
    if (!native_) {
      const std::size_t slot = detail::align_up(s.elements() * sizeof(float));
      for (std::size_t i = 0; i < 3; ++i) staging_at_[i] = scratchpad_bytes_ + i * slot;
      scratchpad_bytes_ += 3 * slot;
    }
  }

  const BatchNormShape& shape() const { return shape_; }
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  bool native() const { return native_; }
  std::string implementation() const {
    return std::string(train_pd_.impl_info_str()) + " / " + infer_pd_.impl_info_str() + " / " +
           bwd_pd_.impl_info_str();
  }

  /// Normalizes with the batch statistics; writes them to `mean` and `variance` ([channels]).
  void forward_training(const T* x, const float* gamma, const float* beta, T* y, float* mean,
                        float* variance, void* scratchpad) const {
    run_staged(x, y, scratchpad, [&](const void* xs, void* ys) {
      detail::execute(train_, {{DNNL_ARG_SRC, &src_, xs},
                               {DNNL_ARG_DST, &dst_, ys},
                               {DNNL_ARG_SCALE, detail::maybe(scale_), gamma},
                               {DNNL_ARG_SHIFT, detail::maybe(shift_), beta},
                               {DNNL_ARG_MEAN, &mean_, mean},
                               {DNNL_ARG_VARIANCE, &variance_, variance},
                               {DNNL_ARG_SCRATCHPAD, detail::maybe(train_scratch_), scratchpad}});
    });
  }

  /// Normalizes with the given (moving) statistics: Keras's evaluate and predict.
  void forward_inference(const T* x, const float* gamma, const float* beta,
                         const float* moving_mean, const float* moving_variance, T* y,
                         void* scratchpad) const {
    run_staged(x, y, scratchpad, [&](const void* xs, void* ys) {
      detail::execute(infer_, {{DNNL_ARG_SRC, &src_, xs},
                               {DNNL_ARG_DST, &dst_, ys},
                               {DNNL_ARG_SCALE, detail::maybe(scale_), gamma},
                               {DNNL_ARG_SHIFT, detail::maybe(shift_), beta},
                               {DNNL_ARG_MEAN, &mean_, moving_mean},
                               {DNNL_ARG_VARIANCE, &variance_, moving_variance},
                               {DNNL_ARG_SCRATCHPAD, detail::maybe(infer_scratch_), scratchpad}});
    });
  }

  /// dx, dgamma, dbeta (overwritten) from x, dy and the batch statistics `forward_training`
  /// wrote.
  void backward(const T* x, const T* dy, const float* gamma, const float* mean,
                const float* variance, T* dx, float* dgamma, float* dbeta, void* scratchpad) const {
    auto run = [&](const void* xs, const void* dys, void* dxs) {
      detail::execute(bwd_, {{DNNL_ARG_SRC, &src_, xs},
                             {DNNL_ARG_DIFF_DST, &dst_, dys},
                             {DNNL_ARG_SCALE, detail::maybe(scale_), gamma},
                             {DNNL_ARG_SHIFT, detail::maybe(shift_), unused_shift_.data()},
                             {DNNL_ARG_MEAN, &mean_, mean},
                             {DNNL_ARG_VARIANCE, &variance_, variance},
                             {DNNL_ARG_DIFF_SRC, &diff_src_, dxs},
                             {DNNL_ARG_DIFF_SCALE, detail::maybe(diff_scale_), dgamma},
                             {DNNL_ARG_DIFF_SHIFT, detail::maybe(diff_shift_), dbeta},
                             {DNNL_ARG_SCRATCHPAD, detail::maybe(bwd_scratch_), scratchpad}});
    };
    if constexpr (!std::is_same_v<T, float>) {
      if (!native_) {
        float* x32 = detail::staging_at(scratchpad, staging_at_[0]);
        float* dy32 = detail::staging_at(scratchpad, staging_at_[1]);
        float* dx32 = detail::staging_at(scratchpad, staging_at_[2]);
        detail::widen(x, x32, shape_.elements());
        detail::widen(dy, dy32, shape_.elements());
        run(x32, dy32, dx32);
        detail::narrow(dx32, dx, shape_.elements());
        return;
      }
    }
    run(x, dy, dx);
  }

 private:
  template <class Run>
  void run_staged(const T* x, T* y, void* scratchpad, Run&& run) const {
    if constexpr (!std::is_same_v<T, float>) {
      if (!native_) {
        float* x32 = detail::staging_at(scratchpad, staging_at_[0]);
        float* y32 = detail::staging_at(scratchpad, staging_at_[1]);
        detail::widen(x, x32, shape_.elements());
        run(x32, y32);
        detail::narrow(y32, y, shape_.elements());
        return;
      }
    }
    run(x, y);
  }

  bool build(::dnnl::memory::data_type type, bool allow_empty) {
    using md = ::dnnl::memory::desc;
    using tag = ::dnnl::memory::format_tag;
    using flags = ::dnnl::normalization_flags;
    const BatchNormShape& s = shape_;
    const md data({s.batch, s.channels, s.height, s.width}, type, tag::nhwc);
    flags f = flags::none;
    if (s.scale) f = f | flags::use_scale;
    if (s.center) f = f | flags::use_shift;
    const ::dnnl::engine& eng = Context::get().engine;
    ::dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(::dnnl::scratchpad_mode::user);
    try {
      using fwd = ::dnnl::batch_normalization_forward;
      using bwd = ::dnnl::batch_normalization_backward;
      fwd::primitive_desc tpd(fwd::desc(::dnnl::prop_kind::forward_training, data, s.epsilon, f),
                              attr, eng, allow_empty);
      if (!tpd) return false;
      fwd::primitive_desc ipd(fwd::desc(::dnnl::prop_kind::forward_inference, data, s.epsilon,
                                        f | flags::use_global_stats),
                              attr, eng, allow_empty);
      if (!ipd) return false;
      bwd::primitive_desc bpd(bwd::desc(::dnnl::prop_kind::backward, data, data, s.epsilon, f),
                              attr, eng, tpd, allow_empty);
      if (!bpd) return false;
      train_pd_ = tpd;
      infer_pd_ = ipd;
      bwd_pd_ = bpd;
      train_ = fwd(train_pd_);
      infer_ = fwd(infer_pd_);
      bwd_ = bwd(bwd_pd_);
    } catch (const ::dnnl::error& e) {
      detail::rethrow("BatchNorm", e);
    }
    const md channel({s.channels}, ::dnnl::memory::data_type::f32, tag::x);
    src_ = detail::placeholder(data);
    dst_ = detail::placeholder(data);
    diff_src_ = detail::placeholder(data);
    mean_ = detail::placeholder(train_pd_.mean_desc());
    variance_ = detail::placeholder(train_pd_.variance_desc());
    if (s.scale) {
      scale_ = detail::placeholder(channel);
      diff_scale_ = detail::placeholder(channel);
    }
    if (s.center) {
      unused_shift_.assign(static_cast<std::size_t>(s.channels), 0.0f);
      shift_ = detail::placeholder(channel);
      diff_shift_ = detail::placeholder(channel);
    }
    train_scratch_ = detail::scratch_memory(train_pd_);
    infer_scratch_ = detail::scratch_memory(infer_pd_);
    bwd_scratch_ = detail::scratch_memory(bwd_pd_);
    return true;
  }

  BatchNormShape shape_;
  bool native_ = true;
  std::size_t scratchpad_bytes_ = 0;
  std::size_t staging_at_[3] = {0, 0, 0};  // x, y|dy, dx as float32 (emulated 16-bit)
  ::dnnl::batch_normalization_forward::primitive_desc train_pd_, infer_pd_;
  ::dnnl::batch_normalization_backward::primitive_desc bwd_pd_;
  ::dnnl::batch_normalization_forward train_, infer_;
  ::dnnl::batch_normalization_backward bwd_;
  ::dnnl::memory src_, dst_, diff_src_, mean_, variance_, scale_, shift_, diff_scale_, diff_shift_;
  ::dnnl::memory train_scratch_, infer_scratch_, bwd_scratch_;
  // oneDNN 2.6's backward insists on a shift argument under use_shift though the gradients
  // do not depend on it: these zeros stand in, so that backward need not take beta.
  std::vector<float> unused_shift_;
};

/// Keras's moving-statistics update after a training step, per channel:
/// moving = moving * momentum + batch * (1 - momentum), with the batch's biased variance
/// (Keras removes the Bessel correction that fused_batch_norm applies, so the moving
/// variance follows the same variance the normalization used).
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// const std::size_t channels = 32;
/// std::vector<float> moving_mean(channels), moving_var(channels), mean(channels), var(channels);
/// update_moving_statistics(moving_mean.data(), moving_var.data(), mean.data(), var.data(),
///                          channels);  // momentum 0.99
/// ```
inline void update_moving_statistics(float* moving_mean, float* moving_variance,
                                     const float* batch_mean, const float* batch_variance,
                                     std::size_t channels, float momentum = 0.99f) {
  const float rest = 1.0f - momentum;
  for (std::size_t c = 0; c < channels; ++c) {
    moving_mean[c] = moving_mean[c] * momentum + batch_mean[c] * rest;
    moving_variance[c] = moving_variance[c] * momentum + batch_variance[c] * rest;
  }
}

}  // namespace memopt::cpu_backend::onednn
