#pragma once
// data::detail::NonPropagatingCache: an optional that empties itself when copied or moved.

#include <optional>
#include <utility>

namespace memopt::data::detail {

/// Holds a value cached by a view (such as the source iterator of an input view). A copy or a
/// move of the view must not carry it along: the cached iterator points into the original
/// view's base, so copies start empty, as `std::ranges`' own caching views do.
///
/// ```cpp
/// std::vector<int> base{1, 2, 3};
/// mo::data::detail::NonPropagatingCache<std::vector<int>::iterator> current;
/// current.emplace(base.begin());
/// auto copy = current;  // empty: copy.has_value() is false
/// ```
template <class T>
class NonPropagatingCache {
 public:
  NonPropagatingCache() = default;
  constexpr NonPropagatingCache(const NonPropagatingCache&) noexcept {}
  constexpr NonPropagatingCache(NonPropagatingCache&& other) noexcept { other.value_.reset(); }
  constexpr NonPropagatingCache& operator=(const NonPropagatingCache& other) noexcept {
    if (this != &other) value_.reset();
    return *this;
  }
  constexpr NonPropagatingCache& operator=(NonPropagatingCache&& other) noexcept {
    value_.reset();
    other.value_.reset();
    return *this;
  }
  ~NonPropagatingCache() = default;

  template <class... Args>
  constexpr T& emplace(Args&&... args) {
    return value_.emplace(std::forward<Args>(args)...);
  }
  constexpr void reset() noexcept { value_.reset(); }
  constexpr bool has_value() const noexcept { return value_.has_value(); }
  constexpr T& operator*() noexcept { return *value_; }
  constexpr const T& operator*() const noexcept { return *value_; }

 private:
  std::optional<T> value_;
};

}  // namespace memopt::data::detail
