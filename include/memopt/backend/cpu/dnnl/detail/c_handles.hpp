#pragma once
// oneDNN through its C API: the process's engine and stream, owning handles, status checks.
//
// nvcc 13 cannot parse oneDNN's C++ header (backend/cpu.hpp says how), and CUDA translation
// units use the CPU backend's Dense kernel as their reference, so what Dense needs is written
// against <oneapi/dnnl/dnnl.h>. Context (the C++ API) wraps the same engine and stream.

#include <oneapi/dnnl/dnnl.h>

#include <memory>
#include <string>

#include "memopt/backend/cpu/dnnl/threads.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cpu_backend::onednn::detail {

/// Throws memopt::error naming `what` unless `status` is dnnl_success.
inline void check(dnnl_status_t status, const char* what) {
  if (status != dnnl_success)
    throw error(std::string("oneDNN: ") + what + " failed with status " +
                std::to_string(static_cast<int>(status)) + ", expected dnnl_success");
}

/// An owned oneDNN C handle, destroyed by `Destroy`.
template <class Handle, dnnl_status_t (*Destroy)(Handle)>
struct DestroyWith {
  void operator()(Handle h) const { Destroy(h); }
};
using OwnedPrimitive =
    std::unique_ptr<dnnl_primitive, DestroyWith<dnnl_primitive_t, dnnl_primitive_destroy>>;
using OwnedPrimitiveDesc =
    std::unique_ptr<dnnl_primitive_desc,
                    DestroyWith<dnnl_primitive_desc_t, dnnl_primitive_desc_destroy>>;
using OwnedAttr = std::unique_ptr<dnnl_primitive_attr,
                                  DestroyWith<dnnl_primitive_attr_t, dnnl_primitive_attr_destroy>>;
using OwnedMemory = std::unique_ptr<dnnl_memory, DestroyWith<dnnl_memory_t, dnnl_memory_destroy>>;

/// The CPU engine and its stream, made on first use and kept for the process. oneDNN's CPU
/// streams run synchronously on the calling thread (with oneDNN's OpenMP team), so one
/// stream serves every operation.
struct EngineStream {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;

  static const EngineStream& get() {
    ensure_default_threads();  // before any kernel is created on this thread
    static const EngineStream es = make();
    return es;
  }

 private:
  static EngineStream make() {
    EngineStream es;
    check(::dnnl_engine_create(&es.engine, dnnl_cpu, 0), "creating the CPU engine");
    check(::dnnl_stream_create(&es.stream, es.engine, dnnl_stream_default_flags),
          "creating the CPU stream");
    return es;
  }
};

}  // namespace memopt::cpu_backend::onednn::detail
