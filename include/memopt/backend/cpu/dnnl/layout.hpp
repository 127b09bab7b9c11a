#pragma once
// Which memory layout a oneDNN primitive computes in: the caller's plain NHWC/HWIO, or the
// blocked layout oneDNN prefers (format_tag::any), reached through reorders in the scratchpad.

namespace memopt::cpu_backend::onednn {

/// The layout one pass of an operation computes in.
///
/// `plain` reads and writes the caller's NHWC/HWIO buffers directly (for a convolution oneDNN
/// then picks its GEMM-based kernel); `blocked` lets oneDNN choose (its direct JIT kernels on
/// 8- or 16-channel blocks) and reorders between the caller's buffers and staging areas in the
/// scratchpad; `blocked_weights` keeps the activations in the caller's NHWC and lets oneDNN
/// choose the weights' layout only (on AVX-512 its brgemm kernels read channels-last data, so
/// only the small kernel is reordered); `automatic` picks per pass from bench_dnnl_ops's
/// measurements.
///
/// ```cpp
/// using namespace mo::cpu_backend::onednn;
/// Conv2dShape shape{.batch = 32, .height = 28, .width = 28, .filters = 32, .kernel_h = 3,
///                   .kernel_w = 3};
/// Conv2d<float> conv(shape, Conv2dTuning{.backward_weights = Layout::plain});
/// ```
enum class Layout { automatic, plain, blocked, blocked_weights };

}  // namespace memopt::cpu_backend::onednn
