// expect: Dropout: the rate must be in .0, 1.: it is the fraction of values dropped
// A rate of 1 drops every value (and scales the rest by 1 / 0). The twin (without
// MEMOPT_FAILTEST) drops half and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#include <ratio>

#ifdef MEMOPT_FAILTEST
using Rate = std::ratio<1, 1>;
#else
using Rate = std::ratio<1, 2>;
#endif

using Net = memopt::Sequential<memopt::Dense<16, memopt::ReLU>, memopt::Dropout<Rate>,
                               memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<8>, memopt::float32> spec;
