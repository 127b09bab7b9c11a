// expect: Model::compile: the optimizer must satisfy mo::Optimizer
#include <memopt/memopt.hpp>

struct Lion {
  std::size_t slots() const { return 1; }
};

void f() {
  using Net = memopt::Sequential<memopt::Dense<10, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>> model;
  model.compile(Lion{}, memopt::SparseCategoricalCrossentropy{});
}
