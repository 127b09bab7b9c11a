// expect: Model::compile: the optimizer must satisfy mo::Optimizer
// The twin (without MEMOPT_FAILTEST) compiles with mo::SGD and must compile.
#include <memopt/memopt.hpp>

struct Lion {
  std::size_t slots() const { return 1; }
};

#ifdef MEMOPT_FAILTEST
using Optimizer = Lion;
#else
using Optimizer = memopt::SGD;
#endif

void f() {
  using Net = memopt::Sequential<memopt::Dense<10, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>> model;
  model.compile(Optimizer{}, memopt::SparseCategoricalCrossentropy{});
}
