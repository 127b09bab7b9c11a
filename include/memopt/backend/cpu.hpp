#pragma once
// The CPU backend: its executor and the kernel of every layer it runs.
//
// ```cpp
// #include <memopt/backend/cpu.hpp>
// auto model = mo::Model<Net, mo::Input<784>, mo::float32, mo::cpu>{42};
// ```

#include "memopt/backend/cpu/executor.hpp"
#include "memopt/backend/cpu/layers/activation_layer.hpp"
#include "memopt/backend/cpu/layers/add.hpp"
#include "memopt/backend/cpu/layers/dense.hpp"
#include "memopt/backend/cpu/layers/random_contrast.hpp"
#include "memopt/backend/cpu/layers/random_flip.hpp"

// nvcc 13 stops with an internal error on oneDNN's C++ header (<oneapi/dnnl/dnnl.hpp>, in
// libstdc++'s stl_construct.h under -std=c++20), which every other layer's kernel needs: in a
// CUDA translation unit the CPU backend runs Dense, Activation, Residual, RandomFlip and
// RandomContrast models only. Host translation
// units, which is where the CPU backend belongs, get every layer.
#if !defined(__CUDACC__)
#include "memopt/backend/cpu/layers/batch_normalization.hpp"
#include "memopt/backend/cpu/layers/conv2d.hpp"
#include "memopt/backend/cpu/layers/depthwise_conv2d.hpp"
#include "memopt/backend/cpu/layers/dropout.hpp"
#include "memopt/backend/cpu/layers/global_average_pooling2d.hpp"
#include "memopt/backend/cpu/layers/pooling2d.hpp"
#include "memopt/backend/cpu/layers/random_crop.hpp"
#include "memopt/backend/cpu/layers/random_rotation.hpp"
#include "memopt/backend/cpu/layers/random_translation.hpp"
#include "memopt/backend/cpu/layers/random_zoom.hpp"
#include "memopt/backend/cpu/layers/rescaling.hpp"
#include "memopt/backend/cpu/layers/separable_conv2d.hpp"
#endif
