// The CUDA backend's epilogue fallback, run on the host: the element-wise functions its
// kernels call (backend/cuda/epilogue_math.hpp), with the plain products written out here, for
// a whole training step in the device layout (padded widths, the plan's ReLU mask and GELU
// input layouts), against the CPU backend's gradients and outputs. No GPU needed: the kernels
// call the same functions, with the hardware's conversions instead of HostConvert.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <memopt/backend/cuda/device_layout.hpp>
#include <memopt/backend/cuda/epilogue_math.hpp>
#include <memopt/memopt.hpp>

namespace {

namespace mo = memopt;
namespace ep = mo::cuda_backend::epilogue;
using Cvt = ep::HostConvert;

double relative_error(std::span<const float> a, std::span<const float> ref) {
  double diff = 0, norm = 0;
  for (std::size_t j = 0; j < ref.size(); ++j) {
    const double d = static_cast<double>(a[j]) - static_cast<double>(ref[j]);
    diff += d * d;
    norm += static_cast<double>(ref[j]) * static_cast<double>(ref[j]);
  }
  REQUIRE(norm > 0);  // never all-zero data
  return std::sqrt(diff / norm);
}

// cuBLASLt's plain products as the executor asks for them (column-major, float32 accumulation,
// D stored in its own type). Activations are `rows` samples of `ld` values: an ld x rows
// column-major matrix.
// D (m x n) = W (m x k) X (k x n): the fallback's forward product, D in float32.
template <class A, class B>
void product_nn(const A* w, const B* x, float* d, std::size_t m, std::size_t k, std::size_t n) {
  for (std::size_t c = 0; c < n; ++c)
    for (std::size_t r = 0; r < m; ++r) {
      float s = 0.0f;
      for (std::size_t j = 0; j < k; ++j) s += Cvt::load(w[j * m + r]) * Cvt::load(x[c * k + j]);
      d[c * m + r] = s;
    }
}
// D (m x k) = G (m x n) X^T, X k x n: the weight gradient.
template <class A, class B>
void product_nt(const A* g, const B* x, float* d, std::size_t m, std::size_t n, std::size_t k) {
  for (std::size_t c = 0; c < k; ++c)
    for (std::size_t r = 0; r < m; ++r) {
      float s = 0.0f;
      for (std::size_t j = 0; j < n; ++j) s += Cvt::load(g[j * m + r]) * Cvt::load(x[j * k + c]);
      d[c * m + r] = s;
    }
}
// D (k x n) = W^T G, W m x k, G m x n: the fallback's input gradient, D in float32.
template <class A, class B>
void product_tn(const A* w, const B* g, float* d, std::size_t m, std::size_t k, std::size_t n) {
  for (std::size_t c = 0; c < n; ++c)
    for (std::size_t r = 0; r < k; ++r) {
      float s = 0.0f;
      for (std::size_t j = 0; j < m; ++j) s += Cvt::load(w[r * m + j]) * Cvt::load(g[c * m + j]);
      d[c * k + r] = s;
    }
}

// One training step the way the CUDA executor runs it when every epilogue falls back, and the
// forward outputs (probabilities, or raw outputs without Softmax).
template <class Spec>
struct FallbackStep {
  using T = typename Spec::compute_type;
  using L = mo::cuda_backend::DeviceLayout<Spec>;
  static constexpr std::size_t depth = Spec::depth;

  std::vector<float> gradients;  // user layout
  std::vector<float> outputs;    // rows x outputs

  FallbackStep(std::span<const float> user_params, const std::vector<float>& x,
               const std::vector<std::int32_t>& y, std::size_t rows) {
    std::vector<float> params(L::parameter_count);
    L::pack(user_params.data(), params.data());
    std::vector<T> working(params.size());
    for (std::size_t j = 0; j < params.size(); ++j) working[j] = Cvt::store<T>(params[j]);

    // load_batch: the input in T, zero padding.
    std::vector<std::vector<T>> act(depth + 1);  // act[0] input, act[i + 1] layer i's output
    act[0].assign(rows * L::dims[0], T(0.0f));
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < Spec::inputs; ++c)
        act[0][r * L::dims[0] + c] = Cvt::store<T>(x[r * Spec::inputs + c]);
    std::vector<std::vector<T>> pre(depth);
    std::vector<std::vector<std::uint8_t>> mask(depth);
    std::vector<float> logits(rows * L::dims[depth]);

