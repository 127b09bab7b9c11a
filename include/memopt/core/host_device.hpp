#pragma once
// One place for host/device qualifiers, so headers compile under g++ and nvcc alike.

#if defined(__CUDACC__)
#define MEMOPT_HD __host__ __device__
#define MEMOPT_DEVICE __device__
#else
#define MEMOPT_HD
#define MEMOPT_DEVICE
#endif

#define MEMOPT_HD_INLINE MEMOPT_HD inline
