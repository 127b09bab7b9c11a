#pragma once
// Conv2d: Keras's Conv2D on NHWC tensors through oneDNN, with its forward, data-gradient and
// weight-gradient primitives created once, reading and writing the caller's memory.

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"
#include "memopt/backend/cpu/dnnl/detail/execute.hpp"
#include "memopt/backend/cpu/dnnl/detail/relayout.hpp"
#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
#include "memopt/backend/cpu/dnnl/layout.hpp"
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

/// The layout each pass of a Conv2d computes in. `automatic`, from bench_dnnl_ops (oneDNN
/// 2.6.3, AVX2, one thread, reorders included): blocked for the forward pass (the MNIST
/// convnet's 28x28x1 -> 32 runs 7-11x faster than the NHWC GEMM kernel, 13x13x32 -> 64 2.5x);
/// for both gradients, plain below 4 input channels (1.1-1.6x faster there), else blocked
/// (1.1-1.5x faster for 32 -> 64).
///
/// ```cpp
/// Conv2dLayouts all_plain{Layout::plain, Layout::plain, Layout::plain};
/// ```
struct Conv2dLayouts {
  Layout forward = Layout::automatic;
  Layout backward_data = Layout::automatic;
  Layout backward_weights = Layout::automatic;
};

/// Keras's Conv2D through oneDNN for `T` = float, bfloat16 or half (bias and weight gradients
/// stay float32, as under Keras's mixed policies). Where this CPU has no 16-bit convolution
/// (oneDNN 2.6 has bf16 kernels from AVX-512 on, f16 ones only with AVX-512 FP16), the 16-bit
/// variants convert to float32 in the scratchpad and run the float32 primitives: `native()`
/// says which. Not safe to call from two threads at once.
///
/// With `relu`, `forward` writes relu(conv(x) + b) and the backward methods take dz, the
/// gradient with respect to the pre-activation (see relu_backward). The caller's buffers are
/// always NHWC/HWIO; a pass computing in a blocked layout reorders through the scratchpad.
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
  explicit Conv2d(const Conv2dShape& shape, const Conv2dLayouts& layouts = {})
      : shape_(shape), layouts_(resolve(layouts, shape)) {
    validate();
    bool built = false;
    if constexpr (!std::is_same_v<T, float>)
      built = build(detail::data_type_of<T>(), /*allow_empty=*/true);
    if (!built) {
      native_ = std::is_same_v<T, float>;
      build(::dnnl::memory::data_type::f32, /*allow_empty=*/false);
    }
    // The scratchpad: [oneDNN's scratch (the primitives' and the reorders', never live at
    // once) | float32 copies of 16-bit data (emulated path) | blocked staging of one pass].
    std::size_t prim =
        std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                  bwd_weights_pd_.scratchpad_desc().get_size()});
    for (const detail::Relayout* r : relayouts()) prim = std::max(prim, r->scratch_bytes());
    scratchpad_bytes_ = detail::align_up(prim);
    if (!native_) {
      input_at_ = scratchpad_bytes_;
      output_at_ = input_at_ + detail::align_up(shape_.input_elements() * sizeof(float));
      kernel_at_ = output_at_ + detail::align_up(shape_.output_elements() * sizeof(float));
      scratchpad_bytes_ = kernel_at_ + detail::align_up(shape_.kernel_elements() * sizeof(float));
    }
    const std::size_t base = scratchpad_bytes_;
    const std::array<std::array<detail::Relayout*, 3>, 3> passes{
        {{&fsrc_, &fwei_, &fdst_}, {&ddst_, &dwei_, &dsrc_}, {&wsrc_, &wdst_, &wdwei_}}};
    for (const auto& pass : passes) {
      std::size_t at = base;
      for (detail::Relayout* r : pass) {
        r->place(at);
        at += detail::align_up(r->staging_bytes());
      }
      scratchpad_bytes_ = std::max(scratchpad_bytes_, at);
    }
  }

  const Conv2dShape& shape() const { return shape_; }
  /// The layouts the passes compute in (`automatic` resolved).
  const Conv2dLayouts& layouts() const { return layouts_; }
  /// Bytes of caller-owned scratch each method needs (the maximum over the three).
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  /// False when a 16-bit `T` runs through float32 primitives on this CPU.
  bool native() const { return native_; }
  /// oneDNN's implementation names, e.g. "jit:avx2 / jit:avx2 / gemm:jit", for reports.
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
  static Conv2dLayouts resolve(Conv2dLayouts l, const Conv2dShape& s) {
    if (l.forward == Layout::automatic) l.forward = Layout::blocked;
    if (l.backward_data == Layout::automatic)
      l.backward_data = s.in_channels < 4 ? Layout::plain : Layout::blocked;
    if (l.backward_weights == Layout::automatic)
      l.backward_weights = s.in_channels < 4 ? Layout::plain : Layout::blocked;
    return l;
  }

  std::array<const detail::Relayout*, 9> relayouts() const {
    return {&fsrc_, &fwei_, &fdst_, &ddst_, &dwei_, &dsrc_, &wsrc_, &wdst_, &wdwei_};
  }

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
    const ::dnnl::memory::dims src_dims{s.batch, s.in_channels, s.height, s.width};
    const ::dnnl::memory::dims dst_dims{s.batch, s.filters, r.out, c.out};
    const ::dnnl::memory::dims wei_dims{s.filters, s.in_channels, s.kernel_h, s.kernel_w};
    // The caller's layouts; a blocked pass asks oneDNN for format_tag::any instead.
    const md src(src_dims, act, tag::nhwc), dst(dst_dims, act, tag::nhwc);
    const md wei(wei_dims, act, tag::hwio), dwei(wei_dims, dt::f32, tag::hwio);
    const md bias = s.bias ? md({s.filters}, dt::f32, tag::x) : md();
    auto ask = [](Layout l, const ::dnnl::memory::dims& dims, dt type, tag plain) {
      return md(dims, type, l == Layout::plain ? plain : tag::any);
    };
    const Layout fl = layouts_.forward, bl = layouts_.backward_data;
    const Layout wl = layouts_.backward_weights;
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
      using fwd = ::dnnl::convolution_forward;
      using bwd_data = ::dnnl::convolution_backward_data;
      using bwd_weights = ::dnnl::convolution_backward_weights;
      const fwd::desc fd(::dnnl::prop_kind::forward_training, algo,
                         ask(fl, src_dims, act, tag::nhwc), ask(fl, wei_dims, act, tag::hwio), bias,
                         ask(fl, dst_dims, act, tag::nhwc), strides, pad_l, pad_r);
      fwd::primitive_desc fpd(fd, fwd_attr, eng, allow_empty);
      if (!fpd) return false;
      const bwd_data::desc bd(algo, ask(bl, src_dims, act, tag::nhwc),
                              ask(bl, wei_dims, act, tag::hwio), ask(bl, dst_dims, act, tag::nhwc),
                              strides, pad_l, pad_r);
      bwd_data::primitive_desc bpd(bd, attr, eng, fpd, allow_empty);
      if (!bpd) return false;
      const bwd_weights::desc wd(algo, ask(wl, src_dims, act, tag::nhwc),
                                 ask(wl, wei_dims, dt::f32, tag::hwio), bias,
                                 ask(wl, dst_dims, act, tag::nhwc), strides, pad_l, pad_r);
      bwd_weights::primitive_desc wpd(wd, attr, eng, fpd, allow_empty);
      if (!wpd) return false;
      fwd_pd_ = fpd;
      bwd_data_pd_ = bpd;
      bwd_weights_pd_ = wpd;
      fwd_ = fwd(fwd_pd_);
      bwd_data_ = bwd_data(bwd_data_pd_);
      bwd_weights_ = bwd_weights(bwd_weights_pd_);
      fsrc_ = detail::Relayout(src, fwd_pd_.src_desc(), true);
      fwei_ = detail::Relayout(wei, fwd_pd_.weights_desc(), true);
      fdst_ = detail::Relayout(dst, fwd_pd_.dst_desc(), false);
      ddst_ = detail::Relayout(dst, bwd_data_pd_.diff_dst_desc(), true);
      dwei_ = detail::Relayout(wei, bwd_data_pd_.weights_desc(), true);
      dsrc_ = detail::Relayout(src, bwd_data_pd_.diff_src_desc(), false);
      wsrc_ = detail::Relayout(src, bwd_weights_pd_.src_desc(), true);
      wdst_ = detail::Relayout(dst, bwd_weights_pd_.diff_dst_desc(), true);
      wdwei_ = detail::Relayout(dwei, bwd_weights_pd_.diff_weights_desc(), false);
    } catch (const ::dnnl::error& e) {
      detail::rethrow("Conv2d", e);
    }
    if (s.bias) bias_ = detail::placeholder(bias);
    fwd_scratch_ = detail::scratch_memory(fwd_pd_);
    bwd_data_scratch_ = detail::scratch_memory(bwd_data_pd_);
    bwd_weights_scratch_ = detail::scratch_memory(bwd_weights_pd_);
    return true;
  }

  // Each pass: reorder its inputs in (when blocked), run, reorder its output out.
  void run_forward(const void* x, const void* w, const float* b, void* y, void* scratch) const {
    fsrc_.load(x, scratch);
    fwei_.load(w, scratch);
    detail::execute(fwd_, {{DNNL_ARG_SRC, &fsrc_.inner(), fsrc_.target(x, scratch)},
                           {DNNL_ARG_WEIGHTS, &fwei_.inner(), fwei_.target(w, scratch)},
                           {DNNL_ARG_BIAS, detail::maybe(bias_), b},
                           {DNNL_ARG_DST, &fdst_.inner(), fdst_.target(y, scratch)},
                           {DNNL_ARG_SCRATCHPAD, detail::maybe(fwd_scratch_), scratch}});
    fdst_.store(y, scratch);
  }
  void run_backward_data(const void* dz, const void* w, void* dx, void* scratch) const {
    ddst_.load(dz, scratch);
    dwei_.load(w, scratch);
    detail::execute(bwd_data_, {{DNNL_ARG_DIFF_DST, &ddst_.inner(), ddst_.target(dz, scratch)},
                                {DNNL_ARG_WEIGHTS, &dwei_.inner(), dwei_.target(w, scratch)},
                                {DNNL_ARG_DIFF_SRC, &dsrc_.inner(), dsrc_.target(dx, scratch)},
                                {DNNL_ARG_SCRATCHPAD, detail::maybe(bwd_data_scratch_), scratch}});
    dsrc_.store(dx, scratch);
  }
  void run_backward_weights(const void* x, const void* dz, float* dw, float* db,
                            void* scratch) const {
    wsrc_.load(x, scratch);
    wdst_.load(dz, scratch);
    detail::execute(bwd_weights_,
                    {{DNNL_ARG_SRC, &wsrc_.inner(), wsrc_.target(x, scratch)},
                     {DNNL_ARG_DIFF_DST, &wdst_.inner(), wdst_.target(dz, scratch)},
                     {DNNL_ARG_DIFF_WEIGHTS, &wdwei_.inner(), wdwei_.target(dw, scratch)},
                     {DNNL_ARG_DIFF_BIAS, detail::maybe(bias_), db},
                     {DNNL_ARG_SCRATCHPAD, detail::maybe(bwd_weights_scratch_), scratch}});
    wdwei_.store(dw, scratch);
  }

  Conv2dShape shape_;
  Conv2dLayouts layouts_;
  bool native_ = true;
  std::size_t scratchpad_bytes_ = 0;
  std::size_t input_at_ = 0, output_at_ = 0, kernel_at_ = 0;  // float32 copies (16-bit `T`)
  ::dnnl::convolution_forward::primitive_desc fwd_pd_;
  ::dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  ::dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd_;
  ::dnnl::convolution_forward fwd_;
  ::dnnl::convolution_backward_data bwd_data_;
  ::dnnl::convolution_backward_weights bwd_weights_;
  // Per pass and argument: the memory object the primitive binds, and the reorder if blocked.
  detail::Relayout fsrc_, fwei_, fdst_;   // forward: x, w in; y out
  detail::Relayout ddst_, dwei_, dsrc_;   // backward data: dz, w in; dx out
  detail::Relayout wsrc_, wdst_, wdwei_;  // backward weights: x, dz in; dw out
  ::dnnl::memory bias_;                   // bias and its gradient: always plain
  ::dnnl::memory fwd_scratch_, bwd_data_scratch_, bwd_weights_scratch_;
};

}  // namespace memopt::cpu_backend::onednn
