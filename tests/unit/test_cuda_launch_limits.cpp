// The CUDA loss kernel's shared memory (backend/cuda/launch_limits.hpp) over every padded
// class count it takes: within the 48 KiB a block gets without opting in, static part
// included. On the host: the header includes no CUDA header. (tests/cuda checks the static
// part against what the compiler reports.)
#include <doctest/doctest.h>

#include <cstddef>

#include <memopt/backend/cuda/device_layout.hpp>
#include <memopt/backend/cuda/launch_limits.hpp>

namespace {
namespace mo = memopt;
namespace k = mo::cuda_backend::kernels;
using k::LossMode;
constexpr std::size_t limit = mo::cuda_backend::default_shared_bytes;
}  // namespace

TEST_CASE("the loss kernel's shared memory fits 48 KiB for every padded width it takes") {
  std::size_t per_warp_widths = 0, one_row_widths = 0, widest_total = 0;
  for (std::size_t ld = mo::cuda_backend::width_multiple; ld <= k::max_loss_classes;
       ld += mo::cuda_backend::width_multiple) {
    const int w = static_cast<int>(ld);
    const std::size_t total = k::loss_total_shared_bytes(LossMode::train, w);
    if (total > limit) FAIL_CHECK("ld " << ld << " needs " << total << " bytes");
    // One float per class and warp up to the threshold, one shared row above it.
    const std::size_t rows = w <= k::deterministic_classes ? k::block_threads / 32 : 1;
    CHECK(k::loss_shared_bytes(LossMode::train, w) == ld * rows * sizeof(float));
    CHECK(k::loss_shared_bytes(LossMode::evaluate, w) == 0);
    CHECK(k::loss_shared_bytes(LossMode::probabilities, w) == 0);
    widest_total = total > widest_total ? total : widest_total;
    ++(w <= k::deterministic_classes ? per_warp_widths : one_row_widths);
  }
  // Both layouts were measured above: neither threshold makes the other layout unreachable.
  CHECK(per_warp_widths > 0);
  CHECK(one_row_widths > 0);
  MESSAGE("largest block: " << widest_total << " of " << limit << " bytes");
}

TEST_CASE("the thresholds are the largest that fit, and the old ones did not") {
  // The per-warp layout's threshold is the largest padded width whose rows fit.
  CHECK(k::loss_total_shared_bytes(LossMode::train, k::deterministic_classes) <= limit);
  CHECK(k::loss_static_shared_bytes +
            (k::deterministic_classes + 8) * (k::block_threads / 32) * sizeof(float) >
        limit);
  // So is the widest output the executor accepts (its static_assert).
  CHECK(k::loss_static_shared_bytes + (k::max_loss_classes + 8) * sizeof(float) > limit);
  // Before the static part was counted: 1536 classes (1,529 to 1,536 real ones) took the
  // per-warp layout and asked for 49,152 dynamic bytes plus static, past 48 KiB, and 12288
  // outputs asked for the whole 48 KiB in one row.
  CHECK(1536 > k::deterministic_classes);
  CHECK(static_cast<std::size_t>(1536 * 8 * 4) + k::loss_static_shared_bytes > limit);
  CHECK(k::max_loss_classes < 12288);
  CHECK(k::deterministic_classes == 1528);
  CHECK(k::max_loss_classes == 12248);
}