    // Forward: the plain product in float32 (in place of float32 logits, else in a scratch
    // buffer, as the executor does), then the epilogue over every item.
    std::vector<float> scratch;
    for (std::size_t i = 0; i < depth; ++i) {
      const std::size_t ld = L::dims[i + 1];
      const bool last = i + 1 == depth;
      const mo::ActivationKind kind = Spec::activations[i];
      if (last) {
        product_nn(working.data() + L::kernel_offset(i), act[i].data(), logits.data(), ld,
                   L::dims[i], rows);
        ep::ForwardArgs<float, float, T> a;
        a.kind = kind;
        a.product = logits.data();
        a.out = logits.data();
        a.bias = params.data() + L::bias_offset(i);
        a.rows = rows;
        a.width = Spec::dims[i + 1];
        a.ld = ld;
        for (std::size_t it = 0; it < ep::forward_items(a); ++it) ep::forward_item(a, it);
      } else {
        act[i + 1].assign(rows * ld, T(123.0f));  // what the arena held before: overwritten
        scratch.assign(rows * ld, 0.0f);
        product_nn(working.data() + L::kernel_offset(i), act[i].data(), scratch.data(), ld,
                   L::dims[i], rows);
        ep::ForwardArgs<T, T, T> a;
        a.kind = kind;
        a.product = scratch.data();
        a.out = act[i + 1].data();
        a.bias = working.data() + L::bias_offset(i);
        a.pre_ld = mo::plan::gelu_aux_ld(ld);
        a.mask_ld = mo::plan::relu_mask_ld(ld);
        if (kind == mo::ActivationKind::gelu) {
          pre[i].assign(rows * a.pre_ld, T(0.0f));
          a.pre = pre[i].data();
        }
        if (kind == mo::ActivationKind::relu) {
          // 0xff: the fallback must write every bit it owns, zeros included.
          mask[i].assign(mo::plan::relu_mask_bytes(ld, rows), 0xff);
          a.mask = mask[i].data();
        }
        a.rows = rows;
        a.width = Spec::dims[i + 1];
        a.ld = ld;
        for (std::size_t it = 0; it < ep::forward_items(a); ++it) ep::forward_item(a, it);
      }
    }

    // The outputs predict returns.
    outputs.assign(rows * Spec::outputs, 0.0f);
    for (std::size_t r = 0; r < rows; ++r) {
      const float* z = logits.data() + r * L::dims[depth];
      float m = z[0], sum = 0.0f;
      for (std::size_t u = 0; u < Spec::outputs; ++u) m = std::max(m, z[u]);
      for (std::size_t u = 0; u < Spec::outputs; ++u) sum += std::exp(z[u] - m);
      for (std::size_t u = 0; u < Spec::outputs; ++u)
        outputs[r * Spec::outputs + u] = Spec::ends_in_softmax ? std::exp(z[u] - m) / sum : z[u];
    }

    // The loss kernel's gradient, (p - onehot) / rows in T, and the last bias gradient.
    std::vector<float> grads(L::parameter_count, 0.0f);
    std::vector<T> dz(rows * L::dims[depth], T(0.0f));
    {
      float* db = grads.data() + L::bias_offset(depth - 1);
      for (std::size_t r = 0; r < rows; ++r) {
        const float* z = logits.data() + r * L::dims[depth];
        float m = z[0], sum = 0.0f;
        for (std::size_t u = 0; u < Spec::outputs; ++u) m = std::max(m, z[u]);
        for (std::size_t u = 0; u < Spec::outputs; ++u) sum += std::exp(z[u] - m);
        for (std::size_t u = 0; u < Spec::outputs; ++u) {
          const float p = std::exp(z[u] - m) / sum;
          const float g =
              (p - (static_cast<std::int32_t>(u) == y[r] ? 1.0f : 0.0f)) / static_cast<float>(rows);
          dz[r * L::dims[depth] + u] = Cvt::store<T>(g);
          db[u] += Cvt::load(dz[r * L::dims[depth] + u]);
        }
      }
    }

