// expect: SeparableConv2D: each kind of option may be given once
// Keras's keyword arguments each appear once: two paddings are refused by name. The twin gives
// one.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#ifdef MEMOPT_FAILTEST
using Sep = memopt::SeparableConv2D<8, 3, memopt::Same, memopt::ReLU, memopt::Valid>;
#else
using Sep = memopt::SeparableConv2D<8, 3, memopt::Same, memopt::ReLU>;
#endif
using Net = memopt::Sequential<Sep, memopt::Flatten, memopt::Dense<4, memopt::Softmax>>;

memopt::ModelSpec<Net, memopt::Input<6, 6, 3>, memopt::float32> spec;
