#pragma once
// summary(): Keras's table of layers, shapes and parameters, plus what memopt planned.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "memopt/plan/fusion.hpp"
#include "memopt/plan/gradient_buckets.hpp"
#include "memopt/plan/step_plans.hpp"

namespace memopt {

namespace detail {
inline std::string human_bytes(std::size_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{:.2f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (1u << 10)) return fmt::format("{:.2f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}
// 34826 -> "34,826", as Keras prints counts.
inline std::string thousands(std::size_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}
}  // namespace detail

/// The batches a summary reports the arena for: the one asked for, if any, and the one fit
/// prepared the training arena for (0 before any fit).
struct SummaryBatches {
  std::optional<std::size_t> asked = std::nullopt;
  std::size_t fit_prepared = 0;

  /// Before any fit and without a batch asked for, Keras's default batch size.
  static constexpr std::size_t default_batch = 32;

  /// The batch the summary reports first: the one asked for, else fit's, else 32.
  std::size_t shown() const { return asked ? *asked : fit_prepared ? fit_prepared : default_batch; }
  /// Why that batch: the line's note.
  std::string_view reason() const {
    if (asked) return asked == fit_prepared ? "asked for; fit prepared this batch" : "asked for";
    return fit_prepared ? "the batch fit prepared"
                        : "the default, 32: no fit yet; summary(N) for another";
  }
};

/// What compile() chose, for the summary's kernel list and memory line (empty before compile:
/// the summary then assumes Adam's two slots).
struct SummaryCompiled {
  std::string_view loss = {};
  std::string_view optimizer = {};
  std::size_t optimizer_slots = 2;
};

/// The summary of `Spec` on `backend` with the memory plan at `batch` rows.
template <class Spec>
std::string format_summary(std::string_view backend, std::size_t batch);

/// The same with the batch chosen as `batches` says: the arena at the batch asked for (or
/// fit's, or 32), and at fit's as well when fit prepared another. The gradient buckets are
/// those a data-parallel fit cuts under `Caps` (a BucketCaps).
template <class Spec, class Caps = plan::BucketCaps<>>
std::string format_summary(std::string_view backend, const SummaryBatches& batches,
                           const SummaryCompiled& compiled = {});

template <class Spec>
std::string format_summary(std::string_view backend, std::size_t batch) {
  return format_summary<Spec>(backend, SummaryBatches{batch, 0});
}

template <class Spec, class Caps>
std::string format_summary(std::string_view backend, const SummaryBatches& batches,
                           const SummaryCompiled& compiled) {
  using P = typename Spec::policy;
  const auto layer_title = [](std::size_t i) {
    return fmt::format("{} ({})", Spec::layer_name(i), Spec::layer_classes[i]);
  };
  // Columns as wide as their longest entry ("batch_normalization_1 (BatchNormalization)"),
  // and no narrower than Keras's.
  std::size_t name_width = 34;
  for (std::size_t i = 0; i < Spec::layer_count; ++i)
    name_width = std::max(name_width, layer_title(i).size() + 1);
  const std::string rule(name_width + 38, '_');
  const std::string thick(name_width + 38, '=');
  std::string s =
      fmt::format("Model: \"sequential\"  (policy {}, backend {})\n{}\n", P::name, backend, rule);
  s += fmt::format(" {:<{}}{:<22}{:>14}\n{}\n", "Layer (type)", name_width, "Output Shape",
                   "Param #", thick);
  for (std::size_t i = 0; i < Spec::layer_count; ++i) {
    const std::string layer = layer_title(i);
    const Shape& out = Spec::shapes[i + 1];
    std::string shape = "(None";
    for (std::size_t k = 0; k < out.rank; ++k) shape += fmt::format(", {}", out.dims[k]);
    s +=
        fmt::format(" {:<{}}{:<22}{:>14}\n", layer, name_width, shape + ")",
                    detail::thousands(Spec::layer_parameter_count(i) + Spec::layer_state_count(i)));
  }
  const std::size_t params = Spec::parameter_count;
  const std::size_t total = params + Spec::state_count;
  s +=
      fmt::format("{}\nTotal params: {} ({})\nTrainable params: {}\nNon-trainable params: {}\n{}\n",
                  thick, detail::thousands(total), detail::human_bytes(total * sizeof(float)),
                  detail::thousands(params), detail::thousands(Spec::state_count), rule);
  s += "Fused kernels of a training step:\n";
  const auto kernels = plan::training_kernels<Spec>(compiled.loss);
  const auto kernel_owner = [](const plan::FusedKernel& k) {
    return k.pass == "update" ? std::string("all") : Spec::node_name(k.node);
  };
  std::size_t owner_width = 17;
  for (const plan::FusedKernel& k : kernels)
    owner_width = std::max(owner_width, kernel_owner(k).size() + 1);
  for (const plan::FusedKernel& k : kernels)
    s += fmt::format("  {:<9} {:<{}} {}\n", k.pass, kernel_owner(k), owner_width, k.ops);
  std::string recomputed;
  for (std::size_t i = 0; i < Spec::depth; ++i)
    if (Spec::nodes[i].recompute)
      recomputed += (recomputed.empty() ? "" : ", ") + Spec::node_name(i);
  if (!recomputed.empty()) s += fmt::format("Recomputed in backward: {}\n", recomputed);
  const auto arena = [&s](std::size_t batch, std::string_view reason) {
    const auto train = plan::training_plan<Spec>(batch);
    const auto infer = plan::inference_plan<Spec>(batch);
    s += fmt::format(
        "Arena at batch {} ({}):\n  training   {:>12} bytes (naive {}, lower bound {}; {:.2f}x "
        "below naive)\n"
        "  inference  {:>12} bytes (naive {}, lower bound {})\n",
        batch, reason, train.arena_bytes, train.naive_bytes(), train.lower_bound_bytes(),
        static_cast<double>(train.naive_bytes()) / static_cast<double>(train.arena_bytes),
        infer.arena_bytes, infer.naive_bytes(), infer.lower_bound_bytes());
  };
  arena(batches.shown(), batches.reason());
  if (batches.fit_prepared != 0 && batches.fit_prepared != batches.shown())
    arena(batches.fit_prepared, "the batch fit prepared");
  s += fmt::format(
      "Parameters {} + optimizer state ({}) {} + 16-bit working copy {}\n",
      detail::human_bytes(params * sizeof(float)),
      compiled.optimizer.empty() ? std::string_view("Adam, until compile") : compiled.optimizer,
      detail::human_bytes(compiled.optimizer_slots * params * sizeof(float)),
      detail::human_bytes(sizeof(typename Spec::compute_type) == 4
                              ? 0
                              : params * sizeof(typename Spec::compute_type)));
  // In the order a data-parallel fit all-reduces them: each starts once backward has
  // written its last-named layer.
  constexpr auto buckets = plan::gradient_buckets<Spec, Caps>();
  s += fmt::format("Gradient buckets (data parallel; caps {} first, then {}): {}\n",
                   detail::human_bytes(Caps::first_bytes), detail::human_bytes(Caps::rest_bytes),
                   buckets.count);
  for (const plan::GradientBucket& b : buckets) {
    std::string names;
    for (std::size_t n = b.last_node + 1; n-- > b.first_node;)
      if (Spec::nodes[n].parameters > 0) names += (names.empty() ? "" : ", ") + Spec::node_name(n);
    s += fmt::format("  [{}] {}\n", names, detail::human_bytes(b.bytes()));
  }
  return s;
}

}  // namespace memopt
