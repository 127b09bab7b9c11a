#pragma once
// Whether oneDNN's 16-bit convolutions are worth running on this CPU: timed once per process
// against its float32 ones on a reference convolution. Some CPUs report 16-bit instructions
// that run slower than float32 FMAs (a 2026 Xeon VM without AMX: one AVX-512 bfloat16 dot
// product every two cycles, half the float32 rate), where oneDNN still picks its bf16 kernels.

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "memopt/backend/cpu/dnnl/conv2d_shape.hpp"
#include "memopt/backend/cpu/dnnl/detail/conv2d_layouts.hpp"
#include "memopt/backend/cpu/dnnl/detail/conv2d_passes.hpp"
#include "memopt/backend/cpu/dnnl/detail/data_type.hpp"
#include "memopt/backend/cpu/dnnl/detail/staging.hpp"
#include "memopt/backend/cpu/dnnl/threads.hpp"

namespace memopt::cpu_backend::onednn {

/// What `arithmetic_probe` measured on one thread: one training step's three passes of the
/// reference convolution (16 rows of 13x13x32 -> 64, 3x3, the MNIST convnet's second), best
/// of 3, in oneDNN's 16-bit kernels and in float32 on widened copies (conversions included).
struct ArithmeticProbe {
  bool native = false;        ///< oneDNN has 16-bit convolutions on this CPU
  double sixteen_bit_ms = 0;  ///< 0 without them
  double float32_ms = 0;
  /// The 16-bit kernels are kept unless they take over 1.25x the float32 path's time: a
  /// margin wide enough that the machine's noise does not flip the choice from run to run
  /// (bfloat16 took about 0.5x the float32 time on a Xeon with AMX, 1.9x on one without).
  bool sixteen_bit_pays() const { return native && sixteen_bit_ms <= 1.25 * float32_ms; }
};

namespace detail {

[[gnu::cold]] inline ArithmeticProbe measure_arithmetic(const Element& element) {
  // One core's arithmetic, the CPU's property: a team's timings on a shared machine are
  // noisier, and a bf16/f32 ratio of 1.66 on one thread measured 1.2-1.5 on two.
  const OneThreadScope alone;
  const Conv2dShape s{.batch = 16,
                      .height = 13,
                      .width = 13,
                      .in_channels = 32,
                      .filters = 64,
                      .kernel_h = 3,
                      .kernel_w = 3,
                      .relu = true};
  const Conv2dPasses native(s, with_rows_and_layouts({.arithmetic = Arithmetic::element}, s),
                            element);
  const Conv2dPasses widened(s, with_rows_and_layouts({.arithmetic = Arithmetic::float32}, s),
                             element);
  ArithmeticProbe probe;
  probe.native = native.native();

  // Small nonzero values (timings do not depend on them, but subnormals or zeros could).
  const auto filled = [&](std::size_t n) {
    const std::vector<float> values(n, 0.01f);
    std::vector<std::byte> bytes(n * element.bytes);
    element.narrow(values.data(), bytes.data(), n);
    return bytes;
  };
  const std::vector<std::byte> x = filled(s.input_elements()), w = filled(s.kernel_elements()),
                               dz = filled(s.output_elements());
  std::vector<std::byte> y(s.output_elements() * element.bytes), dx(x.size());
  std::vector<float> b(64, 0.01f), dw(s.kernel_elements()), db(64);
  const std::size_t scratch_bytes =
      std::max(native.scratchpad_bytes(), widened.scratchpad_bytes()) + kScratchAlign;
  const auto scratch = std::make_unique<std::byte[]>(scratch_bytes);
  void* pad = scratch.get() +
              (kScratchAlign - reinterpret_cast<std::uintptr_t>(scratch.get()) % kScratchAlign) %
                  kScratchAlign;

  const auto best_ms = [&](const Conv2dPasses& p) {
    double best = std::numeric_limits<double>::infinity();
    for (int round = 0; round < 4; ++round) {  // the first warms the caches and the kernels
      const auto t0 = std::chrono::steady_clock::now();
      p.forward(x.data(), w.data(), b.data(), y.data(), pad);
      p.backward_data(dz.data(), w.data(), dx.data(), pad);
      p.backward_weights(x.data(), dz.data(), dw.data(), db.data(), pad);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (round > 0) best = std::min(best, ms);
    }
    return best;
  };
  if (probe.native) probe.sixteen_bit_ms = best_ms(native);
  probe.float32_ms = best_ms(widened);
  return probe;
}

}  // namespace detail

/// The probe for 16-bit `T`, measured on its first use in the process (a few milliseconds).
///
/// ```cpp
/// const auto& p = mo::cpu_backend::onednn::arithmetic_probe<mo::bfloat16>();
/// std::printf("bf16 convolutions: %s\n", p.sixteen_bit_pays() ? "native" : "in float32");
/// ```
template <detail::DnnlElement T>
requires(!std::same_as<T, float>) const ArithmeticProbe& arithmetic_probe() {
  static const ArithmeticProbe probe = detail::measure_arithmetic(detail::element_of<T>);
  return probe;
}

}  // namespace memopt::cpu_backend::onednn
