#pragma once
// What the ```cpp blocks of memopt's headers and README take as already made, as a reader
// would have it in their own program (tests/snippets/check_snippets.py compiles every block
// that is not a whole program as a function body that sees these names). Declared only:
// blocks are compiled, never run. Keep the list short; a block that needs more declares it.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <memopt/memopt.hpp>

namespace memopt_snippets_context {
namespace mo = memopt;

// The model of README's first example.
using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Model = mo::Model<Net, mo::Input<784>>;
extern Model model;
using Spec = Model::spec;
// Its plan alone (memopt/core.hpp's ModelPlan).
using M = mo::ModelPlan<Net, mo::Input<784>, mo::mixed_float16>;

// Fashion-MNIST, as `auto [train, test] = mo::data::fashion_mnist();` gives it.
extern mo::data::Dataset train, test;
// Batches to fit and validate on.
using Batches = decltype(std::declval<mo::data::Dataset&>() | mo::data::batch(32));
extern Batches batches, val;

// The reader's own code: a training step and a use of a value.
void step(auto&&...);
void use(auto&&...);
}  // namespace memopt_snippets_context
