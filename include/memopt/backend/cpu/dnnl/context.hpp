#pragma once
// The oneDNN CPU engine and stream that every memopt oneDNN operation runs on.

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

#include "memopt/backend/cpu/dnnl/detail/c_handles.hpp"
#include "memopt/backend/cpu/dnnl/threads.hpp"

namespace memopt::cpu_backend::onednn {

/// The process-wide oneDNN CPU engine and its stream. oneDNN's CPU streams execute
/// synchronously on the calling thread (with oneDNN's OpenMP team), so one stream serves
/// every operation; creating them is not free, so they are made once, on first use, and kept
/// for the process.
///
/// ```cpp
/// auto& ctx = mo::cpu_backend::onednn::Context::get();
/// dnnl::memory m({{4}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::x}, ctx.engine);
/// ```
struct Context {
  ::dnnl::engine engine;
  ::dnnl::stream stream;

  static Context& get() {
    ensure_default_threads();  // before any kernel is created on this thread
    static Context ctx = make();
    return ctx;
  }

 private:
  // Weak references to the C API's engine and stream (detail::EngineStream), which the
  // Dense kernel uses directly: one engine and one stream in the process.
  static Context make() {
    const detail::EngineStream& es = detail::EngineStream::get();
    return Context{::dnnl::engine(es.engine, /*weak=*/true),
                   ::dnnl::stream(es.stream, /*weak=*/true)};
  }
};

/// True when oneDNN dispatches AVX-512 kernels here (Skylake-SP and later; not where
/// `ONEDNN_MAX_CPU_ISA` caps it lower), whose blocked convolutions beat its GEMM-based ones.
inline bool has_avx512_core() {
  const auto isa = static_cast<unsigned>(::dnnl::get_effective_cpu_isa());
  constexpr auto avx512_core = static_cast<unsigned>(::dnnl::cpu_isa::avx512_core);
  return (isa & avx512_core) == avx512_core;  // each ISA's bits include those it extends
}

/// oneDNN's version as "major.minor.patch", from the library actually loaded.
///
/// ```cpp
/// std::puts(mo::cpu_backend::onednn::version_string().c_str());  // "2.6.3"
/// ```
inline std::string version_string() {
  const ::dnnl_version_t* v = ::dnnl::version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace memopt::cpu_backend::onednn