    // Backward: dW, then dX as a plain product and the fallback's backward epilogue.
    for (std::size_t k = 0; k < depth; ++k) {
      const std::size_t i = depth - 1 - k;
      const std::size_t m = L::dims[i + 1], in = L::dims[i];
      product_nt(dz.data(), act[i].data(), grads.data() + L::kernel_offset(i), m, rows, in);
      if (i == 0) break;
      std::vector<T> da(rows * in, T(123.0f));
      scratch.assign(rows * in, 0.0f);
      product_tn(working.data() + L::kernel_offset(i), dz.data(), scratch.data(), m, in, rows);
      ep::BackwardArgs<T> b;
      b.kind = Spec::activations[i - 1];
      b.product = scratch.data();
      b.grad = da.data();
      if (b.kind == mo::ActivationKind::sigmoid || b.kind == mo::ActivationKind::tanh)
        b.out = act[i].data();
      if (b.kind == mo::ActivationKind::relu) b.mask = mask[i - 1].data();
      if (b.kind == mo::ActivationKind::gelu) b.pre = pre[i - 1].data();
      b.mask_ld = mo::plan::relu_mask_ld(in);
      b.pre_ld = mo::plan::gelu_aux_ld(in);
      b.rows = rows;
      b.width = Spec::dims[i];
      b.ld = in;
      float* db = grads.data() + L::bias_offset(i - 1);
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t u = 0; u < in; ++u) db[u] += ep::backward_value(b, r, u);
      dz = std::move(da);
    }
    gradients.assign(Spec::parameter_count, 0.0f);
    L::unpack(grads.data(), gradients.data());
  }
};

template <class Net, class In, class Policy>
void check_against_cpu(std::size_t rows, std::uint64_t seed) {
  using Spec = mo::ModelSpec<Net, In, Policy>;
  constexpr bool narrow = !std::is_same_v<typename Spec::compute_type, float>;
  // The fallback rounds where the CPU does (once per stored value), so only summation order
  // differs: far below the 1e-2 the GPU tests allow 16-bit policies against the CPU.
  const double tol = narrow ? 1e-3 : 1e-5;
  INFO(Policy::name, ", ", Spec::depth, " layers, batch of ", rows);

  mo::Rng rng(seed);
  std::vector<float> w(Spec::parameter_count);
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    const float limit = std::sqrt(6.0f / static_cast<float>(Spec::dims[i] + Spec::dims[i + 1]));
    for (std::size_t j = 0; j < Spec::kernel_size(i); ++j)
      w[Spec::kernel_offset(i) + j] = rng.uniform(-limit, limit);
    for (std::size_t u = 0; u < Spec::dims[i + 1]; ++u)
      w[Spec::bias_offset(i) + u] = rng.uniform(-0.1f, 0.1f);
  }
  // Biases the compute type holds exactly: the CUDA executor adds the hidden layers' biases
  // from the 16-bit working copy, fused epilogue and fallback alike, where the CPU adds the
  // float32 master biases; that difference is the executor's, not the fallback's math, and
  // under bfloat16 it alone moves some of these gradients by a few percent.
  for (std::size_t i = 0; i < Spec::depth; ++i)
    for (std::size_t u = 0; u < Spec::dims[i + 1]; ++u) {
      float& b = w[Spec::bias_offset(i) + u];
      b = Cvt::load(Cvt::store<typename Spec::compute_type>(b));
    }
  std::vector<float> x(rows * Spec::inputs);
  for (float& v : x) v = rng.uniform(-1.0f, 1.0f);
  std::vector<std::int32_t> y(rows);
  for (auto& v : y) v = static_cast<std::int32_t>(rng.below(Spec::outputs));

  mo::cpu_backend::Executor<Spec> cpu;
  cpu.set_parameters(w);
  cpu.prepare(rows, 0);
  std::int64_t iterations = 0;
  mo::NoLossScale scale;
  std::vector<float> out_cpu(rows * Spec::outputs), g_cpu(Spec::parameter_count);
  cpu.predict(x.data(), rows, out_cpu.data());
  mo::train::training_step(cpu, x.data(), y.data(), rows, mo::SGD{{.learning_rate = 0.0}},
                           iterations, scale);
  cpu.get_gradients(g_cpu);

  const FallbackStep<Spec> step(w, x, y, rows);
  const double e_out = relative_error(step.outputs, out_cpu);
  const double e_grad = relative_error(step.gradients, g_cpu);
  MESSAGE(Policy::name << ", " << Spec::depth << " layers, " << rows
                       << " rows: relative error of the outputs " << e_out << ", gradients "
                       << e_grad);
  CHECK(e_out < tol);
  CHECK(e_grad < tol);
  for (std::size_t i = 0; i < Spec::depth; ++i) {
    INFO("bias gradient of layer ", i);
    const std::span<const float> a(step.gradients), b(g_cpu);
    const std::size_t at = Spec::bias_offset(i), units = Spec::dims[i + 1];
    CHECK(relative_error(a.subspan(at, units), b.subspan(at, units)) < 3 * tol);
  }
}

