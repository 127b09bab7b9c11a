#pragma once
// Relayout: one argument of a primitive that computes in oneDNN's preferred (blocked) layout
// while the caller's buffer is plain NHWC/HWIO. A reorder moves the data between the caller's
// buffer and a staging area inside the caller's scratchpad; when the two layouts agree it
// does nothing and the primitive uses the caller's buffer directly.

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>

#include "memopt/backend/cpu/dnnl/context.hpp"
#include "memopt/backend/cpu/dnnl/detail/execute.hpp"

namespace memopt::cpu_backend::onednn::detail {

class Relayout {
 public:
  Relayout() = default;

  /// `user` is the caller's layout, `inner` the primitive's; `input`: data flows user -> inner.
  Relayout(const ::dnnl::memory::desc& user, const ::dnnl::memory::desc& inner, bool input)
      : input_(input) {
    inner_ = placeholder(inner);
    if (user == inner) return;
    needed_ = true;
    user_ = placeholder(user);
    ::dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(::dnnl::scratchpad_mode::user);
    const ::dnnl::engine& eng = Context::get().engine;
    const ::dnnl::reorder::primitive_desc pd =
        input ? ::dnnl::reorder::primitive_desc(eng, user, eng, inner, attr)
              : ::dnnl::reorder::primitive_desc(eng, inner, eng, user, attr);
    reorder_ = ::dnnl::reorder(pd);
    scratch_bytes_ = pd.scratchpad_desc().get_size();
    scratch_ = scratch_memory(pd);
    staging_bytes_ = inner.get_size();
  }

  bool needed() const { return needed_; }
  /// The memory object the primitive binds for this argument.
  const ::dnnl::memory& inner() const { return inner_; }
  /// Bytes of the staging area (0 when no reorder is needed).
  std::size_t staging_bytes() const { return staging_bytes_; }
  /// Bytes of the reorder's own scratchpad, used only while it runs.
  std::size_t scratch_bytes() const { return scratch_bytes_; }
  /// Places the staging area at `offset` bytes into the scratchpad.
  void place(std::size_t offset) { offset_ = offset; }

  /// Where the primitive reads or writes: the staging area, or `data` itself.
  const void* target(const void* data, void* scratchpad) const {
    return needed_ ? static_cast<const void*>(static_cast<std::byte*>(scratchpad) + offset_) : data;
  }
  void* target(void* data, void* scratchpad) const {
    return needed_ ? static_cast<void*>(static_cast<std::byte*>(scratchpad) + offset_) : data;
  }

  /// Input: copies the caller's `data` into the staging area (before the primitive).
  void load(const void* data, void* scratchpad) const {
    if (!needed_ || !input_) return;
    run(data, scratchpad);
  }
  /// Output: copies the staging area into the caller's `data` (after the primitive).
  void store(void* data, void* scratchpad) const {
    if (!needed_ || input_) return;
    run(data, scratchpad);
  }

 private:
  void run(const void* user_data, void* scratchpad) const {
    const void* staging = static_cast<std::byte*>(scratchpad) + offset_;
    // The reorder's scratchpad shares the start of the caller's scratchpad with the
    // primitive's: they never run at the same time, and the staging areas lie beyond both.
    execute(reorder_, {{DNNL_ARG_FROM, input_ ? &user_ : &inner_, input_ ? user_data : staging},
                       {DNNL_ARG_TO, input_ ? &inner_ : &user_, input_ ? staging : user_data},
                       {DNNL_ARG_SCRATCHPAD, maybe(scratch_), scratchpad}});
  }

  bool input_ = true;
  bool needed_ = false;
  std::size_t staging_bytes_ = 0, scratch_bytes_ = 0, offset_ = 0;
  ::dnnl::memory user_, inner_, scratch_;
  ::dnnl::reorder reorder_;
};

}  // namespace memopt::cpu_backend::onednn::detail
