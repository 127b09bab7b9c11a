// expect: Model::predict: expected rows of floats \(a span\), one data::Sample, one image .*a range
// predict(test) on a dataset of single samples (issue 13, item 8). The twin (without
// MEMOPT_FAILTEST) batches it and must compile.
#include <vector>

#include <memopt/memopt.hpp>

std::vector<float> f(const memopt::data::Dataset& test) {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>> model{42};
#ifdef MEMOPT_FAILTEST
  return model.predict(test);
#else
  return model.predict(test | memopt::data::batch(256));
#endif
}
