#pragma once
// summary(): Keras's table of layers, shapes and parameters, plus what memopt planned.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "memopt/model/spec.hpp"
#include "memopt/plan/fusion.hpp"
#include "memopt/plan/gradient_buckets.hpp"
#include "memopt/plan/memory_budget.hpp"
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
  /// Keras's gradient_accumulation_steps: above 1, the float32 sums beside the parameters.
  std::size_t gradient_accumulation_steps = 1;
};

/// The summary of `Spec` on `backend` with the memory plan at `batch` rows.
template <class Spec>
std::string format_summary(std::string_view backend, std::size_t batch);

/// The same with the batch chosen as `batches` says: the arena at the batch asked for (or
/// fit's, or 32), and at fit's as well when fit prepared another. The gradient buckets are
/// those a data-parallel fit cuts under `Caps` (a BucketCaps).
/// `threads`, when given, is a line on the threads the backend runs on (the CPU backend's
/// onednn::threads_summary()).
template <class Spec, class Caps = plan::BucketCaps<>>
std::string format_summary(std::string_view backend, const SummaryBatches& batches,
                           const SummaryCompiled& compiled = {}, std::string_view threads = {});

template <class Spec>
std::string format_summary(std::string_view backend, std::size_t batch) {
  return format_summary<Spec>(backend, SummaryBatches{batch, 0});
}

