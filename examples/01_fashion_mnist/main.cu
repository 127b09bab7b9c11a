// The example built by nvcc, so that `--backend cuda` runs memopt's CUDA backend: the same
// program as main.cpp, which includes <memopt/backend/cuda.hpp> when compiled as CUDA.
#include "main.cpp"
