// expect: BinaryCrossentropy after Softmax: end the model with
// Softmax makes the outputs compete; BinaryCrossentropy wants each output on its own. The twin
// (without MEMOPT_FAILTEST) ends in a Sigmoid and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
using Last = memopt::Softmax;
#else
using Last = memopt::Sigmoid;
#endif

void f() {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, Last>>;
  memopt::Model<Net, memopt::Input<4>> model;
  model.compile(memopt::Adam{}, memopt::BinaryCrossentropy{});
}
