#pragma once
// Pool2d: Keras's MaxPooling2D and AveragePooling2D on NHWC tensors through oneDNN, with
// max pooling's argmax kept in a caller-owned workspace between forward and backward.

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
#include "memopt/core/error.hpp"

namespace memopt::cpu_backend::onednn {

/// Which pooling: Keras's MaxPooling2D or AveragePooling2D (whose `same` windows average
/// over the pixels inside the input only, as TensorFlow's avg_pool does).
enum class PoolKind { max, average };

/// The static description of a 2-D pooling over [batch, height, width, channels].
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// Pool2dShape s{.batch = 32, .height = 26, .width = 26, .channels = 32,
///               .pool_h = 2, .pool_w = 2, .stride_h = 2, .stride_w = 2};  // -> 13x13
/// ```
struct Pool2dShape {
  std::int64_t batch = 1;
  std::int64_t height = 1;
  std::int64_t width = 1;
  std::int64_t channels = 1;
  std::int64_t pool_h = 2;
  std::int64_t pool_w = 2;
  std::int64_t stride_h = 2;  ///< Keras's default: the pool size
  std::int64_t stride_w = 2;
  Padding padding = Padding::valid;
  PoolKind kind = PoolKind::max;

  constexpr WindowAxis rows() const { return window_axis(height, pool_h, stride_h, padding); }
  constexpr WindowAxis cols() const { return window_axis(width, pool_w, stride_w, padding); }
  constexpr std::int64_t out_height() const { return rows().out; }
  constexpr std::int64_t out_width() const { return cols().out; }
  constexpr std::size_t input_elements() const {
    return static_cast<std::size_t>(batch * height * width * channels);
  }
  constexpr std::size_t output_elements() const {
    return static_cast<std::size_t>(batch * out_height() * out_width() * channels);
  }
};

/// Keras's 2-D pooling through oneDNN for `T` = float, bfloat16 or half (16-bit data is pooled
/// in float32 through the scratchpad where this CPU has no 16-bit pooling: `native()`). Max pooling
/// writes its argmax to a caller-owned workspace of `workspace_bytes()` in `forward` and reads
/// it in `backward`; average pooling needs none. Not safe to call from two threads at once.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// Pool2d<float> pool(Pool2dShape{.batch = 32, .height = 26, .width = 26, .channels = 32});
/// std::vector<float> x(32 * 26 * 26 * 32), dx(x.size());
/// std::vector<float> y(pool.shape().output_elements()), dy(y.size());
/// std::vector<std::byte> workspace(pool.workspace_bytes()), scratch(pool.scratchpad_bytes());
/// pool.forward(x.data(), y.data(), workspace.data(), scratch.data());
/// pool.backward(dy.data(), workspace.data(), dx.data(), scratch.data());
/// pool.forward_inference(x.data(), y.data(), scratch.data());  // predict: no argmax kept
/// ```
template <detail::DnnlElement T>
class Pool2d {
 public:
  explicit Pool2d(const Pool2dShape& shape) : shape_(shape) {
    validate();
    bool built = false;
    if constexpr (!std::is_same_v<T, float>)
      built = build(detail::data_type_of<T>(), /*allow_empty=*/true);
    if (!built) {
      native_ = std::is_same_v<T, float>;
      build(::dnnl::memory::data_type::f32, /*allow_empty=*/false);
    }
    scratchpad_bytes_ = detail::align_up(
        std::max({fwd_pd_.scratchpad_desc().get_size(), infer_pd_.scratchpad_desc().get_size(),
                  bwd_pd_.scratchpad_desc().get_size()}));
    if (!native_) {
      input_at_ = scratchpad_bytes_;
      output_at_ = input_at_ + detail::align_up(shape_.input_elements() * sizeof(float));
      scratchpad_bytes_ = output_at_ + detail::align_up(shape_.output_elements() * sizeof(float));
    }
  }

  const Pool2dShape& shape() const { return shape_; }
  /// Bytes of the argmax workspace (0 for average pooling); it must live from forward to
  /// backward.
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  /// Bytes of scratch for one call, free again when it returns.
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  bool native() const { return native_; }
  std::string implementation() const {
    return std::string(fwd_pd_.impl_info_str()) + " / " + bwd_pd_.impl_info_str();
  }

  /// y = pool(x); max pooling also records its argmax in `workspace`.
  void forward(const T* x, T* y, void* workspace, void* scratchpad) const {
    forward_pass(x, y, workspace, scratchpad, /*training=*/true);
  }

  /// y = pool(x) without an argmax (no workspace): Keras's evaluate and predict.
  void forward_inference(const T* x, T* y, void* scratchpad) const {
    forward_pass(x, y, nullptr, scratchpad, /*training=*/false);
  }

  /// dx from dy (and, for max pooling, the argmax `forward` left in `workspace`).
  void backward(const T* dy, const void* workspace, T* dx, void* scratchpad) const {
    if constexpr (!std::is_same_v<T, float>) {
      if (!native_) {
        float* dx32 = detail::staging_at(scratchpad, input_at_);
        float* dy32 = detail::staging_at(scratchpad, output_at_);
        detail::widen(dy, dy32, shape_.output_elements());
        run_backward(dy32, workspace, dx32, scratchpad);
        detail::narrow(dx32, dx, shape_.input_elements());
        return;
      }
    }
    run_backward(dy, workspace, dx, scratchpad);
  }

