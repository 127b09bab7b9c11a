// expect: UpdateInBackward: write MemoryBudget<Bytes, Batch, UpdateInBackward<P>>
// A budget planned without the per-layer gradients would recompute more than it needs: the
// other order is refused, naming the spelling that plans with them (the twin).
#include <memopt/core.hpp>

namespace mo = memopt;

using Net =
    mo::Sequential<mo::Dense<256, mo::ReLU>, mo::Dense<256, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
#ifdef MEMOPT_FAILTEST
using P = mo::UpdateInBackward<mo::MemoryBudget<(4 << 20), 256>>;
#else
using P = mo::MemoryBudget<(4 << 20), 256, mo::UpdateInBackward<>>;
#endif
using M = mo::ModelPlan<Net, mo::Input<784>, P>;
static_assert(M::arena_bytes(256) <= (4 << 20));
