// expect: validation_data / evaluate: the data must be batched: add `\| mo::data::batch\(N\)`
// `.validation_data = test` with a dataset of single samples (issue 13, item 6). The twin
// (without MEMOPT_FAILTEST) batches it and must compile.
#include <memopt/memopt.hpp>

void f(const memopt::data::Dataset& train, const memopt::data::Dataset& test) {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>> model{42};
  model.compile(memopt::Adam{}, memopt::SparseCategoricalCrossentropy{});
#ifdef MEMOPT_FAILTEST
  model.fit(train | memopt::data::batch(32), {.epochs = 1, .validation_data = test});
#else
  model.fit(train | memopt::data::batch(32),
            {.epochs = 1, .validation_data = test | memopt::data::batch(256)});
#endif
}
