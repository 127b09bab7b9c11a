// DeviceLayout (backend/cuda/device_layout.hpp) on the host, for every model the GPU tests
// use: padded widths, parameter offsets, pack/unpack with zero padding, and the training and
// inference plans of the padded chain (valid, every buffer the size the CUDA executor reads
// and writes). The header includes no CUDA header, so this runs without a GPU or nvcc.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <memopt/backend/cuda/device_layout.hpp>
#include <memopt/memopt.hpp>

namespace {

namespace mo = memopt;
using mo::cuda_backend::DeviceLayout;
using mo::cuda_backend::padded_width;
using mo::plan::BufferRole;

static_assert(padded_width(1) == 8 && padded_width(8) == 8 && padded_width(9) == 16);
static_assert(padded_width(10) == 16 && padded_width(784) == 784 && padded_width(1531) == 1536);

// Distinct, non-zero values: a value that lands in the wrong slot, or a slot left unwritten,
// shows.
template <class Spec>
std::vector<float> distinct_parameters() {
  std::vector<float> w(Spec::parameter_count);
  for (std::size_t j = 0; j < w.size(); ++j) w[j] = 1.0f + static_cast<float>(j % 1000003);
  return w;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <class Spec>
void check_widths_and_offsets() {
  using L = DeviceLayout<Spec>;
  constexpr std::size_t depth = Spec::depth;
  for (std::size_t i = 0; i <= depth; ++i) {
    INFO("width ", i);
    CHECK(L::dims[i] % mo::cuda_backend::width_multiple == 0);
    CHECK(L::dims[i] >= Spec::dims[i]);
    CHECK(L::dims[i] < Spec::dims[i] + mo::cuda_backend::width_multiple);
  }
  CHECK(L::kernel_offset(0) == 0);
  for (std::size_t i = 0; i < depth; ++i) {
    INFO("layer ", i);
    CHECK(L::kernel_size(i) == L::dims[i] * L::dims[i + 1]);
    CHECK(L::bias_offset(i) == L::kernel_offset(i) + L::kernel_size(i));
    CHECK(L::parameter_offsets[i + 1] == L::bias_offset(i) + L::dims[i + 1]);
    // 16 bytes of 16-bit values: the alignment cuBLASLt's fast kernels want for A and bias.
    CHECK(L::kernel_offset(i) % 8 == 0);
    CHECK(L::bias_offset(i) % 8 == 0);
  }
  CHECK(L::parameter_count == L::parameter_offsets[depth]);
  CHECK(L::parameter_count % 8 == 0);
  CHECK(L::parameter_count >= Spec::parameter_count);

  // The padded chain: the model's, with the padded widths.
  const auto c = L::chain(), real = mo::plan::chain_of<Spec>();
  CHECK(c.depth == depth);
  CHECK(c.compute_bytes == sizeof(typename Spec::compute_type));
  CHECK(c.parameter_count() == L::parameter_count);
  for (std::size_t i = 0; i < depth; ++i) {
    CHECK(c.activations[i] == real.activations[i]);
    CHECK(c.recompute[i] == real.recompute[i]);
  }
  for (std::size_t i = 0; i <= depth; ++i) CHECK(c.dims[i] == L::dims[i]);
}

template <class Spec>
void check_pack_unpack() {
  using L = DeviceLayout<Spec>;
  const std::vector<float> w = distinct_parameters<Spec>();
  // Whatever the buffer held before: pack writes every slot.
  std::vector<float> device(L::parameter_count, std::numeric_limits<float>::quiet_NaN());
  L::pack(w.data(), device.data());

  std::vector<bool> mapped(L::parameter_count, false);
  bool placed = true;
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    const std::size_t units = Spec::dims[i + 1], inputs = Spec::dims[i];
    for (std::size_t c = 0; c < inputs; ++c)
      for (std::size_t u = 0; u < units; ++u) {
        const std::size_t at = L::kernel_offset(i) + c * L::dims[i + 1] + u;
        placed = placed && device[at] == w[Spec::kernel_offset(i) + c * units + u];
        mapped[at] = true;
      }
    for (std::size_t u = 0; u < units; ++u) {
      placed = placed && device[L::bias_offset(i) + u] == w[Spec::bias_offset(i) + u];
      mapped[L::bias_offset(i) + u] = true;
    }
  }
  CHECK(placed);  // kernel column-major (padded units x padded inputs), then bias
  std::size_t padding = 0, nonzero_padding = 0;
  for (std::size_t j = 0; j < device.size(); ++j)
    if (!mapped[j]) {
      ++padding;
      if (device[j] != 0.0f) ++nonzero_padding;  // NaN counts too
    }
  CHECK(padding == L::parameter_count - Spec::parameter_count);
  CHECK(nonzero_padding == 0);

  // Back to the user's layout, bit for bit, whatever the padding holds (gradients and
  // optimizer state come back through unpack; their padding is not the user's).
  for (std::size_t j = 0; j < device.size(); ++j)
    if (!mapped[j]) device[j] = 12345.0f;
  std::vector<float> back(Spec::parameter_count, 0.0f);
  L::unpack(device.data(), back.data());
  CHECK(same_bits(back, w));
}

template <class Spec>
void check_plans(std::size_t batch) {
  using L = DeviceLayout<Spec>;
  using T = typename Spec::compute_type;
  constexpr std::size_t depth = Spec::depth;
  constexpr bool narrow = sizeof(T) != sizeof(float);
  INFO("batch of ", batch);
  const auto p = L::training_plan(batch);
  CHECK(p.is_valid());
  const auto bytes = [&](BufferRole role, int layer = -1) {
    REQUIRE(p.contains(role, layer));
    return p.find(role, layer).bytes;
  };
  CHECK(bytes(BufferRole::input) == batch * L::dims[0] * sizeof(T));
  CHECK(bytes(BufferRole::labels) == batch * sizeof(std::int32_t));
  const auto c = L::chain();
  for (std::size_t i = 0; i + 1 < depth; ++i) {
    const int l = static_cast<int>(i);
    INFO("layer ", i);
    const std::size_t w = L::dims[i + 1];
    CHECK(bytes(BufferRole::activation, l) == batch * w * sizeof(T));
    CHECK(bytes(BufferRole::activation_grad, l) == batch * w * sizeof(T));
    if (c.recompute[i]) CHECK(bytes(BufferRole::recomputed_activation, l) == batch * w * sizeof(T));
    if (c.activations[i] == mo::ActivationKind::relu)
      CHECK(bytes(BufferRole::relu_mask, l) == mo::plan::relu_mask_ld(w) / 8 * batch);
    if (c.activations[i] == mo::ActivationKind::gelu)
      CHECK(bytes(BufferRole::pre_activation, l) == batch * mo::plan::gelu_aux_ld(w) * sizeof(T));
  }
  const int last = static_cast<int>(depth) - 1;
  CHECK(bytes(BufferRole::logits, last) == batch * L::dims[depth] * sizeof(float));
  CHECK(p.contains(BufferRole::logits_grad, last) == narrow);
  if (narrow) CHECK(bytes(BufferRole::logits_grad, last) == batch * L::dims[depth] * sizeof(T));
  CHECK(bytes(BufferRole::parameter_grads) == L::parameter_count * sizeof(float));
  // The loss kernel writes the last bias gradient: the gradients are live from the loss on.
  const int loss = mo::plan::training_schedule_of(c).index(mo::plan::StepKind::loss);
  CHECK(p.find(BufferRole::parameter_grads).first <= loss);
  CHECK(p.find(BufferRole::step_scalars).first <= loss);

  const auto q = L::inference_plan(batch);
  CHECK(q.is_valid());
  CHECK(q.find(BufferRole::input).bytes == batch * L::dims[0] * sizeof(T));
  for (std::size_t i = 0; i + 1 < depth; ++i)
    CHECK(q.find(BufferRole::activation, static_cast<int>(i)).bytes ==
          batch * L::dims[i + 1] * sizeof(T));
  CHECK(q.find(BufferRole::logits, last).bytes == batch * L::dims[depth] * sizeof(float));
}

template <class Net, class In, class... Policies>
void check_model(std::initializer_list<std::size_t> batches) {
  (
      [&] {
        using Spec = mo::ModelSpec<Net, In, Policies>;
        INFO(Policies::name, ", ", Spec::depth, " layers, ", Spec::parameter_count, " parameters");
        check_widths_and_offsets<Spec>();
        check_pack_unpack<Spec>();
        for (const std::size_t b : batches) check_plans<Spec>(b);
      }(),
      ...);
}

// The GPU tests' models (tests/cuda/*.cu).
using Mlp = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Mixed =
    mo::Sequential<mo::Dense<13, mo::GELU>, mo::Dense<7, mo::Sigmoid>, mo::Dense<9, mo::Tanh>,
                   mo::Dense<5, mo::Linear>, mo::Dense<3, mo::Softmax>>;
using Relus = mo::Sequential<mo::Dense<3, mo::ReLU>, mo::Dense<17, mo::ReLU>,
                             mo::Dense<130, mo::ReLU>, mo::Dense<2, mo::Softmax>>;
using Logits = mo::Sequential<mo::Dense<33, mo::GELU>, mo::Dense<11, mo::Linear>>;
using Recomputed =
    mo::Sequential<mo::Dense<64, mo::Recompute<mo::ReLU>>, mo::Dense<33, mo::Recompute<mo::GELU>>,
                   mo::Dense<24, mo::Recompute<mo::ReLU>>, mo::Dense<17, mo::Recompute<mo::Tanh>>,
                   mo::Dense<10, mo::Softmax>>;
using Wide1528 = mo::Sequential<mo::Dense<1528, mo::Softmax>>;
using Wide1531 = mo::Sequential<mo::Dense<24, mo::ReLU>, mo::Dense<1531, mo::Softmax>>;
using Widest = mo::Sequential<mo::Dense<12248, mo::Softmax>>;
using Deep = mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<40, mo::GELU>,
                            mo::Dense<48, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Small = mo::Sequential<mo::Dense<8, mo::ReLU>, mo::Dense<4, mo::Softmax>>;
using Big = mo::Sequential<mo::Dense<4096, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

static_assert(DeviceLayout<mo::ModelSpec<Mlp, mo::Input<784>, mo::float32>>::dims[2] == 16);
static_assert(DeviceLayout<mo::ModelSpec<Mlp, mo::Input<784>, mo::float32>>::parameter_count ==
              128 * 784 + 128 + 16 * 128 + 16);

}  // namespace

