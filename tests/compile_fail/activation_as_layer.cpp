// expect: is not a layer; give it to the layer before it .* or wrap it in the layer Activation
// Keras's `Dense(16), Activation("relu")` written as two elements, the second a bare ReLU. The
// diagnostic's first line names both fixes; the twin (without MEMOPT_FAILTEST) gives ReLU to the
// Dense and must compile.
#include <memopt/memopt.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Net = mo::Sequential<mo::Dense<16>, mo::ReLU, mo::Dense<10, mo::Softmax>>;
#else
using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
#endif

void f() {
  mo::Model<Net, mo::Input<4>> model;
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
}
