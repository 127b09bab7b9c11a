#pragma once
// Every loss memopt ships (one header each under losses/), and the Loss concept they model.

#include "memopt/train/loss.hpp"
#include "memopt/train/losses/binary_crossentropy.hpp"
#include "memopt/train/losses/categorical_crossentropy.hpp"
#include "memopt/train/losses/huber.hpp"
#include "memopt/train/losses/mean_absolute_error.hpp"
#include "memopt/train/losses/mean_squared_error.hpp"
#include "memopt/train/losses/sparse_categorical_crossentropy.hpp"
