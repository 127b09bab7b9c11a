#pragma once
// Running a oneDNN primitive over the caller's raw pointers, with no allocation on memopt's
// side: memory objects are made once (without data) and pointed at the caller's buffers
// just before each execution; the argument list lives on the stack.

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>

#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cpu_backend::onednn::detail {

/// A memory object over `md` whose data pointer is set at each execution.
inline ::dnnl::memory placeholder(const ::dnnl::memory::desc& md) {
  return ::dnnl::memory(md, Context::get().engine, DNNL_MEMORY_NONE);
}

/// The scratchpad memory of `pd`, or an empty memory when it needs none.
inline ::dnnl::memory scratch_memory(const ::dnnl::primitive_desc_base& pd) {
  const ::dnnl::memory::desc md = pd.scratchpad_desc();
  return md.get_size() > 0 ? placeholder(md) : ::dnnl::memory();
}

/// `&m`, or null for an empty memory (an argument the primitive does not take).
inline const ::dnnl::memory* maybe(const ::dnnl::memory& m) {
  return m ? &m : nullptr;
}

/// One argument of an execution: the oneDNN argument kind, its memory object, the data.
struct Binding {
  int arg;
  const ::dnnl::memory* memory;
  const void* data;
};

inline constexpr std::size_t kMaxBindings = 12;

/// Points each memory at its data and executes `p` on the shared stream.
inline void execute(const ::dnnl::primitive& p, std::initializer_list<Binding> bindings) {
  std::array<::dnnl_exec_arg_t, kMaxBindings> args{};
  int n = 0;
  for (const Binding& b : bindings) {
    if (b.memory == nullptr || b.data == nullptr) continue;  // an argument this op lacks
    if (n == static_cast<int>(kMaxBindings))
      throw error("oneDNN: more arguments than kMaxBindings");
    // oneDNN takes a non-const handle even for inputs; it does not write through them.
    b.memory->set_data_handle(const_cast<void*>(b.data));
    args[static_cast<std::size_t>(n++)] = ::dnnl_exec_arg_t{b.arg, b.memory->get()};
  }
  Context& ctx = Context::get();
  const ::dnnl_status_t status =
      ::dnnl_primitive_execute(p.get(), ctx.stream.get(), n, args.data());
  if (status != ::dnnl_success)
    throw error("oneDNN: executing a primitive failed with status " +
                std::to_string(static_cast<int>(status)) + ", expected dnnl_success");
  ctx.stream.wait();
}

/// Rethrows a oneDNN error raised while creating `what` as memopt::error.
[[noreturn]] inline void rethrow(const char* what, const ::dnnl::error& e) {
  throw error(std::string(what) + ": oneDNN could not create the primitive (" + e.what() +
              "); expected a shape and data type this oneDNN supports on this CPU");
}

}  // namespace memopt::cpu_backend::onednn::detail
