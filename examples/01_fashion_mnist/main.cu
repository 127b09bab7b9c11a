// fashion_mnist_cuda: the example built by nvcc, so that `--backend cuda` runs memopt's CUDA
// backend: the same program as main.cpp (fashion_mnist, host-only), which includes
// <memopt/backend/cuda.hpp> when compiled as CUDA.
#include "main.cpp"
