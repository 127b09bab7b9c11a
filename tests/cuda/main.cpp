// The doctest runner for tests/cuda. Without a usable GPU (no device, no driver, a driver
// too old for this toolkit: every error status counts) it prints "[skipped: no GPU ...]"
// and succeeds; CTest reports such a run as skipped.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdio>

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status != cudaSuccess || devices == 0) {
    std::printf("[skipped: no GPU (cudaGetDeviceCount: %s, %d devices)]\n",
                status == cudaSuccess ? "cudaSuccess" : cudaGetErrorName(status), devices);
    return 0;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
