// expect: Model::compile: the loss must satisfy mo::Loss
// A type with no value_and_grad is not a loss. The twin (without MEMOPT_FAILTEST) passes a
// real one.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
struct NotALoss {
  static constexpr std::string_view name = "not_a_loss";
};
#else
using NotALoss = memopt::SparseCategoricalCrossentropy;
#endif

void f() {
  using Net = memopt::Sequential<memopt::Dense<8, memopt::ReLU>, memopt::Dense<3, memopt::Softmax>>;
  memopt::Model<Net, memopt::Input<4>> model;
  model.compile(memopt::Adam{}, NotALoss{});
}
