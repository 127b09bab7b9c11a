// fit, evaluate and predict on the CPU backend: it learns, it reports, it allocates nothing
// inside a training step after the first, and it refuses bad input.
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <new>
#include <ratio>
#include <vector>

#include <memopt/data/image_dataset.hpp>
#include <memopt/memopt.hpp>

#include "blobs.hpp"

namespace mo = memopt;

// The replacements below pair our own new with free(); GCC cannot see that they match.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

// Counts every operator new while `counting` is set. Replacing the global operators is
// the one way to see allocations made anywhere, Eigen and the standard library included.
// Those made while oneDNN executes a primitive (on any of its threads) are counted apart:
// they happen inside the library, where memopt has no say.
namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
std::atomic<long> onednn_allocations{0};
std::atomic<int> inside_onednn{0};
void* counted(std::size_t n, std::size_t align) {
  if (counting.load(std::memory_order_relaxed))
    (inside_onednn.load() > 0 ? onednn_allocations : allocations).fetch_add(1);
  const std::size_t a = align < alignof(std::max_align_t) ? alignof(std::max_align_t) : align;
  void* p = std::aligned_alloc(a, (n + a - 1) / a * a + (n == 0 ? a : 0));
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) {
  return counted(n, 0);
}
void* operator new[](std::size_t n) {
  return counted(n, 0);
}
void* operator new(std::size_t n, std::align_val_t a) {
  return counted(n, std::size_t(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return counted(n, std::size_t(a));
}
// The nothrow forms too (std::stable_sort's temporary buffer uses them): every allocation of
// the test binary must come from here, or ASan sees operator new's memory given to free.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
// Every execution memopt asks of oneDNN passes here (the executable's definition comes before
// the library's), and is handed on to the library's own.
extern "C" dnnl_status_t dnnl_primitive_execute(const_dnnl_primitive_t primitive,
                                                dnnl_stream_t stream, int nargs,
                                                const dnnl_exec_arg_t* args) {
  using Execute =
      dnnl_status_t (*)(const_dnnl_primitive_t, dnnl_stream_t, int, const dnnl_exec_arg_t*);
  static const auto library =
      reinterpret_cast<Execute>(::dlsym(RTLD_NEXT, "dnnl_primitive_execute"));
  if (library == nullptr) std::abort();
  ++inside_onednn;
  const dnnl_status_t status = library(primitive, stream, nargs, args);
  --inside_onednn;
  return status;
}

void operator delete(void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

using memopt::testing::blobs;

using Net = mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>;

// Counts allocations inside every training step but the first of each batch size, and
// between consecutive steps of an epoch (the data pipeline's increments). Epoch boundaries,
// where logs and validation may allocate, are left out. The first step of a batch size is
// where the executor prepares its kernels for that size: oneDNN's primitives (Dense's
// matmuls, convolutions) are created then, once per size (PerBatch).
// oneDNN's own allocations are kept per step, to show that they do not grow.
struct AllocationProbe : mo::Callback {
  long steps = 0, inside = 0, between = 0, at_begin = 0, at_end = 0, onednn_at_begin = 0;
  std::vector<long> onednn_per_step;
  std::array<std::size_t, 4> sizes_seen{};  // no allocation while counting
  std::size_t size_count = 0, epoch_samples = 0;
  bool have_end = false;
  void on_train_batch_begin(int) override {
    at_begin = allocations.load();
    onednn_at_begin = onednn_allocations.load();
    if (have_end) between += at_begin - at_end;
  }
  void on_train_batch_end(int, const mo::BatchLogs& logs) override {
    at_end = allocations.load();
    ++steps;
    const std::size_t rows = logs.samples - epoch_samples;  // logs count the epoch's samples
    epoch_samples = logs.samples;
    const auto seen =
        sizes_seen.begin() + static_cast<std::ptrdiff_t>(std::min(size_count, sizes_seen.size()));
    if (std::find(sizes_seen.begin(), seen, rows) == seen) {
      // No assertion here: under `-s` doctest would allocate to log it. Sizes past the
      // fourth are counted but not remembered, which the caller's count then shows.
      if (size_count < sizes_seen.size()) sizes_seen[size_count] = rows;
      ++size_count;
    } else {
      inside += at_end - at_begin;
      onednn_per_step.push_back(onednn_allocations.load() - onednn_at_begin);
    }
    have_end = true;
  }
  void on_epoch_end(int, const mo::Logs&) override {
    have_end = false;
    epoch_samples = 0;
  }
};

template <class Policy>
void learns_blobs() {
  mo::Model<Net, mo::Input<8>, Policy> model{1};
  model.compile(mo::Adam{{.learning_rate = 1e-2}}, mo::SparseCategoricalCrossentropy{},
                mo::metrics::Accuracy{});
  auto train = blobs(512, 2);
  auto test = blobs(256, 3);
  const mo::History h =
      model.fit(train | mo::data::batch(32),
                {.epochs = 4, .validation_data = test | mo::data::batch(64), .verbose = 0});
  REQUIRE(h.epoch == std::vector<int>{0, 1, 2, 3});
  CHECK(h.history.at("loss").back() < h.history.at("loss").front());
  CHECK(h.last("accuracy") > 0.9);
  CHECK(h.last("val_accuracy") > 0.9);
  const mo::Evaluation e = model.evaluate(test | mo::data::batch(100));
  CHECK(e.accuracy == doctest::Approx(h.last("val_accuracy")));
  CHECK(e.loss == doctest::Approx(h.last("val_loss")).epsilon(1e-5));
}

}  // namespace

TEST_CASE("fit learns separable data under every policy") {
  learns_blobs<mo::float32>();
  learns_blobs<mo::mixed_float16>();
  learns_blobs<mo::mixed_bfloat16>();
}

// Three epochs of `batches` (30 steps of 2 sizes for the 300 rows in batches of 32 used
// below: 9 full and a partial one), counted.
template <class Policy, class Layers = Net, class In = mo::Input<8>, class Batches>
AllocationProbe allocates_nothing_between_steps(Batches&& batches, long steps = 30,
                                                std::size_t sizes = 2) {
  mo::Model<Layers, In, Policy> model{4};
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  AllocationProbe probe;
  probe.onednn_per_step.reserve(static_cast<std::size_t>(steps));  // none while counting
  counting = true;
  model.fit(batches, {.epochs = 3, .callbacks = {&probe}, .verbose = 0});
  counting = false;
  CHECK(probe.steps == steps);
  CHECK(probe.size_count == sizes);  // so that the steps left out are these sizes' first
  CHECK(probe.inside == 0);
  CHECK(probe.between == 0);
  return probe;
}

TEST_CASE("no allocation inside training steps after the first") {
  auto train = blobs(300, 5);
  allocates_nothing_between_steps<mo::mixed_float16>(train | mo::data::batch(32));
}

TEST_CASE("no allocation between steps with shuffle | batch | prefetch(autotune)") {
  auto train = blobs(300, 5);
  allocates_nothing_between_steps<mo::float32>(train | mo::data::shuffle(300, 1) |
                                               mo::data::batch(32) |
                                               mo::data::prefetch(mo::data::autotune));
}

TEST_CASE("no allocation between steps on 8-bit images: their bytes are converted in place") {
  // 300 images of 2 x 4 x 1 bytes for the Input<8>, from the blobs' features (scaled to 0..255).
  const auto blob = blobs(300, 6);
  std::vector<std::uint8_t> pixels;
  std::vector<std::int32_t> labels;
  for (const mo::data::Sample s : blob) {
    for (float v : s.features)
      pixels.push_back(static_cast<std::uint8_t>(
          std::clamp(std::lround(128.0f + 20.0f * v), long{0}, long{255})));
    labels.push_back(s.label);
  }
  mo::data::ImageDataset images(std::move(pixels), std::move(labels), 2, 4, 1);
  allocates_nothing_between_steps<mo::mixed_bfloat16>(images | mo::data::shuffle(300, 1) |
                                                      mo::data::batch(32) |
                                                      mo::data::prefetch(mo::data::autotune));
}

// Convolutions and batch normalization (oneDNN's), max and global average pooling, Dropout
// and Dense (memopt's own loops), on the blobs' 8 features read as 2 x 4 images.
using Convnet = mo::Sequential<mo::Conv2D<6, 3, mo::Same, mo::ReLU>, mo::BatchNormalization,
                               mo::MaxPooling2D<2>, mo::Conv2D<4, mo::KernelSize<1, 2>>,
                               mo::GlobalAveragePooling2D, mo::Dropout<std::ratio<1, 4>>,
                               mo::Dense<4, mo::Softmax>>;

TEST_CASE("no allocation by memopt inside a convnet's training steps after the first") {
  // 256 rows in batches of 32: one batch size, so the first step alone prepares primitives.
  auto train = blobs(256, 8);
  auto check = [&]<class Policy>() {
    const AllocationProbe probe =
        allocates_nothing_between_steps<Policy, Convnet, mo::Input<2, 4, 1>>(
            train | mo::data::batch(32), 24, 1);
    // oneDNN's own allocations are the same in every step: nothing grows.
    REQUIRE(probe.onednn_per_step.size() == 23);
    const auto [least, most] =
        std::minmax_element(probe.onednn_per_step.begin(), probe.onednn_per_step.end());
    CHECK(*least == *most);
    MESSAGE("oneDNN allocates " << *most << " times a step, inside its executions");
  };
  SUBCASE("float32") {
    check.template operator()<mo::float32>();
  }
  SUBCASE("mixed_bfloat16") {
    check.template operator()<mo::mixed_bfloat16>();
  }
}

TEST_CASE("predict returns probabilities that sum to one per row") {
  mo::Model<Net, mo::Input<8>> model{6};
  auto data = blobs(10, 7);
  const std::vector<float> p = model.predict(data.features());
  REQUIRE(p.size() == 10 * 4);
  for (std::size_t r = 0; r < 10; ++r) {
    float sum = 0;
    for (std::size_t u = 0; u < 4; ++u) sum += p[r * 4 + u];
    CHECK(sum == doctest::Approx(1.0f).epsilon(1e-5));
  }
}

TEST_CASE("a seed fixes the weights and the whole training run") {
  auto run = [] {
    mo::Model<Net, mo::Input<8>> model{42};
    model.compile(mo::SGD{{.learning_rate = 0.05, .momentum = 0.9}},
                  mo::SparseCategoricalCrossentropy{});
    auto train = blobs(128, 8);
    model.fit(train | mo::data::batch(16), {.epochs = 2, .verbose = 0});
    return model.get_weights();
  };
  CHECK(run() == run());
  CHECK(mo::Model<Net, mo::Input<8>>{1}.get_weights() !=
        mo::Model<Net, mo::Input<8>>{2}.get_weights());
}

TEST_CASE("misuse at run time raises memopt::error saying what was expected") {
  mo::Model<Net, mo::Input<8>> model{1};
  auto train = blobs(64, 9);
  CHECK_THROWS_WITH_AS(model.fit(train | mo::data::batch(8), {.verbose = 0}),
                       doctest::Contains("call compile(optimizer, loss, metrics...) first"),
                       mo::error);
  CHECK_THROWS_WITH_AS(
      model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{{.from_logits = true}}),
      doctest::Contains("must not use from_logits=true"), mo::error);

  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  auto narrow = mo::data::from(std::vector<float>(12, 0.5f), {0, 1, 2}, 4);
  CHECK_THROWS_WITH_AS(model.fit(narrow | mo::data::batch(3), {.verbose = 0}),
                       doctest::Contains("Input has 8 features, the batch has 4"), mo::error);

  auto bad_label = mo::data::from(std::vector<float>(16, 0.5f), {0, 7}, 8);
  CHECK_THROWS_WITH_AS(model.fit(bad_label | mo::data::batch(2), {.verbose = 0}),
                       doctest::Contains("label 7 at row 1 is outside [0, 4)"), mo::error);

  std::vector<float> x(16, 0.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  auto nan_data = mo::data::from(x, {0, 1}, 8);
  CHECK_THROWS_WITH_AS(model.fit(nan_data | mo::data::batch(2), {.verbose = 0}),
                       doctest::Contains("the loss is nan at epoch 1"), mo::error);

  CHECK_THROWS_WITH_AS(model.predict(std::vector<float>(7, 1.0f)),
                       doctest::Contains("expected a multiple of 8 features, found 7"), mo::error);
}

TEST_CASE("a Linear last layer trains with from_logits") {
  using Logits = mo::Sequential<mo::Dense<16, mo::Tanh>, mo::Dense<4>>;
  mo::Model<Logits, mo::Input<8>> model{3};
  CHECK_THROWS_AS(model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{}), mo::error);
  model.compile(mo::Adam{{.learning_rate = 1e-2}},
                mo::SparseCategoricalCrossentropy{{.from_logits = true}}, mo::metrics::Accuracy{});
  auto train = blobs(256, 10);
  const auto h = model.fit(train | mo::data::batch(32), {.epochs = 3, .verbose = 0});
  CHECK(h.last("accuracy") > 0.9);
}
