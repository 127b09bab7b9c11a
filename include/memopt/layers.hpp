#pragma once
// Every layer type, and the vocabulary they are written in (activations, windows, ratios).
//
// ```cpp
// #include <memopt/layers.hpp>
// using Net = mo::Sequential<mo::Conv2D<32, 3, mo::ReLU>, mo::MaxPooling2D<2>,
//                            mo::Flatten, mo::Dense<10, mo::Softmax>>;
// ```

#include "memopt/layers/activation.hpp"
#include "memopt/layers/activation_layer.hpp"
#include "memopt/layers/add.hpp"
#include "memopt/layers/affine_options.hpp"
#include "memopt/layers/batch_normalization.hpp"
#include "memopt/layers/conv2d.hpp"
#include "memopt/layers/dense.hpp"
#include "memopt/layers/depthwise_conv2d.hpp"
#include "memopt/layers/dropout.hpp"
#include "memopt/layers/flatten.hpp"
#include "memopt/layers/global_average_pooling2d.hpp"
#include "memopt/layers/pooling2d.hpp"
#include "memopt/layers/random_contrast.hpp"
#include "memopt/layers/random_crop.hpp"
#include "memopt/layers/random_factor.hpp"
#include "memopt/layers/random_flip.hpp"
#include "memopt/layers/random_rotation.hpp"
#include "memopt/layers/random_translation.hpp"
#include "memopt/layers/random_zoom.hpp"
#include "memopt/layers/recompute.hpp"
#include "memopt/layers/rescaling.hpp"
#include "memopt/layers/residual.hpp"
#include "memopt/layers/separable_conv2d.hpp"
#include "memopt/layers/window.hpp"
