#pragma once
// HostBuffer: one aligned host allocation, owned. The CPU backend's arena and parameter store.

#include <cstddef>
#include <cstring>
#include <new>

#include "memopt/plan/buffer.hpp"

namespace memopt::cpu_backend {

/// `bytes` of host memory aligned to the arena alignment, zero-filled, freed on destruction.
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ == 0) return;
    data_ = static_cast<std::byte*>(
        ::operator new (plan::align_up(bytes_), std::align_val_t{plan::arena_alignment}));
    std::memset(data_, 0, bytes_);
  }
  HostBuffer(HostBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = o.data_;
      bytes_ = o.bytes_;
      o.data_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { release(); }

  std::byte* data() const { return data_; }
  std::size_t size() const { return bytes_; }

  template <class T>
  T* as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(data_ + byte_offset);
  }

 private:
  void release() {
    if (data_) ::operator delete (data_, std::align_val_t{plan::arena_alignment});
    data_ = nullptr;
  }
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace memopt::cpu_backend
