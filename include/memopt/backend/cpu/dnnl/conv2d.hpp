#pragma once
// Conv2d: Keras's Conv2D on NHWC tensors through oneDNN. A batch runs in slices of rows, each
// through primitives created once for the slice's size (detail::Conv2dPasses), so that one
// call's working set stays in the caches whatever the batch.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "memopt/backend/cpu/dnnl/arithmetic_probe.hpp"
#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/conv2d_shape.hpp"
#include "memopt/backend/cpu/dnnl/detail/conv2d_layouts.hpp"
#include "memopt/backend/cpu/dnnl/detail/conv2d_passes.hpp"
#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"
#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
#include "memopt/backend/cpu/dnnl/layout.hpp"
#include "memopt/backend/cpu/dnnl/padding.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cpu_backend::onednn {

namespace detail {

// Conv2d's body for elements of any type, so that it compiles once: the batch's slices and
// their passes, on untyped pointers.
class Conv2dSlices {
 public:
  Conv2dSlices(const Conv2dShape& shape, const Conv2dTuning& tuning, const Element& element)
      : shape_(validated(shape)),
        tuning_(resolve(tuning, shape, element)),
        element_bytes_(element.bytes) {
    const std::int64_t rows = tuning_.rows_per_pass;
    full_.emplace(with_batch(rows), tuning_, element);
    if (const std::int64_t tail = shape_.batch % rows; tail > 0)
      tail_.emplace(with_batch(tail), tuning_, element);
    std::size_t bytes = full_->scratchpad_bytes();
    if (tail_) bytes = std::max(bytes, tail_->scratchpad_bytes());
    if (rows < shape_.batch) {
      // Each slice after the first computes its weight gradient here, then adds it.
      partial_at_ = align_up(bytes);
      bytes = partial_at_ + align_up((shape_.kernel_elements() + filters()) * sizeof(float));
    }
    scratchpad_bytes_ = bytes;
  }

  const Conv2dShape& shape() const { return shape_; }
  /// The layouts the passes compute in and the rows of each pass (`automatic` resolved).
  const Conv2dTuning& tuning() const { return tuning_; }
  /// Bytes of caller-owned scratch each method needs (the maximum over the three).
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }
  /// False when 16-bit elements run through float32 primitives (by choice, or on a CPU
  /// without 16-bit kernels).
  bool native() const { return full_->native(); }
  /// oneDNN's implementation names, e.g. "jit:avx2 / jit:avx2 / gemm:jit", for reports.
  std::string implementation() const { return full_->implementation(); }

  /// y = act(conv(x, w) + b). `b` is ignored (may be null) without bias.
  void forward(const void* x, const void* w, const float* b, void* y, void* scratchpad) const {
    for_each_slice([&](const Conv2dPasses& p, std::size_t row) {
      p.forward(at(x, row * in_row()), w, b, at(y, row * out_row()), scratchpad);
    });
  }

  /// dx = the gradient of the loss with respect to x, from dz (w.r.t. the pre-activation).
  void backward_data(const void* dz, const void* w, void* dx, void* scratchpad) const {
    for_each_slice([&](const Conv2dPasses& p, std::size_t row) {
      p.backward_data(at(dz, row * out_row()), w, at(dx, row * in_row()), scratchpad);
    });
  }

  /// dw (Keras's kernel layout) and db, overwritten (not accumulated). `db` is ignored (may
  /// be null) without bias.
  void backward_weights(const void* x, const void* dz, float* dw, float* db,
                        void* scratchpad) const {
    for_each_slice([&](const Conv2dPasses& p, std::size_t row) {
      const void* xs = at(x, row * in_row());
      const void* dzs = at(dz, row * out_row());
      if (row == 0) {
        p.backward_weights(xs, dzs, dw, db, scratchpad);
        return;
      }
      // Only batches of several slices reserve this area: a one-slice batch may run on a
      // null scratchpad, where even forming the pointer would be undefined.
      float* partial_dw = staging_at(scratchpad, partial_at_);
      float* partial_db = partial_dw + shape_.kernel_elements();
      p.backward_weights(xs, dzs, partial_dw, partial_db, scratchpad);
      add(partial_dw, dw, shape_.kernel_elements());
      if (shape_.bias && db != nullptr) add(partial_db, db, filters());
    });
  }

 private:
  static Conv2dShape validated(const Conv2dShape& s) {
    if (s.batch <= 0 || s.height <= 0 || s.width <= 0 || s.in_channels <= 0 || s.filters <= 0 ||
        s.kernel_h <= 0 || s.kernel_w <= 0 || s.stride_h <= 0 || s.stride_w <= 0 || s.groups <= 0)
      throw error("Conv2d: expected positive sizes, kernel, strides and groups");
    if (s.in_channels % s.groups != 0 || s.filters % s.groups != 0)
      throw error("Conv2d: " + std::to_string(s.groups) + " groups do not divide " +
                  std::to_string(s.in_channels) + " input channels and " +
                  std::to_string(s.filters) + " filters");
    if (s.out_height() <= 0 || s.out_width() <= 0)
      throw error("Conv2d: the kernel " + std::to_string(s.kernel_h) + "x" +
                  std::to_string(s.kernel_w) + " is larger than its " + std::to_string(s.height) +
                  "x" + std::to_string(s.width) + " input under valid padding");
    return s;
  }

