#pragma once
// Keras's `valid` and `same` padding as the oneDNN wrappers take them: the layers' own
// vocabulary (layers/window.hpp), named in this namespace.

#include "memopt/layers/window.hpp"

namespace memopt::cpu_backend::onednn {

using ::memopt::Padding;
using ::memopt::window_axis;
using ::memopt::WindowAxis;

}  // namespace memopt::cpu_backend::onednn
