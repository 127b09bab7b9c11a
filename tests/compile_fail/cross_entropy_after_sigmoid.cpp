// expect: Model::compile: SparseCategoricalCrossentropy needs the last layer to be
// A Sigmoid output is neither probabilities over classes nor logits. The twin (without
// MEMOPT_FAILTEST) ends in a linear layer and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Last = memopt::Sigmoid;
#else
using Last = memopt::Linear;
#endif

void f() {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, Last>>;
  memopt::Model<Net, memopt::Input<4>> model;
  model.compile(memopt::Adam{}, memopt::SparseCategoricalCrossentropy{{.from_logits = true}});
}
