// A 200-layer Dense chain planned inside static_assert with the compiler's default limits
// (GCC's -fconstexpr-ops-limit stopped such a plan at about 128 layers while the greedy
// placement did O(n^3) work). self_contained.plan_200_layers fails if this stops compiling.
#include <memopt/core.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace mo = memopt;

template <std::size_t... I>
auto deep_chain(std::index_sequence<I...>)
    -> mo::Sequential<std::conditional_t<(I < sizeof...(I)), mo::Dense<64, mo::ReLU>, void>...,
                      mo::Dense<10, mo::Softmax>>;
using Net = decltype(deep_chain(std::make_index_sequence<199>{}));
static_assert(Net::depth == 200);

using Deep = mo::ModelPlan<Net, mo::Input<784>, mo::float32>;
static_assert(Deep::arena_bytes(32) == Deep::lower_bound_bytes(32));
static_assert(Deep::arena_bytes(32) < Deep::naive_bytes(32));
static_assert(Deep::inference_arena_bytes(32) == Deep::inference_lower_bound_bytes(32));
