// expect: UpdateInBackward: the optimizer must update one layer's parameters at a time
// An optimizer of one's own that updates only the whole buffer cannot run inside backward:
// compile() names the overload to add. The twin adds it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;

struct SignSGD {
  static constexpr std::string_view name = "sign_sgd";
  std::size_t slots() const { return 0; }
  std::vector<std::string> slot_names() const { return {}; }
  double learning_rate(std::int64_t) const { return 1e-3; }
  void update(std::span<float> w, std::span<float> g, std::span<float>, std::int64_t) const {
    for (std::size_t j = 0; j < w.size(); ++j) w[j] -= 1e-3f * float((g[j] > 0) - (g[j] < 0));
  }
};

#ifdef MEMOPT_FAILTEST
using Optimizer = SignSGD;
#else
// Elementwise, so one layer's part is updated as the whole buffer's would be.
struct Optimizer : SignSGD {
  using SignSGD::update;
  void update(std::span<float> w, std::span<float> g, std::span<float> state, std::int64_t t,
              mo::ParameterSlice) const {
    update(w, g, state, t);
  }
};
#endif

using Net = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<3, mo::Softmax>>;

void compile_it() {
  mo::Model<Net, mo::Input<5>, mo::UpdateInBackward<>> model{1};
  model.compile(Optimizer{}, mo::SparseCategoricalCrossentropy{});
}
