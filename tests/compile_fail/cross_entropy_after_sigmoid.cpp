// expect: Model::compile: SparseCategoricalCrossentropy needs the last layer to be
// A Sigmoid output is neither probabilities over classes nor logits.
#include <memopt/memopt.hpp>

void f() {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Sigmoid>>;
  memopt::Model<Net, memopt::Input<4>> model;
  model.compile(memopt::Adam{}, memopt::SparseCategoricalCrossentropy{{.from_logits = true}});
}
