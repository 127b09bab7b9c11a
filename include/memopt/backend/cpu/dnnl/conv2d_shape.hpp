#pragma once
// What a Conv2d is (Conv2dShape) and how it runs (Conv2dTuning): the layouts its passes
// compute in, and how many rows of the batch each primitive call takes.

#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/dnnl/layout.hpp"
#include "memopt/backend/cpu/dnnl/padding.hpp"

namespace memopt::cpu_backend::onednn {

/// The static description of a 2-D convolution: input [batch, height, width, in_channels]
/// (channels last), kernel [kernel_h, kernel_w, in_channels, filters] (Keras's layout),
/// bias [filters], output [batch, out_height(), out_width(), filters]. With `groups` > 1 the
/// channels split into that many groups, each convolved apart: a depthwise convolution has
/// groups = in_channels and filters = in_channels x depth_multiplier, kernel [kernel_h,
/// kernel_w, in_channels, depth_multiplier] (Keras's DepthwiseConv2D layout), output channel
/// c x depth_multiplier + m from input channel c.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
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
  // Last, so that positional initializers of the fields above keep their meaning.
  std::int64_t groups = 1;  ///< dividing in_channels and filters

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
    return static_cast<std::size_t>(kernel_h * kernel_w * (in_channels / groups) * filters);
  }
  constexpr std::size_t input_row_elements() const {
    return static_cast<std::size_t>(height * width * in_channels);
  }
  constexpr std::size_t output_row_elements() const {
    return static_cast<std::size_t>(out_height() * out_width() * filters);
  }
};

/// The type a convolution's primitives compute in for 16-bit elements: their own (oneDNN's
/// bf16/f16 kernels, where this CPU has them), or float32 on float32 copies in the scratchpad.
/// Float32 elements always compute in float32.
enum class Arithmetic { automatic, element, float32 };

/// How a Conv2d runs. `automatic` layouts and `rows_per_pass = 0` pick from bench_dnnl_ops's
/// measurements (oneDNN 2.6.3, one thread, reorders included):
///
/// - rows per pass: a batch runs in slices of at most as many rows as keep one slice's input
///   and output within 1 MiB (a power of two: 8 rows for the MNIST convnet's 28x28x1 -> 32,
///   16 for its 13x13x32 -> 64). Per sample, oneDNN's kernels get 1.1-2.6x slower from
///   batch 32 to 128 as their working set leaves the caches; slices keep it there.
/// - on AVX-512 (a Sapphire Rapids): every pass `blocked_weights`. Its brgemm kernels on
///   NHWC activations beat the blocked layout with its reorders by 10-18% in float32
///   forward passes (the 28x28x1 weight gradient: within 10% either way) and tie it under bfloat16,
///   where both run on AMX; against the GEMM kernels, the 28x28x1 -> 32 weight gradient is 3x
///   faster in float32 and the bfloat16 passes 3.2-4.5x.
/// - forward on AVX2: blocked (for 28x28x1 -> 32, 7-11x faster than the NHWC GEMM kernel; for
///   13x13x32 -> 64, 1.7x);
/// - backward data on AVX2: plain when a pass takes at most 16 rows or the input has fewer
///   than 4 channels (1.3x faster there), else blocked;
/// - backward weights on AVX2: plain below 4 input channels (1.8x faster), else blocked
///   (1.4x).
///
/// - arithmetic: 16-bit elements with fewer than 4 input channels compute in float32. For the
///   28x28x1 -> 32 convolution under bfloat16 on a Sapphire Rapids, at batch 32, the forward
///   pass takes 272 us against 305 us on oneDNN's bf16 kernels and the weight gradient 290 us
///   against 364 us, conversions included. All other convolutions compute in their own type
///   (13x13x32 -> 64's weight gradient: 462 us in bf16, 903 us through float32 with AMX),
///   unless `arithmetic_probe` finds this CPU's 16-bit kernels over 1.25x slower than its
///   float32 ones (1.9x on a Xeon VM without AMX, whose bfloat16 dot products run at half the
///   float32 FMA rate).
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// Conv2dTuning whole_batch_plain{Layout::plain, Layout::plain, Layout::plain, 1 << 30};
/// ```
struct Conv2dTuning {
  Layout forward = Layout::automatic;
  Layout backward_data = Layout::automatic;
  Layout backward_weights = Layout::automatic;
  std::int64_t rows_per_pass = 0;  ///< 0: automatic; else capped at the batch
  Arithmetic arithmetic = Arithmetic::automatic;
};

}  // namespace memopt::cpu_backend::onednn