namespace detail {

// One "Arena at batch N" line: the training and inference plans' totals.
struct SummaryArena {
  std::size_t batch = 0;
  std::string_view reason;
  std::size_t train_arena = 0, train_naive = 0, train_lower_bound = 0;
  std::size_t infer_arena = 0, infer_naive = 0, infer_lower_bound = 0;
};

// Everything the summary prints, as values: the part of format_summary that is compiled once.
struct SummaryFacts {
  std::string_view policy, backend;
  SpecTables model;
  std::size_t parameter_count = 0, state_count = 0, compute_bytes = 4;
  std::vector<plan::FusedKernel> kernels;
  std::vector<SummaryArena> arenas;
  SummaryCompiled compiled;
  std::span<const plan::GradientBucket> buckets;
  std::size_t first_bucket_bytes = 0, rest_bucket_bytes = 0;
  std::string_view threads;
  std::string budget;              // the MemoryBudget line, if the policy states one
  std::string update_in_backward;  // the UpdateInBackward line, if the policy asks for it
};

// The UpdateInBackward line: the gradient memory and the arena with and without it.
template <class Spec>
std::string update_in_backward_line(std::size_t batch) {
  auto g = plan::graph_of<Spec>();
  const auto with = plan::training_plan_of(g, batch);
  g.update_in_backward = false;
  const auto without = plan::training_plan_of(g, batch);
  const std::size_t grads = plan::gradient_bytes(with), all = plan::gradient_bytes(without);
  return fmt::format(
      "Updates in backward: each layer's parameters as soon as its gradient is written; "
      "gradients {} bytes at most at once (the largest layer's), {} without ({} saved); "
      "training arena at batch {} {} bytes, {} without\n",
      grads, all, all - grads, batch, with.arena_bytes, without.arena_bytes);
}

// The MemoryBudget line: the budget, the layers it recomputes, their forward FLOPs and the
// arena with and without it.
template <std::size_t D>
std::string budget_line(const SpecTables& m, std::size_t bytes, std::size_t batch,
                        const plan::RecomputeChoice<D>& c) {
  std::string chosen;
  for (std::size_t i = 0; i < D; ++i)
    if (c.chosen[i]) chosen += (chosen.empty() ? "" : ", ") + m.node_name(i);
  return fmt::format(
      "Memory budget {} bytes at batch {}: recomputes {}; +{} forward FLOPs per step ({:.1f}% "
      "of the forward); training arena {} bytes, {} without the budget\n",
      bytes, batch, chosen.empty() ? std::string("nothing") : chosen, c.added_flops,
      c.forward_flops
          ? 100.0 * static_cast<double>(c.added_flops) / static_cast<double>(c.forward_flops)
          : 0.0,
      c.arena_bytes, c.unbudgeted_arena_bytes);
}

template <class Spec>
SummaryArena summary_arena(std::size_t batch, std::string_view reason) {
  const auto train = plan::training_plan<Spec>(batch);
  const auto infer = plan::inference_plan<Spec>(batch);
  return {batch,
          reason,
          train.arena_bytes,
          train.naive_bytes(),
          train.lower_bound_bytes(),
          infer.arena_bytes,
          infer.naive_bytes(),
          infer.lower_bound_bytes()};
}

[[gnu::cold]] inline std::string format_summary(const SummaryFacts& f) {
  const SpecTables& m = f.model;
  const auto layer_title = [&](std::size_t i) {
    return fmt::format("{} ({})", m.layer_name(i), m.layer_classes[i]);
  };
  // Columns as wide as their longest entry ("batch_normalization_1 (BatchNormalization)"),
  // and no narrower than Keras's.
  std::size_t name_width = 34;
  for (std::size_t i = 0; i < m.layer_count(); ++i)
    name_width = std::max(name_width, layer_title(i).size() + 1);
  // With residual blocks, Keras's functional summary's last column: the layers each reads.
  const bool branches = m.has_branches();
  const auto source_name = [&](std::size_t shape) {
    return shape == 0 ? std::string("input") : m.layer_name(shape - 1);
  };
  const auto connected_to = [&](std::size_t i) {
    const LayerInputs& w = m.wiring[i];
    std::string names = source_name(w.first);
    if (w.second != LayerInputs::no_input) names += ", " + source_name(w.second);
    return names;
  };
  std::size_t connected_width = 0;
  if (branches)
    for (std::size_t i = 0; i < m.layer_count(); ++i)
      connected_width = std::max(connected_width, connected_to(i).size() + 2);
  const std::size_t width = name_width + 38 + connected_width;
  const std::string rule(width, '_');
  const std::string thick(width, '=');
  std::string s = fmt::format("Model: \"sequential\"  (policy {}, backend {})\n{}\n", f.policy,
                              f.backend, rule);
  s += fmt::format(" {:<{}}{:<22}{:>14}", "Layer (type)", name_width, "Output Shape", "Param #");
  if (branches) s += "  Connected to";
  s += fmt::format("\n{}\n", thick);
  for (std::size_t i = 0; i < m.layer_count(); ++i) {
    const std::string layer = layer_title(i);
    const Shape& out = m.shapes[i + 1];
    std::string shape = "(None";
    for (std::size_t k = 0; k < out.rank; ++k) shape += fmt::format(", {}", out.dims[k]);
    s += fmt::format(" {:<{}}{:<22}{:>14}", layer, name_width, shape + ")",
                     thousands(m.layer_parameter_count(i) + m.layer_state_count(i)));
    if (branches) s += "  " + connected_to(i);
    s += "\n";
  }
  const std::size_t params = f.parameter_count;
  const std::size_t total = params + f.state_count;
  s +=
      fmt::format("{}\nTotal params: {} ({})\nTrainable params: {}\nNon-trainable params: {}\n{}\n",
                  thick, thousands(total), human_bytes(total * sizeof(float)), thousands(params),
                  thousands(f.state_count), rule);
  s += "Fused kernels of a training step:\n";
  const auto kernel_owner = [&](const plan::FusedKernel& k) {
    return k.pass == "update" ? std::string("all") : m.node_name(k.node);
  };
  std::size_t owner_width = 17;
  for (const plan::FusedKernel& k : f.kernels)
    owner_width = std::max(owner_width, kernel_owner(k).size() + 1);
  for (const plan::FusedKernel& k : f.kernels)
    s += fmt::format("  {:<9} {:<{}} {}\n", k.pass, kernel_owner(k), owner_width, k.ops);
  std::string recomputed;
  for (std::size_t i = 0; i < m.nodes.size(); ++i)
    if (m.nodes[i].recompute) recomputed += (recomputed.empty() ? "" : ", ") + m.node_name(i);
  if (!recomputed.empty()) s += fmt::format("Recomputed in backward: {}\n", recomputed);
  s += f.budget;
  s += f.update_in_backward;
  for (const SummaryArena& a : f.arenas)
    s += fmt::format(
        "Arena at batch {} ({}):\n  training   {:>12} bytes (naive {}, lower bound {}; {:.2f}x "
        "below naive)\n"
        "  inference  {:>12} bytes (naive {}, lower bound {})\n",
        a.batch, a.reason, a.train_arena, a.train_naive, a.train_lower_bound,
        static_cast<double>(a.train_naive) / static_cast<double>(a.train_arena), a.infer_arena,
        a.infer_naive, a.infer_lower_bound);
  s += fmt::format(
      "Parameters {} + optimizer state ({}) {} + 16-bit working copy {}\n",
      human_bytes(params * sizeof(float)),
      f.compiled.optimizer.empty() ? std::string_view("Adam, until compile") : f.compiled.optimizer,
      human_bytes(f.compiled.optimizer_slots * params * sizeof(float)),
      human_bytes(f.compute_bytes == 4 ? 0 : params * f.compute_bytes));
  if (f.compiled.gradient_accumulation_steps > 1)
    s += fmt::format(
        "Gradient accumulator {} (float32, outside the arena): an update every {} batches\n",
        human_bytes(params * sizeof(float)), f.compiled.gradient_accumulation_steps);
  // In the order a data-parallel fit all-reduces them: each starts once backward has
  // written its last-named layer.
  s += fmt::format("Gradient buckets (data parallel; caps {} first, then {}): {}\n",
                   human_bytes(f.first_bucket_bytes), human_bytes(f.rest_bucket_bytes),
                   f.buckets.size());
  for (const plan::GradientBucket& b : f.buckets) {
    std::string names;
    for (std::size_t n = b.last_node + 1; n-- > b.first_node;)
      if (m.nodes[n].parameters > 0) names += (names.empty() ? "" : ", ") + m.node_name(n);
    s += fmt::format("  [{}] {}\n", names, human_bytes(b.bytes()));
  }
  if (!f.threads.empty()) s += fmt::format("{}\n", f.threads);
  return s;
}

}  // namespace detail

