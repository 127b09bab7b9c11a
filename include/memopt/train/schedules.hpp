#pragma once
// Keras's learning-rate schedules; an optimizer's learning_rate takes any of them, or a number.

#include "memopt/train/learning_rate.hpp"
#include "memopt/train/schedules/cosine_decay.hpp"
#include "memopt/train/schedules/exponential_decay.hpp"
#include "memopt/train/schedules/piecewise_constant_decay.hpp"
#include "memopt/train/schedules/polynomial_decay.hpp"
