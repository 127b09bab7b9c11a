// expect: (LeastReachable<10580480, 10485760>.*|10580480UL <= 10485760UL': )MemoryBudget: the
//
// A residual block of 784-256-[1024-1024-256]+-10 at batch 256: its training arena is
// 11,137,536 bytes, and recomputing the block's layers brings it down to 10,580,480 at the
// least (its branch point and the Add cannot recompute). A budget of 10 MiB is refused, naming
// both numbers; the twin's 10.125 MiB is met.
#include <memopt/core.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
constexpr std::size_t budget = 10 << 20;
#else
constexpr std::size_t budget = (10 << 20) + (1 << 17);
#endif

using Net = mo::Sequential<mo::Dense<256, mo::ReLU>,
                           mo::Residual<mo::Sequential<mo::Dense<1024, mo::ReLU>,
                                                       mo::Dense<1024, mo::ReLU>, mo::Dense<256>>>,
                           mo::Dense<10, mo::Softmax>>;
using M = mo::ModelPlan<Net, mo::Input<784>, mo::MemoryBudget<budget, 256>>;
static_assert(M::arena_bytes(256) <= budget);
static_assert(M::arena_bytes(256) < mo::ModelPlan<Net, mo::Input<784>>::arena_bytes(256));