template <class Spec, class Caps>
std::string format_summary(std::string_view backend, const SummaryBatches& batches,
                           const SummaryCompiled& compiled, std::string_view threads) {
  static constexpr auto buckets = plan::gradient_buckets<Spec, Caps>();
  detail::SummaryFacts f{Spec::policy::name,
                         backend,
                         Spec::tables(),
                         Spec::parameter_count,
                         Spec::state_count,
                         sizeof(typename Spec::compute_type),
                         plan::training_kernels<Spec>(compiled.loss),
                         {detail::summary_arena<Spec>(batches.shown(), batches.reason())},
                         compiled,
                         {buckets.begin(), buckets.end()},
                         Caps::first_bytes,
                         Caps::rest_bytes,
                         threads,
                         {},
                         {}};
  using P = typename Spec::policy;
  if constexpr (BudgetPolicy<P>) {
    using Unbudgeted = ModelSpec<typename Spec::net, typename Spec::input, typename P::precision>;
    f.budget = detail::budget_line(f.model, P::budget_bytes, P::budget_batch,
                                   budget_choice<Unbudgeted, P>::choice);
  }
  if constexpr (updates_in_backward_v<P>)
    f.update_in_backward = detail::update_in_backward_line<Spec>(batches.shown());
  if (batches.fit_prepared != 0 && batches.fit_prepared != batches.shown())
    f.arenas.push_back(detail::summary_arena<Spec>(batches.fit_prepared, "the batch fit prepared"));
  return detail::format_summary(f);
}

}  // namespace memopt