// The GPU tests' models (tests/cuda/test_parity_shapes.cu).
using Mixed =
    mo::Sequential<mo::Dense<13, mo::GELU>, mo::Dense<7, mo::Sigmoid>, mo::Dense<9, mo::Tanh>,
                   mo::Dense<5, mo::Linear>, mo::Dense<3, mo::Softmax>>;
using Relus = mo::Sequential<mo::Dense<3, mo::ReLU>, mo::Dense<17, mo::ReLU>,
                             mo::Dense<130, mo::ReLU>, mo::Dense<2, mo::Softmax>>;
using Logits = mo::Sequential<mo::Dense<33, mo::GELU>, mo::Dense<11, mo::Linear>>;
using Deep = mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<40, mo::GELU>,
                            mo::Dense<48, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

}  // namespace

TEST_CASE("epilogue fallback: a training step matches the CPU backend under float32") {
  check_against_cpu<Mixed, mo::Input<11>, mo::float32>(40, 1);
  check_against_cpu<Mixed, mo::Input<11>, mo::float32>(1, 2);
  check_against_cpu<Relus, mo::Input<5>, mo::float32>(300, 3);
  check_against_cpu<Logits, mo::Input<19>, mo::float32>(17, 4);
}

TEST_CASE("epilogue fallback: a training step matches the CPU backend under 16-bit policies") {
  check_against_cpu<Mixed, mo::Input<11>, mo::mixed_float16>(40, 5);
  check_against_cpu<Relus, mo::Input<5>, mo::mixed_float16>(300, 6);
  check_against_cpu<Relus, mo::Input<5>, mo::mixed_float16>(64, 9);
  check_against_cpu<Logits, mo::Input<19>, mo::mixed_bfloat16>(17, 7);
  check_against_cpu<Mixed, mo::Input<11>, mo::mixed_bfloat16>(40, 8);
  check_against_cpu<Deep, mo::Input<32>, mo::mixed_float16>(128, 10);
  check_against_cpu<Deep, mo::Input<32>, mo::mixed_bfloat16>(128, 11);
  check_against_cpu<Deep, mo::Input<32>, mo::mixed_bfloat16>(31, 12);
  check_against_cpu<Relus, mo::Input<5>, mo::mixed_bfloat16>(129, 13);
}

