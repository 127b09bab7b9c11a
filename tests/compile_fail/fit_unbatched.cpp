// expect: Model::fit: the training data must be batched: add `\| mo::data::batch\(N\)`
// fit(train) on a dataset of single samples (issue 13, item 6). The twin (without
// MEMOPT_FAILTEST) batches it and must compile.
#include <memopt/memopt.hpp>

void f(const memopt::data::Dataset& train) {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>> model{42};
  model.compile(memopt::Adam{}, memopt::SparseCategoricalCrossentropy{});
#ifdef MEMOPT_FAILTEST
  model.fit(train);
#else
  model.fit(train | memopt::data::batch(32));
#endif
}
