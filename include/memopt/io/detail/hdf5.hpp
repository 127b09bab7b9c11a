#pragma once
// The few pieces of the HDF5 C API that io/keras_h5.hpp uses, made safe for C++: handles that
// close themselves, the library's error printing turned off while memopt reads (memopt raises
// memopt::error instead), and the library's own reason for a failure.

#include <hdf5.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace memopt::io::detail::h5 {

/// An HDF5 identifier with its close function, closed once when the handle goes away.
///
/// ```cpp
/// using mo::io::detail::h5::Handle, mo::io::detail::h5::last_error;
/// Handle file{H5Fopen("model.weights.h5", H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
/// Handle g{H5Gopen2(file.get(), "layers", H5P_DEFAULT), H5Gclose};
/// if (!g) throw mo::error("cannot open group layers (" + last_error() + ")");
/// ```
class Handle {
 public:
  using Close = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Close close) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, invalid)), close_(o.close_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, invalid);
      close_ = o.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

 private:
  static constexpr hid_t invalid = -1;
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = invalid;
  }
  hid_t id_ = invalid;
  Close close_ = nullptr;
};

/// Turns HDF5's printing of its error stack to stderr off for its lifetime: memopt reports
/// failures as memopt::error, with last_error()'s reason.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

/// The innermost description on HDF5's error stack ("file signature not found"), or "" when
/// the stack is empty.
inline std::string last_error() {
  std::string reason;
  const auto innermost = [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
    // No exception may cross the C library: a failed copy only loses the reason.
    try {
      if (n == 0 && e && e->desc) *static_cast<std::string*>(out) = e->desc;
    } catch (...) {
    }
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &reason);
  return reason;
}

/// Whether `loc` has a link (group or dataset) called `name` (one path component).
inline bool has_link(hid_t loc, const std::string& name) {
  return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

/// The names of the links in group `group`, in HDF5's name order; empty when it is not a
/// readable group.
inline std::vector<std::string> link_names(hid_t group) {
  H5G_info_t info{};
  if (H5Gget_info(group, &info) < 0) return {};
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size =
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (size < 0) continue;
    std::string name(static_cast<std::size_t>(size) + 1, '\0');
    H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(size));
    names.push_back(std::move(name));
  }
  return names;
}

/// What attribute reading found: its strings, or why there are none.
struct Strings {
  std::vector<std::string> values;
  std::string problem;  // empty when the attribute was read
};

/// The strings of attribute `name` of `object`, variable-length (h5py's str) or fixed-length
/// (numpy's bytes, as Keras 2 writes them). An empty array of any type counts as no strings:
/// Keras writes a layer without weights as an empty float64 array.
inline Strings string_attribute(hid_t object, const std::string& name) {
  Handle attr{H5Aopen(object, name.c_str(), H5P_DEFAULT), H5Aclose};
  if (!attr) return {{}, "cannot open it (" + last_error() + ")"};
  Handle type{H5Aget_type(attr.get()), H5Tclose};
  Handle space{H5Aget_space(attr.get()), H5Sclose};
  if (!type || !space) return {{}, "cannot read its type (" + last_error() + ")"};
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) return {{}, "cannot read its size (" + last_error() + ")"};
  if (n == 0) return {};
  if (H5Tget_class(type.get()) != H5T_STRING) return {{}, "it does not hold strings"};
  const auto count = static_cast<std::size_t>(n);
  Strings out;
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle memory{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(memory.get(), H5T_VARIABLE);
    H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
    std::vector<char*> pointers(count, nullptr);
    if (H5Aread(attr.get(), memory.get(), pointers.data()) < 0)
      return {{}, "cannot read it (" + last_error() + ")"};
    // HDF5 allocated each string: give them back however the copies below end.
    struct Reclaim {
      hid_t type, space;
      void* buffer;
      ~Reclaim() {
#if H5_VERSION_GE(1, 12, 0)
        H5Treclaim(type, space, H5P_DEFAULT, buffer);
#else
        H5Dvlen_reclaim(type, space, H5P_DEFAULT, buffer);
#endif
      }
    } reclaim{memory.get(), space.get(), pointers.data()};
    for (const char* p : pointers) out.values.emplace_back(p ? p : "");
    return out;
  }
  const std::size_t width = H5Tget_size(type.get());
  if (width == 0) return {{}, "its strings have no size"};
  std::vector<char> bytes(count * width);
  if (H5Aread(attr.get(), type.get(), bytes.data()) < 0)
    return {{}, "cannot read it (" + last_error() + ")"};
  const bool space_padded = H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD;
  for (std::size_t i = 0; i < count; ++i) {
    std::string s(bytes.data() + i * width, width);
    s.resize(std::min(s.size(), s.find('\0')));
    if (space_padded) s.resize(s.find_last_not_of(' ') + 1);
    out.values.push_back(std::move(s));
  }
  return out;
}

/// Keras splits an attribute of more than 64 KiB into `name0`, `name1`, ...: the strings of
/// `name`, or of its parts in order. `found` is false when neither exists.
inline Strings chunked_string_attribute(hid_t object, const std::string& name, bool& found) {
  found = H5Aexists(object, name.c_str()) > 0;
  if (found) return string_attribute(object, name);
  Strings all;
  for (int k = 0; H5Aexists(object, (name + std::to_string(k)).c_str()) > 0; ++k) {
    found = true;
    Strings part = string_attribute(object, name + std::to_string(k));
    if (!part.problem.empty()) return part;
    for (std::string& s : part.values) all.values.push_back(std::move(s));
  }
  return all;
}

}  // namespace memopt::io::detail::h5
