#pragma once
// The Optimizer concept: what Model::compile accepts, so that a new optimizer is a new type.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memopt {

/// One trainable tensor in the flat parameter buffer, as Keras's optimizer sees a variable:
/// its `name` ("kernel", "bias", "gamma"), its `path` ("dense/kernel") and where it lies.
struct ParameterRange {
  std::string path;
  std::string name;
  std::size_t offset = 0;  // in floats
  std::size_t size = 0;    // in floats
};

/// Where the parameters one update sees lie in the flat buffer: `offset` floats in, of
/// `total`. The optimizer's state keeps its slots as blocks of `total` floats each, so the
/// part's slot k starts at `k * total + offset`.
struct ParameterSlice {
  std::size_t offset = 0;
  std::size_t total = 0;
};

/// What `Model::compile` accepts as an optimizer. Required:
/// - `O::name`: Keras's name ("adam"), recorded in checkpoints;
/// - `slots()`: floats of state per parameter, and `slot_names()`: one name per slot
///   ("momentum", "velocity"), the checkpoint's tensor suffixes;
/// - `update(w, g, state, iteration)`: one update of the flat parameters `w` from their
///   gradients `g` (which it may overwrite, e.g. to clip them); `state` holds `slots()` blocks,
///   each laid out like `w`; `iteration` counts the updates applied before this one;
/// - `learning_rate(iteration)`: the learning rate that update uses.
/// Optional, used when present:
/// - `build(ranges)`: the trainable tensors, once at compile (Keras's `build(var_list)`);
/// - `initialize_state(state)`: non-zero initial slots (Adagrad's accumulator);
/// - `set_learning_rate(value)`: Keras's `optimizer.learning_rate = value`;
/// - `options.gradient_accumulation_steps` (an int >= 1): Keras 3's gradient accumulation,
///   which the step applies (train/gradient_accumulation.hpp): `update` then sees the mean
///   gradient of that many batches, and `iteration` counts those updates;
/// - `update(w, g, state, iteration, slice)` (SliceOptimizer): the same update on one part
///   of the parameters, `w` and `g` that part alone, `state` the whole state; what
///   UpdateInBackward calls for each layer. Its result is the same bits as the whole update's
///   on that part.
///
/// ```cpp
/// struct SignSGD {
///   static constexpr std::string_view name = "sign_sgd";
///   std::size_t slots() const { return 0; }
///   std::vector<std::string> slot_names() const { return {}; }
///   double learning_rate(std::int64_t) const { return 1e-3; }
///   void update(std::span<float> w, std::span<float> g, std::span<float>, std::int64_t) const {
///     for (std::size_t j = 0; j < w.size(); ++j) w[j] -= 1e-3f * float((g[j] > 0) - (g[j] < 0));
///   }
/// };
/// static_assert(mo::Optimizer<SignSGD>);
/// ```
template <class O>
concept Optimizer = std::copy_constructible<O> &&
    requires(const O& o, std::span<float> w, std::span<float> g, std::int64_t t) {
  { O::name } -> std::convertible_to<std::string_view>;
  { o.slots() } -> std::convertible_to<std::size_t>;
  { o.slot_names() } -> std::convertible_to<std::vector<std::string>>;
  o.update(w, g, w, t);
  { o.learning_rate(t) } -> std::convertible_to<double>;
};

/// An optimizer that can update one part of the parameters at a time (one layer's, under
/// UpdateInBackward): `update(w, g, state, iteration, ParameterSlice)`. Every optimizer of the
/// library is one.
template <class O>
concept SliceOptimizer = Optimizer<O> &&
    requires(const O& o, std::span<float> w, std::int64_t t, ParameterSlice slice) {
  o.update(w, w, w, t, slice);
};

}  // namespace memopt
