#pragma once
// Loads and stores of memopt's element types in device code, through the hardware's own
// conversions (the storage types' portable bit arithmetic is for the host).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "memopt/core/dtype.hpp"

namespace memopt::cuda_backend::kernels {

/// `v` as float.
template <class T>
__device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else if constexpr (std::is_same_v<T, half>)
    return __half2float(__ushort_as_half(v.bits));
  else
    return __bfloat162float(__ushort_as_bfloat16(v.bits));
}

/// `f` rounded to nearest even in `T`.
template <class T>
__device__ __forceinline__ T from_float(float f) {
  if constexpr (std::is_same_v<T, float>)
    return f;
  else if constexpr (std::is_same_v<T, half>)
    return half::from_bits(__half_as_ushort(__float2half_rn(f)));
  else
    return bfloat16::from_bits(__bfloat16_as_ushort(__float2bfloat16_rn(f)));
}

}  // namespace memopt::cuda_backend::kernels
