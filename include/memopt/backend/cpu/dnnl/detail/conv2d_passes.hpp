#pragma once
// Conv2dPasses: one Conv2d's three oneDNN primitives (forward, backward data, backward
// weights) for one batch size, created once, reading and writing the caller's memory. Conv2d
// runs a batch through them in slices of rows.

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/conv2d_shape.hpp"
#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"
#include "memopt/backend/cpu/dnnl/detail/execute.hpp"
#include "memopt/backend/cpu/dnnl/detail/relayout.hpp"
#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
#include "memopt/core/dtype.hpp"

namespace memopt::cpu_backend::onednn::detail {

/// The primitives of a convolution of `shape` (its batch: the rows of one pass) on elements
/// of `element`, computing in the layouts and arithmetic of `resolved` (none `automatic`). The
/// 16-bit variants run float32 primitives on float32 copies in the scratchpad where `resolved`
/// asks for float32 or oneDNN has no 16-bit kernel here. Not a template: one copy of this code
/// serves every element type.
class Conv2dPasses {
 public:
  Conv2dPasses(const Conv2dShape& shape, const Conv2dTuning& resolved, const Element& element)
      : shape_(shape), layouts_(resolved), element_(element) {
    bool built = false;
    if (!element_.is_float32() && resolved.arithmetic == Arithmetic::element)
      built = build(element_.type, /*allow_empty=*/true);
    if (!built) {
      native_ = element_.is_float32();
      build(::dnnl::memory::data_type::f32, /*allow_empty=*/false);
    }
    // The scratchpad: [oneDNN's scratch (the primitives' and the reorders', never live at
    // once) | float32 copies of 16-bit data (emulated path) | blocked staging of one pass].
    std::size_t prim =
        std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                  bwd_weights_pd_.scratchpad_desc().get_size()});
    for (const Relayout* r : relayouts()) prim = std::max(prim, r->scratch_bytes());
    scratchpad_bytes_ = align_up(prim);
    if (!native_) {
      input_at_ = scratchpad_bytes_;
      output_at_ = input_at_ + align_up(shape_.input_elements() * sizeof(float));
      kernel_at_ = output_at_ + align_up(shape_.output_elements() * sizeof(float));
      scratchpad_bytes_ = kernel_at_ + align_up(shape_.kernel_elements() * sizeof(float));
    }
    const std::size_t base = scratchpad_bytes_;
    const std::array<std::array<Relayout*, 3>, 3> passes{
        {{&fsrc_, &fwei_, &fdst_}, {&ddst_, &dwei_, &dsrc_}, {&wsrc_, &wdst_, &wdwei_}}};
    for (const auto& pass : passes) {
      std::size_t at = base;
      for (Relayout* r : pass) {
        r->place(at);
        at += align_up(r->staging_bytes());
      }
      scratchpad_bytes_ = std::max(scratchpad_bytes_, at);
    }
  }

  /// Bytes of caller-owned scratch each method needs (the maximum over the three).
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  /// False when 16-bit elements run through float32 primitives.
  bool native() const { return native_; }
  /// oneDNN's implementation names, e.g. "jit:avx2 / jit:avx2 / gemm:jit", for reports.
  std::string implementation() const {
    return std::string(fwd_pd_.impl_info_str()) + " / " + bwd_data_pd_.impl_info_str() + " / " +
           bwd_weights_pd_.impl_info_str();
  }

  /// y = act(conv(x, w) + b). `b` is ignored (may be null) without bias.
  void forward(const void* x, const void* w, const float* b, void* y, void* scratchpad) const {
    const float* bias = shape_.bias ? b : nullptr;
    if (!native_) {
      float* x32 = staging_at(scratchpad, input_at_);
      float* y32 = staging_at(scratchpad, output_at_);
      float* w32 = staging_at(scratchpad, kernel_at_);
      element_.widen(x, x32, shape_.input_elements());
      element_.widen(w, w32, shape_.kernel_elements());
      run_forward(x32, w32, bias, y32, scratchpad);
      element_.narrow(y32, y, shape_.output_elements());
      return;
    }
    run_forward(x, w, bias, y, scratchpad);
  }

  /// dx = the gradient of the loss with respect to x, from dz (w.r.t. the pre-activation).
  void backward_data(const void* dz, const void* w, void* dx, void* scratchpad) const {
    if (!native_) {
      float* dx32 = staging_at(scratchpad, input_at_);
      float* dz32 = staging_at(scratchpad, output_at_);
      float* w32 = staging_at(scratchpad, kernel_at_);
      element_.widen(dz, dz32, shape_.output_elements());
      element_.widen(w, w32, shape_.kernel_elements());
      run_backward_data(dz32, w32, dx32, scratchpad);
      element_.narrow(dx32, dx, shape_.input_elements());
      return;
    }
    run_backward_data(dz, w, dx, scratchpad);
  }

  /// dw (Keras's kernel layout) and db, overwritten (not accumulated). `db` is ignored (may
  /// be null) without bias.
  void backward_weights(const void* x, const void* dz, float* dw, float* db,
                        void* scratchpad) const {
    float* dbias = shape_.bias ? db : nullptr;
    if (!native_) {
      float* x32 = staging_at(scratchpad, input_at_);
      float* dz32 = staging_at(scratchpad, output_at_);
      element_.widen(x, x32, shape_.input_elements());
      element_.widen(dz, dz32, shape_.output_elements());
      run_backward_weights(x32, dz32, dw, dbias, scratchpad);
      return;
    }
    run_backward_weights(x, dz, dw, dbias, scratchpad);
  }

 private:
  std::array<const Relayout*, 9> relayouts() const {
    return {&fsrc_, &fwei_, &fdst_, &ddst_, &dwei_, &dsrc_, &wsrc_, &wdst_, &wdwei_};
  }

  // Creates the three primitives with activations in `act`; false when oneDNN has no
  // implementation and `allow_empty`.
  [[gnu::cold]] bool build(::dnnl::memory::data_type act, bool allow_empty) {
    using md = ::dnnl::memory::desc;
    using tag = ::dnnl::memory::format_tag;
    using dt = ::dnnl::memory::data_type;
    const Conv2dShape& s = shape_;
    const WindowAxis r = s.rows(), c = s.cols();
    const ::dnnl::memory::dims src_dims{s.batch, s.in_channels, s.height, s.width};
    const ::dnnl::memory::dims dst_dims{s.batch, s.filters, r.out, c.out};
    // Grouped weights are [groups, filters / groups, in / groups, kh, kw] to oneDNN; hwigo is
    // Keras's grouped kernel [kh, kw, in / groups, filters] (filter g x filters / groups + o),
    // and DepthwiseConv2D's [kh, kw, in, depth_multiplier] where in / groups is 1.
    const bool grouped = s.groups > 1;
    const ::dnnl::memory::dims wei_dims =
        grouped ? ::dnnl::memory::dims{s.groups, s.filters / s.groups, s.in_channels / s.groups,
                                       s.kernel_h, s.kernel_w}
                : ::dnnl::memory::dims{s.filters, s.in_channels, s.kernel_h, s.kernel_w};
    const tag wei_tag = grouped ? tag::hwigo : tag::hwio;
    // The caller's layouts; a blocked pass asks oneDNN for format_tag::any instead.
    const md src(src_dims, act, tag::nhwc), dst(dst_dims, act, tag::nhwc);
    const md wei(wei_dims, act, wei_tag), dwei(wei_dims, dt::f32, wei_tag);
    const md bias = s.bias ? md({s.filters}, dt::f32, tag::x) : md();
    auto ask = [](Layout l, const ::dnnl::memory::dims& dims, dt type, tag plain) {
      const bool keep = l == Layout::plain || (l == Layout::blocked_weights && plain == tag::nhwc);
      return md(dims, type, keep ? plain : tag::any);
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
                         ask(fl, src_dims, act, tag::nhwc), ask(fl, wei_dims, act, wei_tag), bias,
                         ask(fl, dst_dims, act, tag::nhwc), strides, pad_l, pad_r);
      fwd::primitive_desc fpd(fd, fwd_attr, eng, allow_empty);
      if (!fpd) return false;
      const bwd_data::desc bd(algo, ask(bl, src_dims, act, tag::nhwc),
                              ask(bl, wei_dims, act, wei_tag), ask(bl, dst_dims, act, tag::nhwc),
                              strides, pad_l, pad_r);
      bwd_data::primitive_desc bpd(bd, attr, eng, fpd, allow_empty);
      if (!bpd) return false;
      const bwd_weights::desc wd(algo, ask(wl, src_dims, act, tag::nhwc),
                                 ask(wl, wei_dims, dt::f32, wei_tag), bias,
                                 ask(wl, dst_dims, act, tag::nhwc), strides, pad_l, pad_r);
      bwd_weights::primitive_desc wpd(wd, attr, eng, fpd, allow_empty);
      if (!wpd) return false;
      fwd_pd_ = fpd;
      bwd_data_pd_ = bpd;
      bwd_weights_pd_ = wpd;
      fwd_ = fwd(fwd_pd_);
      bwd_data_ = bwd_data(bwd_data_pd_);
      bwd_weights_ = bwd_weights(bwd_weights_pd_);
      fsrc_ = Relayout(src, fwd_pd_.src_desc(), true);
      fwei_ = Relayout(wei, fwd_pd_.weights_desc(), true);
      fdst_ = Relayout(dst, fwd_pd_.dst_desc(), false);
      ddst_ = Relayout(dst, bwd_data_pd_.diff_dst_desc(), true);
      dwei_ = Relayout(wei, bwd_data_pd_.weights_desc(), true);
      dsrc_ = Relayout(src, bwd_data_pd_.diff_src_desc(), false);
      wsrc_ = Relayout(src, bwd_weights_pd_.src_desc(), true);
      wdst_ = Relayout(dst, bwd_weights_pd_.diff_dst_desc(), true);
      wdwei_ = Relayout(dwei, bwd_weights_pd_.diff_weights_desc(), false);
    } catch (const ::dnnl::error& e) {
      rethrow("Conv2d", e);
    }
    if (s.bias) bias_ = placeholder(bias);
    fwd_scratch_ = scratch_memory(fwd_pd_);
    bwd_data_scratch_ = scratch_memory(bwd_data_pd_);
    bwd_weights_scratch_ = scratch_memory(bwd_weights_pd_);
    return true;
  }

  // Each pass: reorder its inputs in (when blocked), run, reorder its output out.
  void run_forward(const void* x, const void* w, const float* b, void* y, void* scratch) const {
    fsrc_.load(x, scratch);
    fwei_.load(w, scratch);
    execute(fwd_, {{DNNL_ARG_SRC, &fsrc_.inner(), fsrc_.target(x, scratch)},
                   {DNNL_ARG_WEIGHTS, &fwei_.inner(), fwei_.target(w, scratch)},
                   {DNNL_ARG_BIAS, maybe(bias_), b},
                   {DNNL_ARG_DST, &fdst_.inner(), fdst_.target(y, scratch)},
                   {DNNL_ARG_SCRATCHPAD, maybe(fwd_scratch_), scratch}});
    fdst_.store(y, scratch);
  }
  void run_backward_data(const void* dz, const void* w, void* dx, void* scratch) const {
    ddst_.load(dz, scratch);
    dwei_.load(w, scratch);
    execute(bwd_data_, {{DNNL_ARG_DIFF_DST, &ddst_.inner(), ddst_.target(dz, scratch)},
                        {DNNL_ARG_WEIGHTS, &dwei_.inner(), dwei_.target(w, scratch)},
                        {DNNL_ARG_DIFF_SRC, &dsrc_.inner(), dsrc_.target(dx, scratch)},
                        {DNNL_ARG_SCRATCHPAD, maybe(bwd_data_scratch_), scratch}});
    dsrc_.store(dx, scratch);
  }
  void run_backward_weights(const void* x, const void* dz, float* dw, float* db,
                            void* scratch) const {
    wsrc_.load(x, scratch);
    wdst_.load(dz, scratch);
    execute(bwd_weights_, {{DNNL_ARG_SRC, &wsrc_.inner(), wsrc_.target(x, scratch)},
                           {DNNL_ARG_DIFF_DST, &wdst_.inner(), wdst_.target(dz, scratch)},
                           {DNNL_ARG_DIFF_WEIGHTS, &wdwei_.inner(), wdwei_.target(dw, scratch)},
                           {DNNL_ARG_DIFF_BIAS, maybe(bias_), db},
                           {DNNL_ARG_SCRATCHPAD, maybe(bwd_weights_scratch_), scratch}});
    wdwei_.store(dw, scratch);
  }

  Conv2dShape shape_;
  Conv2dTuning layouts_;
  Element element_;
  bool native_ = true;
  std::size_t scratchpad_bytes_ = 0;
  std::size_t input_at_ = 0, output_at_ = 0, kernel_at_ = 0;  // float32 copies (16-bit)
  ::dnnl::convolution_forward::primitive_desc fwd_pd_;
  ::dnnl::convolution_backward_data::primitive_desc bwd_data_pd_;
  ::dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd_;
  ::dnnl::convolution_forward fwd_;
  ::dnnl::convolution_backward_data bwd_data_;
  ::dnnl::convolution_backward_weights bwd_weights_;
  // Per pass and argument: the memory object the primitive binds, and the reorder if blocked.
  Relayout fsrc_, fwei_, fdst_;   // forward: x, w in; y out
  Relayout ddst_, dwei_, dsrc_;   // backward data: dz, w in; dx out
  Relayout wsrc_, wdst_, wdwei_;  // backward weights: x, dz in; dw out
  ::dnnl::memory bias_;           // bias and its gradient: always plain
  ::dnnl::memory fwd_scratch_, bwd_data_scratch_, bwd_weights_scratch_;
};

}  // namespace memopt::cpu_backend::onednn::detail
