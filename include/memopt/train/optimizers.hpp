#pragma once
// Keras's optimizers, one header each under train/optimizers/; each satisfies the Optimizer
// concept (train/optimizer.hpp), so that Model::compile takes any of them, or a new type.
//
// Each exposes its per-element rule as a host/device function `apply` so that backends can
// run the same arithmetic: the CPU loops over it, the CUDA backend fuses SGD's and Adam's into
// one kernel.

#include "memopt/train/learning_rate.hpp"
#include "memopt/train/optimizer.hpp"
#include "memopt/train/optimizers/adagrad.hpp"
#include "memopt/train/optimizers/adam.hpp"
#include "memopt/train/optimizers/adamw.hpp"
#include "memopt/train/optimizers/nadam.hpp"
#include "memopt/train/optimizers/rmsprop.hpp"
#include "memopt/train/optimizers/sgd.hpp"
#include "memopt/train/schedules.hpp"
