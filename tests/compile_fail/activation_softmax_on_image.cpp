// expect: Activation<Softmax>: its input is an image .*put Flatten or GlobalAveragePooling2D
// memopt's Softmax spans a sample's values, Keras's the last axis: on an image they differ, so
// Activation<Softmax> takes vectors only. The twin (without MEMOPT_FAILTEST) pools the image
// first and must compile.
#include <memopt/layers.hpp>
#include <memopt/model/spec.hpp>

using Conv = memopt::Conv2D<4, 3>;
using Head = memopt::Activation<memopt::Softmax>;
#ifdef MEMOPT_FAILTEST
using Net = memopt::Sequential<Conv, Head>;
#else
using Net = memopt::Sequential<Conv, memopt::GlobalAveragePooling2D, Head>;
#endif

memopt::ModelSpec<Net, memopt::Input<6, 6, 1>, memopt::float32> spec;
