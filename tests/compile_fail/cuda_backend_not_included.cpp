// expect: For mo::cuda, include <memopt/backend/cuda.hpp>, compile the file with nvcc
// The README's snippet with mo::cuda in a plain .cpp file: the CUDA executor is not there.
#include <memopt/memopt.hpp>

void f() {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>, memopt::float32, memopt::cuda> model{42};
  (void)model;
}
