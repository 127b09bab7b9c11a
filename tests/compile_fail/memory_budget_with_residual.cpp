// expect: MemoryBudget: models with Residual blocks are not planned under a budget yet
// The budget's dynamic program covers chains; a model with a residual block is refused with
// the way round it (Recompute by hand). The twin budgets the same layers as a chain.
#include <memopt/core.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
using Net = mo::Sequential<mo::Dense<256, mo::ReLU>,
                           mo::Residual<mo::Sequential<mo::Dense<512, mo::ReLU>, mo::Dense<256>>>,
                           mo::Dense<10, mo::Softmax>>;
#else
using Net = mo::Sequential<mo::Dense<256, mo::ReLU>, mo::Dense<512, mo::ReLU>, mo::Dense<256>,
                           mo::Dense<10, mo::Softmax>>;
#endif
using M = mo::ModelPlan<Net, mo::Input<784>, mo::MemoryBudget<(8 << 20), 256>>;
static_assert(M::arena_bytes(256) <= (8 << 20));
