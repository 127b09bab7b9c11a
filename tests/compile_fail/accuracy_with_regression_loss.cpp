// expect: accuracy means nothing for a regression loss
// Keras would count exact equality of floats; memopt refuses and names the metric to use. The
// twin (without MEMOPT_FAILTEST) compiles the model with no metric.
#include <memopt/memopt.hpp>

void f() {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<1>>;
  memopt::Model<Net, memopt::Input<4>> model;
#ifdef MEMOPT_FAILTEST
  model.compile(memopt::Adam{}, memopt::MeanSquaredError{}, memopt::metrics::Accuracy{});
#else
  model.compile(memopt::Adam{}, memopt::MeanSquaredError{});
#endif
}
