// expect: RandomZoom: after the height factor .and an optional width factor., each
// Conv2D's padding is no fill mode: the options of an augmentation layer are told apart by
// kind, and an unknown one is named. The twin (without MEMOPT_FAILTEST) gives a fill mode and
// must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

#include <ratio>

#ifdef MEMOPT_FAILTEST
using Zoom = memopt::RandomZoom<std::ratio<1, 5>, memopt::Same>;
#else
using Zoom = memopt::RandomZoom<std::ratio<1, 5>, memopt::Constant<>>;
#endif

using Net = memopt::Sequential<Zoom, memopt::Flatten, memopt::Dense<10, memopt::Softmax>>;
memopt::ModelSpec<Net, memopt::Input<8, 8, 1>, memopt::float32> spec;
