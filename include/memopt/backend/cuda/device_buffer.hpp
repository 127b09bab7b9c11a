#pragma once
// DeviceBuffer: one owned cudaMalloc allocation.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include <cuda_runtime_api.h>

#include "memopt/backend/cuda/status.hpp"
#include "memopt/core/error.hpp"

namespace memopt::cuda_backend {

/// Bytes of device memory free and in total, as cudaMemGetInfo reports them.
struct DeviceMemory {
  std::size_t free = 0;
  std::size_t total = 0;
};

/// The device's free and total memory now.
///
/// ```cpp
/// auto [free, total] = mo::cuda_backend::device_memory();
/// ```
inline DeviceMemory device_memory() {
  DeviceMemory m;
  check(cudaMemGetInfo(&m.free, &m.total), "cudaMemGetInfo", "device_memory");
  return m;
}

/// The message of an allocation that does not fit: what it was for, the bytes it needs and
/// the bytes free.
inline std::string out_of_device_memory(std::string_view what, std::size_t bytes,
                                        const DeviceMemory& m) {
  return std::string(what) + ": needs " + std::to_string(bytes) +
         " bytes of device memory, found " + std::to_string(m.free) + " bytes free (of " +
         std::to_string(m.total) + "); use a smaller batch or model";
}

/// Raises `memopt::error` (as a failed DeviceBuffer would) when `bytes` exceed the device's
/// free memory plus `releasable`, the bytes the caller frees before allocating. A check
/// before the work that precedes the allocation; the allocation itself may still fail.
///
/// ```cpp
/// mo::cuda_backend::require_free_memory(plan.arena_bytes, arena.size(), "training arena");
/// ```
inline void require_free_memory(std::size_t bytes, std::size_t releasable, std::string_view what) {
  const DeviceMemory m = device_memory();
  if (bytes > m.free + releasable) throw error(out_of_device_memory(what, bytes, m));
}

/// `bytes` of device memory (256-byte aligned, as cudaMalloc guarantees), freed with its
/// owner. An allocation that does not fit raises `memopt::error` saying what it was for, how
/// many bytes it needed and how many were free.
///
/// ```cpp
/// mo::cuda_backend::DeviceBuffer arena(1 << 20, "training arena");
/// float* p = arena.as<float>();
/// ```
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(std::size_t bytes, std::string_view what) : bytes_(bytes) {
    if (bytes_ == 0) return;
    const cudaError_t status = cudaMalloc(&data_, bytes_);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      const DeviceMemory m = device_memory();
      data_ = nullptr;
      throw error(out_of_device_memory(what, bytes_, m));
    }
    check(status, "cudaMalloc", what);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { release(); }

  std::byte* data() const { return static_cast<std::byte*>(data_); }
  std::size_t size() const { return bytes_; }

  template <class U>
  U* as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<U*>(data() + byte_offset);
  }

 private:
  void release() noexcept {
    if (data_) (void)cudaFree(data_);
    data_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// `bytes` of page-locked host memory. The device reads it directly (it is mapped into the
/// device's address space under unified addressing), which is how a training step takes its
/// batch without a separate copy.
///
/// ```cpp
/// mo::cuda_backend::PinnedBuffer staging(4096, "input staging");
/// std::memcpy(staging.as<float>(), x, 4096);
/// ```
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(std::size_t bytes, std::string_view what) : bytes_(bytes) {
    if (bytes_ == 0) return;
    check(cudaHostAlloc(&data_, bytes_, cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc", what);
    // Under unified addressing this is data_ itself; asking keeps the code honest elsewhere.
    check(cudaHostGetDevicePointer(&device_, data_, 0), "cudaHostGetDevicePointer", what);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)),
        device_(std::exchange(o.device_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      device_ = std::exchange(o.device_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { release(); }

  std::byte* data() const { return static_cast<std::byte*>(data_); }
  std::size_t size() const { return bytes_; }

  template <class U>
  U* as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<U*>(data() + byte_offset);
  }
  /// The address kernels use for the same bytes.
  template <class U>
  U* device_as(std::size_t byte_offset = 0) const {
    return reinterpret_cast<U*>(static_cast<std::byte*>(device_) + byte_offset);
  }

 private:
  void release() noexcept {
    if (data_) (void)cudaFreeHost(data_);
    data_ = nullptr;
    device_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  void* device_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace memopt::cuda_backend
