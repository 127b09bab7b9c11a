#pragma once
// Matmul: one float32 matrix product of fixed sizes through oneDNN's matmul primitive, the
// CPU backend's Dense layer. Written against oneDNN's C API, which nvcc can compile
// (detail/c_handles.hpp says why that matters).

#include <oneapi/dnnl/dnnl.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "memopt/backend/cpu/dnnl/detail/c_handles.hpp"
#include "memopt/backend/cpu/dnnl/threads.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cpu_backend::onednn {

/// c (m x n) = op(a) (m x k) * op(b) (k x n), every operand row-major and dense as stored: a is
/// stored k x m when `transpose_a`, b is stored n x k when `transpose_b`.
struct MatmulShape {
  std::int64_t m = 1;
  std::int64_t k = 1;
  std::int64_t n = 1;
  bool transpose_a = false;
  bool transpose_b = false;
};

/// One product of MatmulShape's sizes, created once and run on any buffers of those sizes.
/// Its packing buffers come from the caller's scratchpad (`scratchpad_bytes()`, 64-byte
/// aligned), so a run allocates nothing, unlike oneDNN's `dnnl_sgemm`, which takes a buffer
/// from malloc on every call (1 posix_memalign a call, counted in a scratch program). On
/// AVX-512 oneDNN runs it with its brgemm kernels ("brg:avx512_core"), as fast as its sgemm
/// and faster than Eigen's products (`bench_cpu_steps`, RESULTS.md). Not safe to call from
/// two threads at once.
///
/// ```cpp
/// mo::cpu_backend::onednn::Matmul forward({.m = 32, .k = 784, .n = 128});
/// std::vector<float> x(32 * 784), w(784 * 128), z(32 * 128);
/// std::vector<std::byte> scratch(forward.scratchpad_bytes());  // 64-byte aligned in practice
/// forward.run(x.data(), w.data(), z.data(), scratch.data());  // z = x w
/// ```
class Matmul {
 public:
  explicit Matmul(const MatmulShape& s) {
    if (s.m <= 0 || s.k <= 0 || s.n <= 0) throw error("Matmul: expected positive sizes");
    const dnnl_memory_desc_t a = matrix(s.m, s.k, s.transpose_a);
    const dnnl_memory_desc_t b = matrix(s.k, s.n, s.transpose_b);
    const dnnl_memory_desc_t c = matrix(s.m, s.n, false);
    dnnl_matmul_desc_t desc;
    detail::check(::dnnl_matmul_desc_init(&desc, &a, &b, nullptr, &c), "Matmul: describing");
    dnnl_primitive_attr_t raw_attr = nullptr;
    detail::check(::dnnl_primitive_attr_create(&raw_attr), "Matmul: creating attributes");
    const detail::OwnedAttr attr(raw_attr);
    detail::check(::dnnl_primitive_attr_set_scratchpad_mode(raw_attr, dnnl_scratchpad_mode_user),
                  "Matmul: asking for a user scratchpad");
    const dnnl_engine_t engine = detail::EngineStream::get().engine;
    const OneThreadScope team(s.m * s.k * s.n < kSmall);
    dnnl_primitive_desc_t raw_pd = nullptr;
    detail::check(::dnnl_primitive_desc_create(&raw_pd, &desc, raw_attr, engine, nullptr),
                  "Matmul: creating the primitive descriptor (no implementation for these "
                  "sizes on this CPU?)");
    const detail::OwnedPrimitiveDesc pd(raw_pd);
    const dnnl_memory_desc_t* scratch =
        ::dnnl_primitive_desc_query_md(raw_pd, dnnl_query_scratchpad_md, 0);
    scratchpad_bytes_ = scratch ? ::dnnl_memory_desc_get_size(scratch) : 0;
    dnnl_primitive_t raw_primitive = nullptr;
    detail::check(::dnnl_primitive_create(&raw_primitive, raw_pd), "Matmul: creating");
    primitive_.reset(raw_primitive);
    // Memory objects without data: each run points them at the caller's buffers.
    a_ = placeholder(a, engine);
    b_ = placeholder(b, engine);
    c_ = placeholder(c, engine);
    if (scratchpad_bytes_ > 0) scratch_ = placeholder(*scratch, engine);
  }

  /// Bytes of caller-owned scratch that `run` needs (0: none, and it may be null).
  std::size_t scratchpad_bytes() const { return scratchpad_bytes_; }

  /// c = op(a) op(b), overwritten.
  void run(const float* a, const float* b, float* c, void* scratchpad) const {
    // oneDNN takes a non-const handle even for inputs; it does not write through them.
    bind(a_, a);
    bind(b_, b);
    bind(c_, c);
    std::array<dnnl_exec_arg_t, 4> args{{{DNNL_ARG_SRC, a_.get()},
                                         {DNNL_ARG_WEIGHTS, b_.get()},
                                         {DNNL_ARG_DST, c_.get()},
                                         {DNNL_ARG_SCRATCHPAD, scratch_.get()}}};
    int n = 3;
    if (scratch_) {
      bind(scratch_, scratchpad);
      n = 4;
    }
    const dnnl_stream_t stream = detail::EngineStream::get().stream;
    detail::check(::dnnl_primitive_execute(primitive_.get(), stream, n, args.data()),
                  "Matmul: executing");
    detail::check(::dnnl_stream_wait(stream), "Matmul: waiting for the stream");
  }

 private:
  // Up to 2^21 multiply-adds, OpenMP's fork and join inside a training step cost more than a
  // second core saves. Alone, two threads win from about 2^19 (a 32 x 64 x 64 product: 2.5 us
  // on one thread, 4.4 us on two); between a step's serial passes (bias, activation, 16-bit
  // copies) they lose longer: bench_cpu_steps's 64x8 model at 256 rows (256 x 64 x 64, 2^20)
  // trains 15% slower than Eigen did under 16-bit policies with the cut at 2^18, 17% faster
  // with it at 2^21, on the 2-core Sapphire Rapids VM. oneDNN's brgemm matmul fixes its
  // thread count when it is created, so a small product is created on a team of one and the
  // caller's team is set back; without a known OpenMP runtime this does nothing.
  static constexpr std::int64_t kSmall = std::int64_t{1} << 21;

  // A dense row-major rows x cols matrix of floats, or its transpose as stored (cols x rows).
  static dnnl_memory_desc_t matrix(std::int64_t rows, std::int64_t cols, bool transposed) {
    dnnl_memory_desc_t md;
    const dnnl_dims_t dims = {rows, cols};
    detail::check(
        ::dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, transposed ? dnnl_ba : dnnl_ab),
        "Matmul: describing a matrix");
    return md;
  }
  static detail::OwnedMemory placeholder(const dnnl_memory_desc_t& md, dnnl_engine_t engine) {
    dnnl_memory_t m = nullptr;
    detail::check(::dnnl_memory_create(&m, &md, engine, DNNL_MEMORY_NONE),
                  "Matmul: creating a memory object");
    return detail::OwnedMemory(m);
  }
  static void bind(const detail::OwnedMemory& m, const void* data) {
    detail::check(::dnnl_memory_set_data_handle(m.get(), const_cast<void*>(data)),
                  "Matmul: pointing a memory object at its buffer");
  }

  detail::OwnedPrimitive primitive_;
  detail::OwnedMemory a_, b_, c_, scratch_;
  std::size_t scratchpad_bytes_ = 0;
};

}  // namespace memopt::cpu_backend::onednn
