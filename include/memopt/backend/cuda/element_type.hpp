#pragma once
// The cudaDataType_t of each element type memopt stores.

#include <type_traits>

#include <library_types.h>

#include "memopt/core/dtype.hpp"
#include "memopt/core/type_list.hpp"

namespace memopt::cuda_backend {

/// cuBLASLt's name for `T`.
///
/// ```cpp
/// static_assert(mo::cuda_backend::data_type<mo::half>() == CUDA_R_16F);
/// ```
template <class T>
constexpr cudaDataType_t data_type() {
  if constexpr (std::is_same_v<T, float>)
    return CUDA_R_32F;
  else if constexpr (std::is_same_v<T, half>)
    return CUDA_R_16F;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return CUDA_R_16BF;
  else
    static_assert(memopt::detail::dependent_false<T>, "data_type: float, half or bfloat16");
}

}  // namespace memopt::cuda_backend
