#pragma once
// Conv2d: Keras's Conv2D on NHWC tensors through oneDNN, with its forward, data-gradient and
// weight-gradient primitives created once, reading and writing the caller's memory.

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"
#include "memopt/backend/cpu/dnnl/detail/execute.hpp"
#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
#include "memopt/backend/cpu/dnnl/padding.hpp"
#include "memopt/core/dtype.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cpu_backend::onednn {

/// The static description of a 2-D convolution: input [batch, height, width, in_channels]
/// (channels last), kernel [kernel_h, kernel_w, in_channels, filters] (Keras's layout),
/// bias [filters], output [batch, out_height(), out_width(), filters].
///
/// ```cpp
/// Conv2dShape s{.batch = 32, .height = 28, .width = 28, .in_channels = 1, .filters = 32,
///               .kernel_h = 3, .kernel_w = 3, .relu = true};
/// // s.out_height() == 26
/// ```
struct Conv2dShape {
  std::int64_t batch = 1;
  std::int64_t height = 1;
  std::int64_t width = 1;
  std::int64_t in_channels = 1;
  std::int64_t filters = 1;
  std::int64_t kernel_h = 1;
  std::int64_t kernel_w = 1;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  Padding padding = Padding::valid;
  bool bias = true;   ///< Keras's use_bias
  bool relu = false;  ///< ReLU fused as a oneDNN post-op (Keras's activation="relu")

  constexpr WindowAxis rows() const { return window_axis(height, kernel_h, stride_h, padding); }
  constexpr WindowAxis cols() const { return window_axis(width, kernel_w, stride_w, padding); }
  constexpr std::int64_t out_height() const { return rows().out; }
  constexpr std::int64_t out_width() const { return cols().out; }
  constexpr std::size_t input_elements() const {
    return static_cast<std::size_t>(batch * height * width * in_channels);
  }
  constexpr std::size_t output_elements() const {
    return static_cast<std::size_t>(batch * out_height() * out_width() * filters);
  }
  constexpr std::size_t kernel_elements() const {
    return static_cast<std::size_t>(kernel_h * kernel_w * in_channels * filters);
  }
};