TEST_CASE(
    "epilogue fallback: padding comes out zero, masks and GELU inputs where the plan has them") {
  // One row of 16 values, 10 real, Sigmoid (whose f(0) = 0.5 must not reach the padding).
  std::vector<float> out(16), bias(16, 0.5f);
  for (std::size_t u = 0; u < 16; ++u) out[u] = static_cast<float>(u) - 5.0f;  // the product
  ep::ForwardArgs<float, float, float> a;
  a.kind = mo::ActivationKind::sigmoid;
  a.product = out.data();  // in place, as for float32 outputs
  a.out = out.data();
  a.bias = bias.data();
  a.rows = 1;
  a.width = 10;
  a.ld = 16;
  REQUIRE(ep::forward_items(a) == 2);
  for (std::size_t it = 0; it < 2; ++it) ep::forward_item(a, it);
  for (std::size_t u = 0; u < 10; ++u)
    CHECK(out[u] == doctest::Approx(1.0 / (1.0 + std::exp(4.5 - static_cast<double>(u)))));
  for (std::size_t u = 10; u < 16; ++u) CHECK(out[u] == 0.0f);

  // ReLU with a mask: two rows of 8 (one mask byte per row's 8 values, rows 128 bits apart),
  // GELU input: row r at r * gelu_aux_ld.
  std::vector<mo::half> z(16, mo::half(99.0f));
  std::vector<float> product(16);
  std::vector<mo::half> b = {0.25f, 0.5f, -1.0f, 2.0f, 0.125f, 1.0f, 3.0f, 7.0f};
  for (std::size_t j = 0; j < 16; ++j) product[j] = j < 8 ? -0.5f : 0.5f;
  std::vector<std::uint8_t> mask(mo::plan::relu_mask_bytes(8, 2), 0xff);
  ep::ForwardArgs<mo::half, mo::half, mo::half> r;
  r.kind = mo::ActivationKind::relu;
  r.product = product.data();
  r.out = z.data();
  r.bias = b.data();
  r.mask = mask.data();
  r.mask_ld = mo::plan::relu_mask_ld(8);
  r.rows = 2;
  r.width = 7;
  r.ld = 8;
  for (std::size_t it = 0; it < ep::forward_items(r); ++it) ep::forward_item(r, it);
  for (std::size_t row = 0; row < 2; ++row)
    for (std::size_t u = 0; u < 8; ++u) {
      const float zu = u < 7 ? static_cast<float>(b[u]) + (row == 0 ? -0.5f : 0.5f) : 0.0f;
      const bool on = zu > 0.0f;
      CHECK(mo::plan::mask_bit(mask.data(), r.mask_ld, u, row) == on);
      CHECK(static_cast<float>(z[row * 8 + u]) == (on ? zu : 0.0f));
    }
  CHECK(mask[1] == 0xff);  // beyond the row's 8 values: not the fallback's to write
}

TEST_CASE("epilogue fallback: backward reads only what the activation keeps") {
  // Linear: nothing kept, so out, mask and pre stay null and are never read.
  std::vector<float> g = {1.0f, -2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f};
  ep::BackwardArgs<float> a;
  a.kind = mo::ActivationKind::linear;
  a.grad = g.data();
  a.rows = 1;
  a.width = 3;
  a.ld = 8;
  float sum = 0.0f;
  for (std::size_t u = 0; u < 8; ++u) sum += ep::backward_value(a, 0, u);
  CHECK(sum == 2.0f);
  for (std::size_t u = 3; u < 8; ++u) CHECK(g[u] == 0.0f);  // padding zeroed

  // ReLU selects: an infinite gradient where the unit was off gives 0, not NaN.
  std::vector<float> h = {std::numeric_limits<float>::infinity(), 2.0f, 0, 0, 0, 0, 0, 0};
  std::vector<std::uint8_t> mask(mo::plan::relu_mask_bytes(8, 1), 0);
  mo::plan::set_mask_bit(mask.data(), mo::plan::relu_mask_ld(8), 1, 0, true);
  ep::BackwardArgs<float> r;
  r.kind = mo::ActivationKind::relu;
  r.grad = h.data();
  r.mask = mask.data();
  r.mask_ld = mo::plan::relu_mask_ld(8);
  r.rows = 1;
  r.width = 2;
  r.ld = 8;
  CHECK(ep::backward_value(r, 0, 0) == 0.0f);
  CHECK(ep::backward_value(r, 0, 1) == 2.0f);
}
