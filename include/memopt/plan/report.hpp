#pragma once
// MemoryReport: a plan as people read it. Each buffer's name, bytes, offset and lifetime,
// printable with {fmt} and as JSON text.

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "memopt/io/json_writer.hpp"
#include "memopt/plan/buffer.hpp"
#include "memopt/plan/memory_report.hpp"
#include "memopt/plan/schedule.hpp"
#include "memopt/plan/step_plans.hpp"

namespace memopt::plan {

namespace detail {

template <class Spec>
std::string buffer_name(const Buffer& b) {
  const std::string role(role_name(b.role));
  if (b.layer < 0) return role;
  const auto node = static_cast<std::size_t>(b.layer);
  const std::string name = Spec::node_name(node) + "/";
  if (b.role == BufferRole::saved)
    return name + std::string(Spec::nodes[node].saved[static_cast<std::size_t>(b.slot)].name);
  return name + role;
}

template <class Spec, std::size_t N>
MemoryReport report_of(const MemoryPlan<N>& plan, std::string kind, std::size_t batch,
                       std::vector<std::string> steps) {
  MemoryReport r{std::move(kind),
                 std::string(Spec::policy::name),
                 batch,
                 plan.arena_bytes,
                 plan.naive_bytes(),
                 plan.lower_bound_bytes(),
                 std::move(steps),
                 {}};
  for (const Buffer& b : plan)
    r.buffers.push_back(
        {buffer_name<Spec>(b), b.role, b.layer, b.bytes, b.offset, b.first, b.last});
  return r;
}

inline std::string with_commas(std::size_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace detail

/// The report of `Spec`'s training step at `batch` rows.
template <class Spec>
MemoryReport training_memory_report(std::size_t batch) {
  const auto schedule = training_schedule<Spec>();
  std::vector<std::string> steps;
  for (int s = 0; s < schedule.count; ++s) {
    const Step& step = schedule[s];
    std::string name(step_kind_name(step.kind));
    if (step.layer >= 0) name += " " + Spec::node_name(static_cast<std::size_t>(step.layer));
    steps.push_back(std::move(name));
  }
  return detail::report_of<Spec>(training_plan<Spec>(batch), "training", batch, std::move(steps));
}

/// The report of `Spec`'s inference (predict) step at `batch` rows.
template <class Spec>
MemoryReport inference_memory_report(std::size_t batch) {
  std::vector<std::string> steps;
  for (std::size_t i = 0; i < Spec::depth; ++i) steps.push_back("forward " + Spec::node_name(i));
  return detail::report_of<Spec>(inference_plan<Spec>(batch), "inference", batch, std::move(steps));
}

/// The report as a table: a header line with the totals, then one line per buffer by offset.
inline std::string to_string(const MemoryReport& r) {
  std::string s = fmt::format(
      "{} memory plan ({}, batch {}): arena {} bytes, lower bound {}, naive {} ({:.2f}x "
      "below naive)\n",
      r.kind, r.policy, r.batch, detail::with_commas(r.arena_bytes),
      detail::with_commas(r.lower_bound_bytes), detail::with_commas(r.naive_bytes),
      r.arena_bytes ? static_cast<double>(r.naive_bytes) / static_cast<double>(r.arena_bytes)
                    : 0.0);
  std::size_t width = 6;
  for (const BufferReport& b : r.buffers) width = b.name.size() > width ? b.name.size() : width;
  s += fmt::format("  {:<{}} {:>13} {:>13}  alive\n", "buffer", width, "bytes", "offset");
  std::vector<const BufferReport*> order;
  for (const BufferReport& b : r.buffers) order.push_back(&b);
  for (std::size_t i = 1; i < order.size(); ++i)  // by offset, then by first step
    for (std::size_t j = i; j > 0 && (order[j]->offset < order[j - 1]->offset ||
                                      (order[j]->offset == order[j - 1]->offset &&
                                       order[j]->first < order[j - 1]->first));
         --j)
      std::swap(order[j], order[j - 1]);
  const auto step = [&](int i) {
    return i >= 0 && i < static_cast<int>(r.steps.size()) ? r.steps[static_cast<std::size_t>(i)]
                                                          : std::string("?");
  };
  for (const BufferReport* b : order)
    s += fmt::format("  {:<{}} {:>13} {:>13}  {}..{} ({} .. {})\n", b->name, width,
                     detail::with_commas(b->bytes), detail::with_commas(b->offset), b->first,
                     b->last, step(b->first), step(b->last));
  s += fmt::format("  peak at step {} ({})\n", r.peak_step(), step(r.peak_step()));
  return s;
}

/// The report as compact JSON text: kind, policy, batch, the totals, the alignment, the peak
/// step, the step names, and each buffer's name, role, layer, bytes, offset, first and last
/// step.
///
/// ```cpp
/// #include <fstream>
/// std::ofstream("plan.json") << mo::plan::to_json(model.memory_report(32));
/// ```
inline std::string to_json(const MemoryReport& r) {
  io::JsonWriter w;
  w.begin_object();
  w.key("kind").value(r.kind);
  w.key("policy").value(r.policy);
  w.key("batch").value(r.batch);
  w.key("arena_bytes").value(r.arena_bytes);
  w.key("naive_bytes").value(r.naive_bytes);
  w.key("lower_bound_bytes").value(r.lower_bound_bytes);
  w.key("alignment").value(arena_alignment);
  w.key("peak_step").value(r.peak_step());
  w.key("steps").begin_array();
  for (const std::string& step : r.steps) w.value(step);
  w.end_array();
  w.key("buffers").begin_array();
  for (const BufferReport& b : r.buffers) {
    w.begin_object();
    w.key("name").value(b.name);
    w.key("role").value(role_name(b.role));
    w.key("layer").value(b.layer);
    w.key("bytes").value(b.bytes);
    w.key("offset").value(b.offset);
    w.key("first_step").value(b.first);
    w.key("last_step").value(b.last);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return std::move(w).text();
}

/// `std::cout << report`: the same table as fmt prints.
///
/// ```cpp
/// #include <iostream>
/// std::cout << model.memory_report(64);
/// ```
inline std::ostream& operator<<(std::ostream& os, const MemoryReport& r) {
  return os << to_string(r);
}

}  // namespace memopt::plan

/// `fmt::format("{}", report)`: the table of `to_string`.
template <>
struct fmt::formatter<memopt::plan::MemoryReport> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(const memopt::plan::MemoryReport& r, Context& ctx) const {
    return fmt::formatter<std::string_view>::format(memopt::plan::to_string(r), ctx);
  }
};
