// expect: RandomRotation: the factor is a fraction of a full turn and must lie in .-1, 1.
// Keras refuses a factor beyond a full turn either way. The twin (without MEMOPT_FAILTEST)
// turns by up to half a turn and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#include <ratio>

#ifdef MEMOPT_FAILTEST
using Factor = memopt::Range<std::ratio<0>, std::ratio<3, 2>>;
#else
using Factor = memopt::Range<std::ratio<0>, std::ratio<1, 2>>;
#endif

using Net = memopt::Sequential<memopt::RandomRotation<Factor>, memopt::Flatten,
                               memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<8, 8, 1>, memopt::float32> spec;