 private:
  void validate() const {
    const Pool2dShape& s = shape_;
    if (s.batch <= 0 || s.height <= 0 || s.width <= 0 || s.channels <= 0 || s.pool_h <= 0 ||
        s.pool_w <= 0 || s.stride_h <= 0 || s.stride_w <= 0)
      throw error("Pool2d: expected positive sizes, pool and strides");
    if (s.out_height() <= 0 || s.out_width() <= 0)
      throw error("Pool2d: the pool " + std::to_string(s.pool_h) + "x" + std::to_string(s.pool_w) +
                  " is larger than its " + std::to_string(s.height) + "x" +
                  std::to_string(s.width) + " input under valid padding");
  }

  bool build(::dnnl::memory::data_type type, bool allow_empty) {
    using md = ::dnnl::memory::desc;
    using tag = ::dnnl::memory::format_tag;
    const Pool2dShape& s = shape_;
    const WindowAxis r = s.rows(), c = s.cols();
    const md src({s.batch, s.channels, s.height, s.width}, type, tag::nhwc);
    const md dst({s.batch, s.channels, r.out, c.out}, type, tag::nhwc);
    const ::dnnl::memory::dims strides{s.stride_h, s.stride_w}, kernel{s.pool_h, s.pool_w};
    const ::dnnl::memory::dims pad_l{r.before, c.before}, pad_r{r.after, c.after};
    const auto algo = s.kind == PoolKind::max ? ::dnnl::algorithm::pooling_max
                                              : ::dnnl::algorithm::pooling_avg_exclude_padding;
    const ::dnnl::engine& eng = Context::get().engine;
    ::dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(::dnnl::scratchpad_mode::user);
    try {
      const ::dnnl::pooling_forward::desc fd(::dnnl::prop_kind::forward_training, algo, src, dst,
                                             strides, kernel, pad_l, pad_r);
      ::dnnl::pooling_forward::primitive_desc fpd(fd, attr, eng, allow_empty);
      if (!fpd) return false;
      const ::dnnl::pooling_forward::desc id(::dnnl::prop_kind::forward_inference, algo, src, dst,
                                             strides, kernel, pad_l, pad_r);
      ::dnnl::pooling_forward::primitive_desc ipd(id, attr, eng, allow_empty);
      if (!ipd) return false;
      const ::dnnl::pooling_backward::desc bd(algo, src, dst, strides, kernel, pad_l, pad_r);
      ::dnnl::pooling_backward::primitive_desc bpd(bd, attr, eng, fpd, allow_empty);
      if (!bpd) return false;
      fwd_pd_ = fpd;
      bwd_pd_ = bpd;
      infer_pd_ = ipd;
      fwd_ = ::dnnl::pooling_forward(fwd_pd_);
      infer_ = ::dnnl::pooling_forward(infer_pd_);
      bwd_ = ::dnnl::pooling_backward(bwd_pd_);
    } catch (const ::dnnl::error& e) {
      detail::rethrow("Pool2d", e);
    }
    src_ = detail::placeholder(src);
    dst_ = detail::placeholder(dst);
    const md ws = fwd_pd_.workspace_desc();
    workspace_bytes_ = ws.get_size();
    if (workspace_bytes_ > 0) workspace_ = detail::placeholder(ws);
    fwd_scratch_ = detail::scratch_memory(fwd_pd_);
    infer_scratch_ = detail::scratch_memory(infer_pd_);
    bwd_scratch_ = detail::scratch_memory(bwd_pd_);
    return true;
  }

  void forward_pass(const T* x, T* y, void* workspace, void* scratchpad, bool training) const {
    if constexpr (!std::is_same_v<T, float>) {
      if (!native_) {
        float* x32 = detail::staging_at(scratchpad, input_at_);
        float* y32 = detail::staging_at(scratchpad, output_at_);
        detail::widen(x, x32, shape_.input_elements());
        run_forward(x32, y32, workspace, scratchpad, training);
        detail::narrow(y32, y, shape_.output_elements());
        return;
      }
    }
    run_forward(x, y, workspace, scratchpad, training);
  }

  void run_forward(const void* x, void* y, void* workspace, void* scratch, bool training) const {
    if (training)
      detail::execute(fwd_, {{DNNL_ARG_SRC, &src_, x},
                             {DNNL_ARG_DST, &dst_, y},
                             {DNNL_ARG_WORKSPACE, detail::maybe(workspace_), workspace},
                             {DNNL_ARG_SCRATCHPAD, detail::maybe(fwd_scratch_), scratch}});
    else
      detail::execute(infer_, {{DNNL_ARG_SRC, &src_, x},
                               {DNNL_ARG_DST, &dst_, y},
                               {DNNL_ARG_SCRATCHPAD, detail::maybe(infer_scratch_), scratch}});
  }
  void run_backward(const void* dy, const void* workspace, void* dx, void* scratch) const {
    detail::execute(bwd_, {{DNNL_ARG_DIFF_DST, &dst_, dy},
                           {DNNL_ARG_WORKSPACE, detail::maybe(workspace_), workspace},
                           {DNNL_ARG_DIFF_SRC, &src_, dx},
                           {DNNL_ARG_SCRATCHPAD, detail::maybe(bwd_scratch_), scratch}});
  }

  Pool2dShape shape_;
  bool native_ = true;
  std::size_t workspace_bytes_ = 0;
  std::size_t scratchpad_bytes_ = 0;
  std::size_t input_at_ = 0, output_at_ = 0;  // staging offsets (emulated 16-bit)
  ::dnnl::pooling_forward::primitive_desc fwd_pd_, infer_pd_;
  ::dnnl::pooling_backward::primitive_desc bwd_pd_;
  ::dnnl::pooling_forward fwd_, infer_;
  ::dnnl::pooling_backward bwd_;
  ::dnnl::memory src_, dst_, workspace_, fwd_scratch_, infer_scratch_, bwd_scratch_;
};

}  // namespace memopt::cpu_backend::onednn
