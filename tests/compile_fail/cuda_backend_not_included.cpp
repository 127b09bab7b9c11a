// expect: For mo::cuda, include <memopt/backend/cuda.hpp>, compile the file with nvcc
// The README's snippet with mo::cuda in a plain .cpp file: the CUDA executor is not there.
// The twin (without MEMOPT_FAILTEST) asks for mo::cpu and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Backend = memopt::cuda;
#else
using Backend = memopt::cpu;
#endif

void f() {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>, memopt::float32, Backend> model{42};
  (void)model;
}