TEST_CASE("DeviceLayout: the guide's 784-128-10 under every policy") {
  check_model<Mlp, mo::Input<784>, mo::float32, mo::mixed_float16, mo::mixed_bfloat16>(
      {1, 16, 17, 32, 48, 64, 67});
}

TEST_CASE("DeviceLayout: odd widths, every activation, Recompute") {
  check_model<Mixed, mo::Input<11>, mo::float32, mo::mixed_float16, mo::mixed_bfloat16>(
      {1, 7, 40, 43});
  check_model<Relus, mo::Input<5>, mo::float32, mo::mixed_float16, mo::mixed_bfloat16>(
      {1, 5, 299, 300, 303});
  check_model<Logits, mo::Input<19>, mo::float32, mo::mixed_bfloat16>({95, 96, 99});
  check_model<Recomputed, mo::Input<20>, mo::float32, mo::mixed_float16>({49, 50, 53});
  check_model<Deep, mo::Input<32>, mo::mixed_float16, mo::mixed_bfloat16>({31, 128, 131});
  check_model<Small, mo::Input<6>, mo::float32>({4, 5});
}

TEST_CASE("DeviceLayout: wide outputs and the device-sized model") {
  check_model<Wide1528, mo::Input<16>, mo::float32>({9, 64, 67});
  check_model<Wide1531, mo::Input<16>, mo::float32, mo::mixed_float16>({9, 64, 67});
  check_model<Widest, mo::Input<8>, mo::float32>({16, 19});
  // test_errors.cu asks for 2^24 rows of it: the plan must say so in bytes (far beyond any
  // device), not overflow.
  using BigSpec = mo::ModelSpec<Big, mo::Input<4096>, mo::float32>;
  check_widths_and_offsets<BigSpec>();
  check_plans<BigSpec>(256);
  const auto p = DeviceLayout<BigSpec>::training_plan(std::size_t{1} << 24);
  CHECK(p.is_valid());
  CHECK(p.arena_bytes > (std::size_t{1} << 24) * 4096 * sizeof(float));
}
