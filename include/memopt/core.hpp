#pragma once
// memopt's light core, as {fmt}'s fmt/base.h: everything decided at compile time (policies,
// shapes, layers, Sequential, Input, ModelSpec, ModelPlan and the plans), and nothing that
// runs a model. It includes no JSON, no Eigen, no oneDNN, no threads and no {fmt}: a program
// that defines and plans a model compiles in well under a second.
//
// ```cpp
// #include <memopt/core.hpp>
// namespace mo = memopt;
// using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
// using M = mo::ModelPlan<Net, mo::Input<784>, mo::mixed_float16>;
// static_assert(M::arena_bytes(32) <= M::naive_bytes(32));
// ```
//
// Opt in to the rest: <memopt/memopt.hpp> (Model, the CPU backend, data, I/O, training), or
// one of its headers alone.

#include "memopt/core/backend.hpp"
#include "memopt/core/dtype.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/policy.hpp"
#include "memopt/core/shape.hpp"
#include "memopt/core/update_in_backward.hpp"
#include "memopt/layers.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model_plan.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/plan/fusion.hpp"
#include "memopt/plan/memory_budget.hpp"
#include "memopt/plan/schedule.hpp"
#include "memopt/plan/step_plans.hpp"
