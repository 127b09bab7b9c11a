#pragma once
// A buffer of one training or inference step: what it holds, its size and its lifetime.

#include <cstddef>
#include <string_view>

namespace memopt::plan {

/// Every arena allocation is aligned to this: what cuBLASLt and vector loads want.
inline constexpr std::size_t arena_alignment = 256;

constexpr std::size_t align_up(std::size_t bytes, std::size_t alignment = arena_alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// What a buffer holds.
enum class BufferRole {
  input,                  // the batch's features, in the compute type
  labels,                 // the batch's class indices, int32
  activation,             // a hidden layer's output f(z), kept for backward
  pre_activation,         // z, kept where f' needs it (GELU)
  logits,                 // the last layer's output in float32: z, then p, then dL/dz in place
  logits_grad,            // dL/dz of the last layer in the compute type (16-bit policies)
  activation_grad,        // dL/dz of a hidden layer
  parameter_grads,        // parameter gradients, float32, laid out like the parameters: all
                          // of them, or one node's under UpdateInBackward
  step_scalars,           // loss sum, correct count, finite flag
  relu_mask,              // a ReLU layer's z > 0, one bit per value, in cuBLASLt's RELU_AUX layout
  recomputed_activation,  // a Recompute<...> layer's output, recomputed in backward
  saved,                  // what a layer keeps for its own backward (its SavedDecl, by slot)
  branch_grad,            // a second gradient of one output (a residual's other branch): the
                          // dX of node `layer` for its input `slot`, summed into the first
};

constexpr std::string_view role_name(BufferRole r) {
  switch (r) {
    case BufferRole::input:
      return "input";
    case BufferRole::labels:
      return "labels";
    case BufferRole::activation:
      return "activation";
    case BufferRole::pre_activation:
      return "pre_activation";
    case BufferRole::logits:
      return "logits";
    case BufferRole::logits_grad:
      return "logits_grad";
    case BufferRole::activation_grad:
      return "activation_grad";
    case BufferRole::parameter_grads:
      return "parameter_grads";
    case BufferRole::step_scalars:
      return "step_scalars";
    case BufferRole::relu_mask:
      return "relu_mask";
    case BufferRole::recomputed_activation:
      return "recomputed_activation";
    case BufferRole::saved:
      return "saved";
    case BufferRole::branch_grad:
      return "branch_grad";
  }
  return "?";
}

/// One buffer: `bytes` live from step `first` to step `last`, inclusive, at `offset`.
/// `layer` is the node that writes it, or -1 for buffers of the whole step; `slot` tells a
/// node's saved buffers apart.
struct Buffer {
  BufferRole role{};
  int layer = -1;
  std::size_t bytes = 0;
  int first = 0;
  int last = 0;
  std::size_t offset = 0;
  int slot = 0;

  constexpr bool overlaps_in_time(const Buffer& o) const {
    return first <= o.last && o.first <= last;
  }
  constexpr bool overlaps_in_memory(const Buffer& o) const {
    return offset < o.offset + align_up(o.bytes) && o.offset < offset + align_up(bytes);
  }
};

}  // namespace memopt::plan