  // Conv2dTuning's `automatic` (its comment gives the measurements).
  static Conv2dTuning resolve(Conv2dTuning t, const Conv2dShape& s, const Element& element) {
    t = with_rows_and_layouts(t, s);
    if (t.arithmetic == Arithmetic::automatic) {
      const bool wide = s.in_channels < 4 || !sixteen_bit_pays(element);
      t.arithmetic = wide ? Arithmetic::float32 : Arithmetic::element;
    }
    return t;
  }
  static bool sixteen_bit_pays(const Element& element) {
    using Type = ::dnnl::memory::data_type;
    if (element.type == Type::bf16) return arithmetic_probe<bfloat16>().sixteen_bit_pays();
    if (element.type == Type::f16) return arithmetic_probe<half>().sixteen_bit_pays();
    return true;  // float32: nothing to choose
  }

  Conv2dShape with_batch(std::int64_t rows) const {
    Conv2dShape s = shape_;
    s.batch = rows;
    return s;
  }
  // The element `index` elements past `p`.
  const void* at(const void* p, std::size_t index) const {
    return static_cast<const std::byte*>(p) + index * element_bytes_;
  }
  void* at(void* p, std::size_t index) const {
    return static_cast<std::byte*>(p) + index * element_bytes_;
  }
  std::size_t in_row() const { return shape_.input_row_elements(); }
  std::size_t out_row() const { return shape_.output_row_elements(); }
  std::size_t filters() const { return static_cast<std::size_t>(shape_.filters); }

  // f(passes, first row) for each slice of the batch, in order.
  template <class F>
  void for_each_slice(F&& f) const {
    const auto batch = static_cast<std::size_t>(shape_.batch);
    const auto rows = static_cast<std::size_t>(tuning_.rows_per_pass);
    std::size_t row = 0;
    for (; row + rows <= batch; row += rows) f(*full_, row);
    if (row < batch) f(*tail_, row);
  }

  static void add(const float* from, float* to, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) to[i] += from[i];
  }

  Conv2dShape shape_;
  Conv2dTuning tuning_;
  std::size_t element_bytes_;
  std::optional<Conv2dPasses> full_;  // slices of tuning_.rows_per_pass rows
  std::optional<Conv2dPasses> tail_;  // the batch's remainder, when there is one
  std::size_t scratchpad_bytes_ = 0;
  std::size_t partial_at_ = 0;  // a later slice's dw and db, in the scratchpad
};

}  // namespace detail

/// Keras's Conv2D through oneDNN for `T` = float, bfloat16 or half (bias and weight gradients
/// stay float32, as under Keras's mixed policies). Where this CPU has no 16-bit convolution
/// (oneDNN 2.6.3 has bf16 kernels from AVX-512 on, and created no f16 one even on a Sapphire
/// Rapids with AVX-512 FP16), where Conv2dTuning::arithmetic asks for float32, or where it is
/// automatic and `arithmetic_probe` measured this CPU's 16-bit kernels slower than float32 ones,
/// the 16-bit variants convert to float32 in the scratchpad and run the float32 primitives:
/// `native()` says which. Not safe to call from two threads at once.
///
/// With `relu`, `forward` writes relu(conv(x) + b) and the backward methods take dz, the
/// gradient with respect to the pre-activation (see relu_backward). The caller's buffers are
/// always NHWC/HWIO; a pass computing in a blocked layout reorders through the scratchpad.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// Conv2d<float> conv(Conv2dShape{.batch = 32, .height = 28, .width = 28, .in_channels = 1,
///                                .filters = 32, .kernel_h = 3, .kernel_w = 3});
/// std::vector<float> x(32 * 28 * 28), w(3 * 3 * 32), b(32), y(32 * 26 * 26 * 32);
/// std::vector<float> dz(y.size()), dx(x.size()), dw(w.size()), db(b.size());
/// std::vector<std::byte> scratch(conv.scratchpad_bytes());  // 64-byte aligned in practice
/// conv.forward(x.data(), w.data(), b.data(), y.data(), scratch.data());
/// conv.backward_data(dz.data(), w.data(), dx.data(), scratch.data());
/// conv.backward_weights(x.data(), dz.data(), dw.data(), db.data(), scratch.data());
/// ```
template <detail::DnnlElement T>
class Conv2d {
 public:
  explicit Conv2d(const Conv2dShape& shape, const Conv2dTuning& tuning = {})
      : slices_(shape, tuning, detail::element_of<T>) {}

  const Conv2dShape& shape() const { return slices_.shape(); }
  /// The layouts the passes compute in and the rows of each pass (`automatic` resolved).
  const Conv2dTuning& tuning() const { return slices_.tuning(); }
  /// Bytes of caller-owned scratch each method needs (the maximum over the three).
  std::size_t scratchpad_bytes() const { return slices_.scratchpad_bytes(); }
  /// False when a 16-bit `T` runs through float32 primitives (by choice, or on a CPU without
  /// 16-bit kernels).
  bool native() const { return slices_.native(); }
  /// oneDNN's implementation names, e.g. "jit:avx2 / jit:avx2 / gemm:jit", for reports.
  std::string implementation() const { return slices_.implementation(); }

  /// y = act(conv(x, w) + b). `b` is ignored (may be null) without bias.
  void forward(const T* x, const T* w, const float* b, T* y, void* scratchpad) const {
    slices_.forward(x, w, b, y, scratchpad);
  }
  /// dx = the gradient of the loss with respect to x, from dz (w.r.t. the pre-activation).
  void backward_data(const T* dz, const T* w, T* dx, void* scratchpad) const {
    slices_.backward_data(dz, w, dx, scratchpad);
  }
  /// dw (Keras's kernel layout) and db, overwritten (not accumulated). `db` is ignored (may
  /// be null) without bias.
  void backward_weights(const T* x, const T* dz, float* dw, float* db, void* scratchpad) const {
    slices_.backward_weights(x, dz, dw, db, scratchpad);
  }

 private:
  detail::Conv2dSlices slices_;
};

}  // namespace memopt::cpu_backend::onednn
