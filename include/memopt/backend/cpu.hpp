#pragma once
// The CPU backend: its executor and the kernel of every layer it runs.
//
// ```cpp
// #include <memopt/backend/cpu.hpp>
// auto model = mo::Model<Net, mo::Input<784>, mo::float32, mo::cpu>{42};
// ```

#include "memopt/backend/cpu/executor.hpp"
#include "memopt/backend/cpu/layers/dense.hpp"
