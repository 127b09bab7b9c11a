#pragma once
// The gradient buckets of data parallelism: the flat gradient buffer cut, at compile time, into
// ranges that are all-reduced one by one while backward still runs (PyTorch DDP's recipe).
//
// Backward writes the nodes' gradients from the last node down, and the flat buffer holds them
// in node order, so buckets taken in reverse node order are contiguous ranges. The first bucket
// is small (its all-reduce starts after the first few nodes' backward), the rest larger (fewer
// calls, each nearer the transport's bandwidth). A node never splits: a bucket holds whole
// nodes, and exceeds its cap only when one node alone does.

#include <array>
#include <cstddef>

#include "memopt/model/spec.hpp"

namespace memopt::plan {

/// The byte caps of the gradient buckets: `FirstBytes` for the first bucket (the last nodes'
/// gradients, ready first), `RestBytes` for each other. PyTorch DDP's defaults: 1 MiB and
/// 25 MiB. A Model's last template argument.
///
/// ```cpp
/// // Buckets of at most 4 KiB, then 16 KiB, for a data-parallel fit:
/// mo::Model<Net, mo::Input<784>, mo::float32, mo::cpu, mo::BucketCaps<4096, 16384>> model;
/// ```
template <std::size_t FirstBytes = std::size_t{1} << 20,
          std::size_t RestBytes = std::size_t{25} << 20>
struct BucketCaps {
  static_assert(FirstBytes > 0 && RestBytes > 0, "BucketCaps: a cap must be at least one byte");
  static constexpr std::size_t first_bytes = FirstBytes;
  static constexpr std::size_t rest_bytes = RestBytes;
};

/// One bucket: nodes `first_node..last_node` (inclusive, node order), their gradients
/// `offset..offset + count` of the flat buffer (floats). Its gradients are all written once
/// backward has finished `first_node`, the lowest.
struct GradientBucket {
  std::size_t first_node = 0;
  std::size_t last_node = 0;
  std::size_t offset = 0;
  std::size_t count = 0;

  constexpr std::size_t bytes() const { return count * sizeof(float); }
};

/// The buckets of a model, in the order their all-reduces start (reverse node order).
template <std::size_t MaxBuckets>
struct GradientBuckets {
  std::array<GradientBucket, MaxBuckets> buckets{};
  std::size_t count = 0;

  constexpr const GradientBucket& operator[](std::size_t i) const { return buckets[i]; }
  constexpr const GradientBucket* begin() const { return buckets.data(); }
  constexpr const GradientBucket* end() const { return buckets.data() + count; }
};

/// Cuts the gradients of `Spec`'s nodes into buckets under `Caps` (a BucketCaps): from the last
/// node down, a node joins the open bucket unless that would take it past its cap, and nodes
/// without parameters join no bucket.
///
/// ```cpp
/// constexpr auto b = mo::plan::gradient_buckets<Spec, mo::BucketCaps<>>();
/// static_assert(b.count == 1);  // 784-128-10: 397 KiB, under the first 1 MiB
/// ```
template <class Spec, class Caps = BucketCaps<>>
constexpr GradientBuckets<Spec::depth> gradient_buckets() {
  GradientBuckets<Spec::depth> out;
  GradientBucket open{};
  bool is_open = false;
  const auto cap = [&] { return out.count == 0 ? Caps::first_bytes : Caps::rest_bytes; };
  for (std::size_t n = Spec::depth; n-- > 0;) {
    const NodeInfo& node = Spec::nodes[n];
    if (node.parameters == 0) continue;
    const std::size_t bytes = node.parameters * sizeof(float);
    if (is_open && open.bytes() + bytes > cap()) {
      out.buckets[out.count++] = open;
      is_open = false;
    }
    if (!is_open) {
      open = GradientBucket{n, n, node.parameter_offset, 0};
      is_open = true;
    }
    open.first_node = n;
    open.offset = node.parameter_offset;
    open.count += node.parameters;
  }
  if (is_open) out.buckets[out.count++] = open;
  return out;
}

}  // namespace memopt::plan

namespace memopt {
using plan::BucketCaps;
}  // namespace memopt