/// Keras's Conv2D through oneDNN for `T` = float, bfloat16 or half (bias and weight gradients
/// stay float32, as under Keras's mixed policies). Where this CPU has no 16-bit convolution
/// (oneDNN 2.6 has bf16 kernels from AVX-512 on, f16 ones only with AVX-512 FP16), the 16-bit
/// variants convert to float32 in the scratchpad and run the float32 primitives: `native()`
/// says which. Not safe to call from two threads at once.
///
/// With `relu`, `forward` writes relu(conv(x) + b) and the backward methods take dz, the
/// gradient with respect to the pre-activation (see relu_backward).
///
/// ```cpp
/// Conv2d<float> conv(Conv2dShape{.batch = 32, .height = 28, .width = 28, .in_channels = 1,
///                                .filters = 32, .kernel_h = 3, .kernel_w = 3});
/// std::vector<std::byte> scratch(conv.scratchpad_bytes());     // 64-byte aligned in practice
/// conv.forward(x, w, b, y, scratch.data());
/// conv.backward_data(dz, w, dx, scratch.data());
/// conv.backward_weights(x, dz, dw, db, scratch.data());
/// ```
template <detail::DnnlElement T>
class Conv2d {
 public:
  explicit Conv2d(const Conv2dShape& shape) : shape_(shape) {
    validate();
    using dt = ::dnnl::memory::data_type;
    bool built = false;
    if constexpr (!std::is_same_v<T, float>)
      built = build(detail::data_type_of<T>(), /*allow_empty=*/true);
    if (!built) {
      native_ = std::is_same_v<T, float>;
      build(dt::f32, /*allow_empty=*/false);
    }
    const std::size_t prim =
        std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                  bwd_weights_pd_.scratchpad_desc().get_size()});
    scratchpad_bytes_ = detail::align_up(prim);
    if (!native_) {
      // Staging: [input | output | kernel] as float32, enough for every method.
      input_at_ = scratchpad_bytes_;
      output_at_ = input_at_ + detail::align_up(shape_.input_elements() * sizeof(float));
      kernel_at_ = output_at_ + detail::align_up(shape_.output_elements() * sizeof(float));
      scratchpad_bytes_ = kernel_at_ + detail::align_up(shape_.kernel_elements() * sizeof(float));
    }
  }

  const Conv2dShape& shape() const { return shape_; }
  /// Bytes of caller-owned scratch each method needs (the maximum over the three).
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  /// False when a 16-bit `T` runs through float32 primitives on this CPU.
  bool native() const { return native_; }
  /// oneDNN's implementation names, e.g. "jit:avx2 / jit:avx2 / jit:avx2", for reports.
  std::string implementation() const {
    return std::string(fwd_pd_.impl_info_str()) + " / " + bwd_data_pd_.impl_info_str() + " / " +
           bwd_weights_pd_.impl_info_str();
  }

  /// y = act(conv(x, w) + b). `b` is ignored (may be null) without bias.
  void forward(const T* x, const T* w, const float* b, T* y, void* scratchpad) const {
    const float* bias = shape_.bias ? b : nullptr;
    if constexpr (!std::is_same_v<T, float>) {
      if (!native_) {
        float* x32 = detail::staging_at(scratchpad, input_at_);
        float* y32 = detail::staging_at(scratchpad, output_at_);
        float* w32 = detail::staging_at(scratchpad, kernel_at_);
        detail::widen(x, x32, shape_.input_elements());
        detail::widen(w, w32, shape_.kernel_elements());
        run_forward(x32, w32, bias, y32, scratchpad);
        detail::narrow(y32, y, shape_.output_elements());
        return;
      }
    }
    run_forward(x, w, bias, y, scratchpad);
  }

  /// dx = the gradient of the loss with respect to x, from dz (w.r.t. the pre-activation).
  void backward_data(const T* dz, const T* w, T* dx, void* scratchpad) const {
    if constexpr (!std::is_same_v<T, float>) {
      if (!native_) {
        float* dx32 = detail::staging_at(scratchpad, input_at_);
        float* dz32 = detail::staging_at(scratchpad, output_at_);
        float* w32 = detail::staging_at(scratchpad, kernel_at_);
        detail::widen(dz, dz32, shape_.output_elements());
        detail::widen(w, w32, shape_.kernel_elements());
        run_backward_data(dz32, w32, dx32, scratchpad);
        detail::narrow(dx32, dx, shape_.input_elements());
        return;
      }
    }
    run_backward_data(dz, w, dx, scratchpad);
  }

  /// dw (Keras's kernel layout) and db, overwritten (not accumulated). `db` is ignored (may
  /// be null) without bias.
  void backward_weights(const T* x, const T* dz, float* dw, float* db, void* scratchpad) const {
    float* dbias = shape_.bias ? db : nullptr;
    if constexpr (!std::is_same_v<T, float>) {
      if (!native_) {
        float* x32 = detail::staging_at(scratchpad, input_at_);
        float* dz32 = detail::staging_at(scratchpad, output_at_);
        detail::widen(x, x32, shape_.input_elements());
        detail::widen(dz, dz32, shape_.output_elements());
        run_backward_weights(x32, dz32, dw, dbias, scratchpad);
        return;
      }
    }
    run_backward_weights(x, dz, dw, dbias, scratchpad);
  }

 private:
  void validate() const {
    const Conv2dShape& s = shape_;
    if (s.batch <= 0 || s.height <= 0 || s.width <= 0 || s.in_channels <= 0 || s.filters <= 0 ||
        s.kernel_h <= 0 || s.kernel_w <= 0 || s.stride_h <= 0 || s.stride_w <= 0)
      throw error("Conv2d: expected positive sizes, kernel and strides");
    if (s.out_height() <= 0 || s.out_width() <= 0)
      throw error("Conv2d: the kernel " + std::to_string(s.kernel_h) + "x" +
                  std::to_string(s.kernel_w) + " is larger than its " + std::to_string(s.height) +
                  "x" + std::to_string(s.width) + " input under valid padding");
  }

  // Creates the three primitives with activations in `act`; false when oneDNN has no
  // implementation and `allow_empty`.
  bool build(::dnnl::memory::data_type act, bool allow_empty) {
    using md = ::dnnl::memory::desc;
    using tag = ::dnnl::memory::format_tag;
    using dt = ::dnnl::memory::data_type;
    const Conv2dShape& s = shape_;
    const WindowAxis r = s.rows(), c = s.cols();
    const md src({s.batch, s.in_channels, s.height, s.width}, act, tag::nhwc);
    const md dst({s.batch, s.filters, r.out, c.out}, act, tag::nhwc);
    const md wei({s.filters, s.in_channels, s.kernel_h, s.kernel_w}, act, tag::hwio);
    const md dwei({s.filters, s.in_channels, s.kernel_h, s.kernel_w}, dt::f32, tag::hwio);
    const md bias = s.bias ? md({s.filters}, dt::f32, tag::x) : md();
    const ::dnnl::memory::dims strides{s.stride_h, s.stride_w};
    const ::dnnl::memory::dims pad_l{r.before, c.before};
    const ::dnnl::memory::dims pad_r{r.after, c.after};
    const auto algo = ::dnnl::algorithm::convolution_direct;
    const ::dnnl::engine& eng = Context::get().engine;

    // Two attributes: primitive_attr is a shared handle, so a copy would share the post-ops.
    ::dnnl::primitive_attr attr, fwd_attr;
    attr.set_scratchpad_mode(::dnnl::scratchpad_mode::user);
    fwd_attr.set_scratchpad_mode(::dnnl::scratchpad_mode::user);
    if (s.relu) {
      ::dnnl::post_ops ops;
      ops.append_eltwise(1.0f, ::dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      fwd_attr.set_post_ops(ops);
    }
    try {
      const ::dnnl::convolution_forward::desc fd(::dnnl::prop_kind::forward_training, algo, src,
                                                 wei, bias, dst, strides, pad_l, pad_r);
      ::dnnl::convolution_forward::primitive_desc fpd(fd, fwd_attr, eng, allow_empty);
      if (!fpd) return false;
      const ::dnnl::convolution_backward_data::desc bd(algo, src, wei, dst, strides, pad_l, pad_r);
      ::dnnl::convolution_backward_data::primitive_desc bpd(bd, attr, eng, fpd, allow_empty);
      if (!bpd) return false;
      const ::dnnl::convolution_backward_weights::desc wd(algo, src, dwei, bias, dst, strides,
                                                          pad_l, pad_r);
      ::dnnl::convolution_backward_weights::primitive_desc wpd(wd, attr, eng, fpd, allow_empty);
      if (!wpd) return false;
      fwd_pd_ = fpd;
      bwd_data_pd_ = bpd;
      bwd_weights_pd_ = wpd;
      fwd_ = ::dnnl::convolution_forward(fwd_pd_);
      bwd_data_ = ::dnnl::convolution_backward_data(bwd_data_pd_);
      bwd_weights_ = ::dnnl::convolution_backward_weights(bwd_weights_pd_);
    } catch (const ::dnnl::error& e) {
      detail::rethrow("Conv2d", e);
    }
    src_ = detail::placeholder(src);
    dst_ = detail::placeholder(dst);
    wei_ = detail::placeholder(wei);
    dwei_ = detail::placeholder(dwei);
    if (s.bias) bias_ = detail::placeholder(bias);
    fwd_scratch_ = detail::scratch_memory(fwd_pd_);
    bwd_data_scratch_ = detail::scratch_memory(bwd_data_pd_);
    bwd_weights_scratch_ = detail::scratch_memory(bwd_weights_pd_);
    return true;
  }

  void run_forward(const void* x, const void* w, const float* b, void* y, void* scratch) const {
    detail::execute(fwd_, {{DNNL_ARG_SRC, &src_, x},
                           {DNNL_ARG_WEIGHTS, &wei_, w},
                           {DNNL_ARG_BIAS, detail::maybe(bias_), b},
                           {DNNL_ARG_DST, &dst_, y},
                           {DNNL_ARG_SCRATCHPAD, detail::maybe(fwd_scratch_), scratch}});
  }
  void run_backward_data(const void* dz, const void* w, void* dx, void* scratch) const {
    detail::execute(bwd_data_, {{DNNL_ARG_DIFF_DST, &dst_, dz},
                                {DNNL_ARG_WEIGHTS, &wei_, w},
                                {DNNL_ARG_DIFF_SRC, &src_, dx},
                                {DNNL_ARG_SCRATCHPAD, detail::maybe(bwd_data_scratch_), scratch}});
  }
  void run_backward_weights(const void* x, const void* dz, float* dw, float* db,
                            void* scratch) const {
    detail::execute(bwd_weights_,
                    {{DNNL_ARG_SRC, &src_, x},
                     {DNNL_ARG_DIFF_DST, &dst_, dz},
                     {DNNL_ARG_DIFF_WEIGHTS, &dwei_, dw},
                     {DNNL_ARG_DIFF_BIAS, detail::maybe(bias_), db},
                     {DNNL_ARG_SCRATCHPAD, detail::maybe(bwd_weights_scratch_), scratch}});
  }

  Conv2dShape shape_;
  bool native_ = true;
  std::size_t scratchpad_bytes_ = 0;
  std::size_t input_at_ = 0, output_at_ = 0, kernel_at_ = 0;  // staging offsets (emulated 16-bit)
  ::dnnl::convolution_forward::primitive_desc fwd_pd_;
  ::dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  ::dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd_;
  ::dnnl::convolution_forward fwd_;
  ::dnnl::convolution_backward_data bwd_data_;
  ::dnnl::convolution_backward_weights bwd_weights_;
  // Memory objects without data; execute() points them at the caller's buffers.
  ::dnnl::memory src_, dst_, wei_, dwei_, bias_;
  ::dnnl::memory fwd_scratch_, bwd_data_scratch_, bwd_weights_scratch_;
};

}  // namespace memopt::cpu_backend::onednn
