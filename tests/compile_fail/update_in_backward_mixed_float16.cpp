// expect: UpdateInBackward: a dynamic loss scale
// mixed_float16's dynamic loss scale skips a whole step when any gradient is not finite,
// which is known only after the layers above are updated: refused with the policies that
// work. The twin updates in backward under mixed_bfloat16, which scales no loss.
#include <memopt/core.hpp>

namespace mo = memopt;

using Net = mo::Sequential<mo::Dense<32, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
#ifdef MEMOPT_FAILTEST
using M = mo::ModelPlan<Net, mo::Input<64>, mo::UpdateInBackward<mo::mixed_float16>>;
#else
using M = mo::ModelPlan<Net, mo::Input<64>, mo::UpdateInBackward<mo::mixed_bfloat16>>;
#endif
static_assert(M::gradient_bytes(32) == (64 * 32 + 32) * 4);
