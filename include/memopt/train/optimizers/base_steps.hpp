#pragma once
// What Keras's base optimizer does before every optimizer's own update: clip the gradients
// (clipnorm, global_clipnorm or clipvalue), then decay the weights (weight_decay, except the
// tensors named in exclude_from_weight_decay). keras/src/optimizers/base_optimizer.py:
// _backend_apply_gradients, _clip_gradients, _clip_by_norm, clip_by_global_norm,
// _apply_weight_decay, _use_weight_decay. (gradient_accumulation_steps is checked here and
// applied by the step: train/gradient_accumulation.hpp.)

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "memopt/core/error.hpp"
#include "memopt/train/gradient_accumulation.hpp"
#include "memopt/train/optimizer.hpp"

namespace memopt::detail {

class BaseSteps {
 public:
  /// Raises what Keras raises: more than one clipping option, or a negative one.
  template <class Options>
  static void validate(const Options& o, const char* who) {
    const int set = (o.clipnorm != 0) + (o.clipvalue != 0) + (o.global_clipnorm != 0);
    if (set > 1)
      throw error(std::string(who) +
                  ": only one of clipnorm, clipvalue and global_clipnorm can be set; found "
                  "clipnorm=" +
                  std::to_string(o.clipnorm) + ", clipvalue=" + std::to_string(o.clipvalue) +
                  ", global_clipnorm=" + std::to_string(o.global_clipnorm));
    if (o.clipnorm < 0 || o.clipvalue < 0 || o.global_clipnorm < 0 || o.weight_decay < 0)
      throw error(std::string(who) +
                  ": expected clipnorm, clipvalue, global_clipnorm and weight_decay >= 0");
    (void)GradientAccumulation::checked_steps(o.gradient_accumulation_steps, who);
  }

  /// Whether any step is on (else the update is the optimizer's rule alone).
  template <class Options>
  static bool active(const Options& o) {
    return o.clipnorm > 0 || o.clipvalue > 0 || o.global_clipnorm > 0 || o.weight_decay > 0;
  }

  /// Keras's build(var_list): each tensor's range, and whether weight decay applies to it:
  /// not when its name contains one of `exclude` (Keras's exclude_from_weight_decay(var_names=),
  /// a regular-expression search; plain names such as "bias" or "gamma" behave the same).
  void build(std::span<const ParameterRange> ranges, const std::vector<std::string>& exclude) {
    ranges_.assign(ranges.begin(), ranges.end());
    decay_.clear();
    for (const ParameterRange& r : ranges_) {
      bool excluded = false;
      for (const std::string& e : exclude)
        excluded = excluded || r.name.find(e) != std::string::npos;
      decay_.push_back(!excluded);
    }
  }

  /// Clips `g`, then decays `w` by `w * weight_decay * lr`. Before build (an optimizer used on
  /// its own), the whole buffer is one tensor. `slice` places `w` and `g` in the whole
  /// buffer when they are one part of it (a layer's, under UpdateInBackward): each tensor
  /// then lies wholly inside the part or outside it, and global_clipnorm, which needs every
  /// gradient, raises.
  template <class Options>
  void apply(const Options& o, double lr, std::span<float> w, std::span<float> g,
             ParameterSlice slice = {}) const {
    if (o.global_clipnorm > 0 && slice.total != 0 && g.size() != slice.total)
      throw error(
          "global_clipnorm scales every gradient by the norm of all of them, which an update "
          "of one layer's parameters (UpdateInBackward) does not see: use clipnorm, which "
          "clips each tensor alone");
    if (o.clipnorm > 0) {
      for_each_range(g.size(), slice.offset,
                     [&](std::size_t, std::size_t offset, std::size_t size) {
                       clip_by_norm(g.subspan(offset, size), o.clipnorm);
                     });
    } else if (o.global_clipnorm > 0) {
      const double norm = std::sqrt(squared_norm(g));
      // clip_norm * min(1 / norm, 1 / clip_norm): 1 for a zero norm.
      const auto scale =
          static_cast<float>(o.global_clipnorm * std::min(1.0 / norm, 1.0 / o.global_clipnorm));
      for (float& v : g) v *= scale;
    } else if (o.clipvalue > 0) {
      const auto c = static_cast<float>(o.clipvalue);
      for (float& v : g) v = std::clamp(v, -c, c);
    }
    if (o.weight_decay > 0) {
      const auto f = static_cast<float>(o.weight_decay * lr);
      for_each_range(w.size(), slice.offset,
                     [&](std::size_t k, std::size_t offset, std::size_t size) {
                       if (!ranges_.empty() && !decay_[k]) return;
                       for (float& v : w.subspan(offset, size)) v -= v * f;
                     });
    }
  }

  /// Whether weight decay applies to tensor `k` (for tests and summaries).
  bool decays(std::size_t k) const { return decay_.at(k); }

 private:
  // Calls f(k, offset, size) for each tensor k in the `size` floats that start `start` floats
  // into the whole buffer, offsets counted from `start`.
  template <class F>
  void for_each_range(std::size_t size, std::size_t start, F&& f) const {
    if (ranges_.empty()) {
      f(std::size_t{0}, std::size_t{0}, size);
      return;
    }
    for (std::size_t k = 0; k < ranges_.size(); ++k) {
      const ParameterRange& r = ranges_[k];
      if (r.offset + r.size <= start || r.offset >= start + size) continue;
      if (r.offset < start || r.offset + r.size > start + size)
        throw error("optimizer: tensor " + r.path +
                    " lies partly outside the parameters of "
                    "one update (floats " +
                    std::to_string(start) + " to " + std::to_string(start + size) + ")");
      f(k, r.offset - start, r.size);
    }
  }

  // g * clipnorm / max(||g||, clipnorm): a tensor's norm held at clipnorm.
  static void clip_by_norm(std::span<float> g, double clipnorm) {
    const double norm = std::sqrt(squared_norm(g));
    if (norm <= clipnorm) return;
    const auto scale = static_cast<float>(clipnorm / norm);
    for (float& v : g) v *= scale;
  }

  // In double, as 8 interleaved partial sums: a single running sum cannot be reordered, so it
  // does not vectorise (4.5x slower on 100k floats); the order is fixed, so it is reproducible.
  static double squared_norm(std::span<const float> g) {
    // Counted in blocks, not as `j + 8 <= size`: GCC 12 at -O3 reads that bound as one that
    // may wrap (-Waggressive-loop-optimizations) where this is inlined into an update.
    double partial[8] = {};
    const std::size_t blocks = g.size() / 8;
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t k = 0; k < 8; ++k) partial[k] += double(g[8 * b + k]) * double(g[8 * b + k]);
    double sum = 0;
    for (std::size_t j = 8 * blocks; j < g.size(); ++j) sum += double(g[j]) * double(g[j]);
    for (const double p : partial) sum += p;
    return sum;
  }

  std::vector<ParameterRange> ranges_;
  std::vector<bool> decay_;
};

}  // namespace memopt::detail
