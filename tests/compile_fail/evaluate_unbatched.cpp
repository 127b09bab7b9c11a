// expect: Model::evaluate: the data must be batched: add `\| mo::data::batch\(N\)`
// evaluate(test) on a dataset of single samples. The twin (without MEMOPT_FAILTEST) batches
// it and must compile.
#include <memopt/memopt.hpp>

void f(const memopt::data::Dataset& test) {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>> model{42};
#ifdef MEMOPT_FAILTEST
  (void)model.evaluate(test);
#else
  (void)model.evaluate(test | memopt::data::batch(256));
#endif
}
