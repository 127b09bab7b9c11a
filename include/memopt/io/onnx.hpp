#pragma once
// save_onnx: a model's inference graph as an ONNX file (opset 17, IR version 8), built with
// ONNX's own protobuf classes (Debian's libonnx-dev). Needs the target memopt::onnx.
//
// memopt computes images channels-last (NHWC, Keras's layout) while ONNX's Conv and pooling
// take NCHW. The graph keeps its input NHWC, as a Keras user feeds it, and transposes only
// where the layout must change: once before the first layer that needs NCHW, and back once
// before Flatten, whose order must be Keras's channels-last one. Layers that do not care
// (Rescaling, BatchNormalization, activations) work in whichever layout they find.
//
// Each layer kind is exported by its own specialization of `OnnxLayerExport`, chosen at
// compile time; a new layer adds one specialization, and a model with a layer that has none
// fails to compile naming it.

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "memopt/core/dtype.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/type_list.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/layers.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/checkpoint.hpp"

namespace memopt {

/// The ONNX operator set the exported graphs use, and the IR version of the files.
inline constexpr std::int64_t onnx_opset = 17;
inline constexpr std::int64_t onnx_ir_version = 8;

/// The element type of an exported graph: its input, output, weights and arithmetic.
enum class OnnxPrecision { float32, float16 };

/// How `save_onnx` writes a model.
///
/// ```cpp
/// mo::save_onnx(model, "model.onnx", {.precision = mo::OnnxPrecision::float16});
/// ```
struct OnnxOptions {
  /// float32 whatever the model's policy (a mixed_float16 model's float32 master weights),
  /// or float16 on request: half the file, for runtimes that compute in half precision.
  OnnxPrecision precision = OnnxPrecision::float32;
  /// The names of the graph's input and output.
  std::string input_name = "input";
  std::string output_name = "output";
};

/// Where a tensor's channels are: a vector (`[batch, n]`), or an image channels-last (as
/// memopt and Keras keep it) or channels-first (as ONNX's Conv and pooling take it).
enum class OnnxLayout { vector, nhwc, nchw };

/// The graph under construction, as the layer exports see it: the current value (the output
/// of the layers so far) with its layout, and helpers to add nodes and weights.
///
/// ```cpp
/// auto emit = [](mo::OnnxGraph& g, const mo::OnnxLayerContext& layer) {
///   const std::string x = g.nchw(layer.name);  // transposes only if the value is NHWC
///   g.set(g.add_node("Relu", layer.name, {x}).output(0), mo::OnnxLayout::nchw);
/// };
/// ```
class OnnxGraph {
 public:
  OnnxGraph(::onnx::GraphProto& graph, OnnxPrecision precision, std::string input,
            OnnxLayout layout)
      : graph_(graph), precision_(precision), value_(std::move(input)), layout_(layout) {}

  const std::string& value() const { return value_; }
  OnnxLayout layout() const { return layout_; }
  OnnxPrecision precision() const { return precision_; }
  /// The ONNX element type of the graph's floats.
  int element_type() const {
    return precision_ == OnnxPrecision::float16 ? ::onnx::TensorProto::FLOAT16
                                                : ::onnx::TensorProto::FLOAT;
  }
  /// Makes `value` the current value.
  void set(std::string value, OnnxLayout layout) {
    value_ = std::move(value);
    layout_ = layout;
  }

  /// The current value channels-first, adding a Transpose (named for `scope`) if it is
  /// channels-last.
  const std::string& nchw(std::string_view scope) {
    if (layout_ == OnnxLayout::nhwc) {
      auto& n = add_node("Transpose", scope, {value_});
      ints(n, "perm", {0, 3, 1, 2});
      set(n.output(0), OnnxLayout::nchw);
    }
    return value_;
  }
  /// The current value channels-last, adding a Transpose if it is channels-first.
  const std::string& nhwc(std::string_view scope) {
    if (layout_ == OnnxLayout::nchw) {
      auto& n = add_node("Transpose", scope, {value_});
      ints(n, "perm", {0, 2, 3, 1});
      set(n.output(0), OnnxLayout::nhwc);
    }
    return value_;
  }

  /// Adds an `op` node named "scope/op" (numbered if taken) reading `inputs`; its one output
  /// has the node's name. Attributes go on the returned node.
  ::onnx::NodeProto& add_node(std::string_view op, std::string_view scope,
                              std::initializer_list<std::string> inputs) {
    ::onnx::NodeProto& n = *graph_.add_node();
    const std::string name = unique(std::string(scope) + "/" + std::string(op));
    n.set_op_type(std::string(op));
    n.set_name(name);
    for (const std::string& in : inputs) n.add_input(in);
    n.add_output(name);
    return n;
  }
  /// Adds `op` on the current value and makes its output the current value, same layout.
  ::onnx::NodeProto& apply(std::string_view op, std::string_view scope) {
    ::onnx::NodeProto& n = add_node(op, scope, {value_});
    value_ = n.output(0);
    return n;
  }

  /// Adds a weight of shape `dims` holding `values` (row-major) in the graph's precision.
  std::string weight(std::string name, std::initializer_list<std::int64_t> dims,
                     std::span<const float> values) {
    std::size_t count = 1;
    for (std::int64_t d : dims) count *= static_cast<std::size_t>(d);
    if (count != values.size())
      throw error("save_onnx: weight " + name + " expected " + std::to_string(count) +
                  " values, found " + std::to_string(values.size()));
    name = unique(std::move(name));
    ::onnx::TensorProto& t = *graph_.add_initializer();
    t.set_name(name);
    t.set_data_type(element_type());
    for (std::int64_t d : dims) t.add_dims(d);
    // raw_data is little-endian, as every machine memopt builds for stores floats.
    static_assert(std::endian::native == std::endian::little,
                  "save_onnx: raw tensor data is little-endian");
    std::string& raw = *t.mutable_raw_data();
    if (precision_ == OnnxPrecision::float16) {
      raw.resize(values.size() * 2);
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint16_t bits = half(values[i]).bits;
        raw[2 * i] = static_cast<char>(bits & 0xff);
        raw[2 * i + 1] = static_cast<char>(bits >> 8);
      }
    } else {
      raw.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    }
    return name;
  }
  /// A scalar weight.
  std::string scalar(std::string name, float value) {
    return weight(std::move(name), {}, std::span<const float>(&value, 1));
  }

  /// Sets attribute `name` of `n`.
  static void ints(::onnx::NodeProto& n, std::string_view name,
                   std::initializer_list<std::int64_t> values) {
    auto& a = attribute(n, name, ::onnx::AttributeProto::INTS);
    for (std::int64_t v : values) a.add_ints(v);
  }
  static void integer(::onnx::NodeProto& n, std::string_view name, std::int64_t value) {
    attribute(n, name, ::onnx::AttributeProto::INT).set_i(value);
  }
  static void real(::onnx::NodeProto& n, std::string_view name, float value) {
    attribute(n, name, ::onnx::AttributeProto::FLOAT).set_f(value);
  }

 private:
  static ::onnx::AttributeProto& attribute(::onnx::NodeProto& n, std::string_view name,
                                           ::onnx::AttributeProto::AttributeType type) {
    ::onnx::AttributeProto& a = *n.add_attribute();
    a.set_name(std::string(name));
    a.set_type(type);
    return a;
  }
  // `name`, or `name_N` when taken: node outputs and weights share one namespace.
  std::string unique(std::string name) {
    const std::size_t seen = used_[name]++;
    return seen == 0 ? name : unique(name + "_" + std::to_string(seen));
  }

  ::onnx::GraphProto& graph_;
  OnnxPrecision precision_;
  std::string value_;
  OnnxLayout layout_;
  std::map<std::string, std::size_t, std::less<>> used_;
};

/// What a layer's export reads of its layer: its Keras name ("conv2d_1"), its input and
/// output shapes (one sample's, channels-last), and its weights by their Keras names.
struct OnnxLayerContext {
  std::string name;
  Shape in{};
  Shape out{};
  std::span<const WeightEntry> weights;  // the model's, all layers
  std::size_t layer = 0;
  std::span<const float> trainable;
  std::span<const float> state;
  // Add's second input (a residual's shortcut) and its layout; empty for other layers.
  std::string second{};
  OnnxLayout second_layout = OnnxLayout::vector;

  /// Weight `weight` of this layer ("kernel", "moving_mean"), as the model holds it.
  std::span<const float> weight(std::string_view weight) const {
    for (const WeightEntry& e : weights)
      if (e.layer == layer && e.decl.name == weight)
        return (e.decl.trainable ? trainable : state).subspan(e.offset, e.decl.size());
    throw error("save_onnx: layer " + name + " has no weight named " + std::string(weight));
  }
};

/// The ONNX nodes of activation `A`, applied to the graph's current value. Specialized for
/// every activation memopt has.
template <class A>
struct OnnxActivationExport;

/// The ONNX nodes of layer kind `L`: `static void emit(OnnxGraph&, const OnnxLayerContext&)`
/// reads the graph's current value and leaves its own output as the current value. A layer
/// kind of one's own (`MyScale`, which doubles its input) is exported by a specialization
/// at global scope:
///
/// ```cpp
/// // not compiled: check_snippets.py compiles a block in a namespace of its own, where
/// // a specialization of mo::OnnxLayerExport may not be declared
/// template <>
/// struct mo::OnnxLayerExport<MyScale> {
///   static void emit(mo::OnnxGraph& g, const mo::OnnxLayerContext& layer) {
///     const std::string s = g.scalar(layer.name + "/scale", 2.0f);
///     g.set(g.add_node("Mul", layer.name, {g.value(), s}).output(0), g.layout());
///   }
/// };
/// ```
template <class L>
struct OnnxLayerExport;

/// Whether `save_onnx` can export layer kind `L`.
template <class L>
concept OnnxExportable = requires(OnnxGraph& g, const OnnxLayerContext& c) {
  OnnxLayerExport<L>::emit(g, c);
  OnnxActivationExport<typename L::activation>::emit(g, std::string_view{});
};

// Activations ------------------------------------------------------------------------------

template <>
struct OnnxActivationExport<Linear> {
  static void emit(OnnxGraph&, std::string_view) {}
};
template <>
struct OnnxActivationExport<ReLU> {
  static void emit(OnnxGraph& g, std::string_view scope) { g.apply("Relu", scope); }
};
template <>
struct OnnxActivationExport<Sigmoid> {
  static void emit(OnnxGraph& g, std::string_view scope) { g.apply("Sigmoid", scope); }
};
template <>
struct OnnxActivationExport<Tanh> {
  static void emit(OnnxGraph& g, std::string_view scope) { g.apply("Tanh", scope); }
};
/// Softmax over the last axis (the only one a memopt Softmax layer has).
template <>
struct OnnxActivationExport<Softmax> {
  static void emit(OnnxGraph& g, std::string_view scope) {
    OnnxGraph::integer(g.apply("Softmax", scope), "axis", -1);
  }
};
/// GELU's tanh form from elementary ops (opset 17 has no Gelu operator; opset 20's would
/// shut out older runtimes): 0.5 z (1 + tanh(k0 (z + k1 z^3))).
template <>
struct OnnxActivationExport<GELU> {
  static void emit(OnnxGraph& g, std::string_view scope) {
    const std::string s(scope);
    const std::string z = g.value();
    const auto mul = [&](const std::string& a, const std::string& b) {
      return g.add_node("Mul", s, {a, b}).output(0);
    };
    const std::string z3 = mul(mul(z, z), z);
    const std::string inner =
        g.add_node("Add", s, {z, mul(z3, g.scalar(s + "/gelu_k1", GELU::k1))}).output(0);
    const std::string t =
        g.add_node("Tanh", s, {mul(inner, g.scalar(s + "/gelu_k0", GELU::k0))}).output(0);
    const std::string one_plus =
        g.add_node("Add", s, {t, g.scalar(s + "/gelu_one", 1.0f)}).output(0);
    g.set(mul(mul(z, one_plus), g.scalar(s + "/gelu_half", 0.5f)), g.layout());
  }
};
/// Recomputing in backward changes nothing in inference.
template <class A>
struct OnnxActivationExport<Recompute<A>> : OnnxActivationExport<A> {};

// Layers -----------------------------------------------------------------------------------

namespace detail {
inline std::int64_t onnx_dim(std::size_t d) {
  return static_cast<std::int64_t>(d);
}
}  // namespace detail

/// Dense as Gemm: Keras's kernel `[inputs, units]` is Gemm's B as it is.
template <std::size_t Units, class Act>
struct OnnxLayerExport<Dense<Units, Act>> {
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    const std::int64_t in = detail::onnx_dim(layer.in.size());
    const std::int64_t units = detail::onnx_dim(Units);
    const std::string w = g.weight(layer.name + "/kernel", {in, units}, layer.weight("kernel"));
    const std::string b = g.weight(layer.name + "/bias", {units}, layer.weight("bias"));
    g.set(g.add_node("Gemm", layer.name, {g.value(), w, b}).output(0), OnnxLayout::vector);
  }
};

namespace detail {
// ONNX's pads for a window: [top, left, bottom, right], as TensorFlow pads `same`.
inline std::array<std::int64_t, 4> onnx_pads(Shape in, Extent2 window, Extent2 strides,
                                             Padding padding) {
  const WindowAxis h =
      window_axis(onnx_dim(in.dims[0]), onnx_dim(window.h), onnx_dim(strides.h), padding);
  const WindowAxis w =
      window_axis(onnx_dim(in.dims[1]), onnx_dim(window.w), onnx_dim(strides.w), padding);
  return {h.before, w.before, h.after, w.after};
}
inline void onnx_window(::onnx::NodeProto& n, Shape in, Extent2 window, Extent2 strides,
                        Padding padding) {
  const auto p = onnx_pads(in, window, strides, padding);
  OnnxGraph::ints(n, "kernel_shape", {onnx_dim(window.h), onnx_dim(window.w)});
  OnnxGraph::ints(n, "strides", {onnx_dim(strides.h), onnx_dim(strides.w)});
  OnnxGraph::ints(n, "pads", {p[0], p[1], p[2], p[3]});
}
}  // namespace detail

/// Conv2D as Conv on NCHW, the kernel turned from Keras's HWIO to ONNX's OIHW.
template <std::size_t Filters, auto Kernel, class... Options>
struct OnnxLayerExport<Conv2D<Filters, Kernel, Options...>> {
  using L = Conv2D<Filters, Kernel, Options...>;
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    const std::size_t kh = L::kernel.h, kw = L::kernel.w, c = layer.in.channels();
    const std::span<const float> hwio = layer.weight("kernel");
    std::vector<float> oihw(hwio.size());
    for (std::size_t y = 0; y < kh; ++y)
      for (std::size_t x = 0; x < kw; ++x)
        for (std::size_t i = 0; i < c; ++i)
          for (std::size_t o = 0; o < Filters; ++o)
            oihw[((o * c + i) * kh + y) * kw + x] = hwio[((y * kw + x) * c + i) * Filters + o];
    const std::string x = g.nchw(layer.name);
    const std::string w = g.weight(layer.name + "/kernel",
                                   {detail::onnx_dim(Filters), detail::onnx_dim(c),
                                    detail::onnx_dim(kh), detail::onnx_dim(kw)},
                                   oihw);
    const std::string b =
        g.weight(layer.name + "/bias", {detail::onnx_dim(Filters)}, layer.weight("bias"));
    ::onnx::NodeProto& n = g.add_node("Conv", layer.name, {x, w, b});
    detail::onnx_window(n, layer.in, L::kernel, L::strides, L::padding);
    g.set(n.output(0), OnnxLayout::nchw);
  }
};

namespace detail {
/// The depthwise convolution of layer `L` (DepthwiseConv2D, or SeparableConv2D's first half)
/// as a Conv of one group per input channel: Keras's [kh, kw, C, m] kernel becomes ONNX's
/// [C x m, 1, kh, kw] (output channel c x m + j from input channel c); with the layer's bias
/// where `bias`.
template <class L>
void onnx_depthwise_conv(OnnxGraph& g, const OnnxLayerContext& layer, bool bias) {
  const std::size_t kh = L::kernel.h, kw = L::kernel.w, c = layer.in.channels();
  const std::size_t outs = c * L::depth_multiplier;
  const std::span<const float> hwcm = layer.weight("depthwise_kernel");
  std::vector<float> o1hw(hwcm.size());
  for (std::size_t y = 0; y < kh; ++y)
    for (std::size_t x = 0; x < kw; ++x)
      for (std::size_t o = 0; o < outs; ++o)
        o1hw[(o * kh + y) * kw + x] = hwcm[(y * kw + x) * outs + o];
  const std::string x = g.nchw(layer.name);
  const std::string w = g.weight(layer.name + "/depthwise_kernel",
                                 {onnx_dim(outs), 1, onnx_dim(kh), onnx_dim(kw)}, o1hw);
  ::onnx::NodeProto& n =
      bias ? g.add_node(
                 "Conv", layer.name,
                 {x, w, g.weight(layer.name + "/bias", {onnx_dim(outs)}, layer.weight("bias"))})
           : g.add_node("Conv", layer.name, {x, w});
  onnx_window(n, layer.in, L::kernel, L::strides, L::padding);
  OnnxGraph::integer(n, "group", static_cast<std::int64_t>(c));
  g.set(n.output(0), OnnxLayout::nchw);
}
}  // namespace detail

/// DepthwiseConv2D as one grouped Conv (detail::onnx_depthwise_conv).
template <auto Kernel, class... Options>
struct OnnxLayerExport<DepthwiseConv2D<Kernel, Options...>> {
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    detail::onnx_depthwise_conv<DepthwiseConv2D<Kernel, Options...>>(g, layer, true);
  }
};

/// SeparableConv2D as its two Convs: the grouped depthwise one without bias, then a 1x1 Conv
/// with the bias, Keras's [1, 1, C x m, Filters] pointwise kernel as ONNX's [Filters, C x m,
/// 1, 1].
template <std::size_t Filters, auto Kernel, class... Options>
struct OnnxLayerExport<SeparableConv2D<Filters, Kernel, Options...>> {
  using L = SeparableConv2D<Filters, Kernel, Options...>;
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    detail::onnx_depthwise_conv<L>(g, layer, false);
    const std::size_t mid = layer.in.channels() * L::depth_multiplier;
    const std::span<const float> io = layer.weight("pointwise_kernel");
    std::vector<float> oi(io.size());
    for (std::size_t i = 0; i < mid; ++i)
      for (std::size_t o = 0; o < Filters; ++o) oi[o * mid + i] = io[i * Filters + o];
    const std::string w = g.weight(layer.name + "/pointwise_kernel",
                                   {detail::onnx_dim(Filters), detail::onnx_dim(mid), 1, 1}, oi);
    const std::string b =
        g.weight(layer.name + "/bias", {detail::onnx_dim(Filters)}, layer.weight("bias"));
    ::onnx::NodeProto& n = g.add_node("Conv", layer.name, {g.value(), w, b});
    g.set(n.output(0), OnnxLayout::nchw);
  }
};

/// MaxPooling2D as MaxPool on NCHW (`same` pads never win a maximum, as in TensorFlow).
template <auto Pool, class... Options>
struct OnnxLayerExport<MaxPooling2D<Pool, Options...>> {
  using L = MaxPooling2D<Pool, Options...>;
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    ::onnx::NodeProto& n = g.add_node("MaxPool", layer.name, {g.nchw(layer.name)});
    detail::onnx_window(n, layer.in, L::pool, L::strides, L::padding);
    g.set(n.output(0), OnnxLayout::nchw);
  }
};

/// AveragePooling2D as AveragePool on NCHW; border windows average the pixels they cover
/// (count_include_pad 0), as TensorFlow's `same` does.
template <auto Pool, class... Options>
struct OnnxLayerExport<AveragePooling2D<Pool, Options...>> {
  using L = AveragePooling2D<Pool, Options...>;
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    ::onnx::NodeProto& n = g.add_node("AveragePool", layer.name, {g.nchw(layer.name)});
    detail::onnx_window(n, layer.in, L::pool, L::strides, L::padding);
    OnnxGraph::integer(n, "count_include_pad", 0);
    g.set(n.output(0), OnnxLayout::nchw);
  }
};

/// GlobalAveragePooling2D as ReduceMean over the spatial axes of whichever layout the image
/// is in: no transpose either way.
template <>
struct OnnxLayerExport<GlobalAveragePooling2D> {
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    const bool first = g.layout() == OnnxLayout::nchw;
    ::onnx::NodeProto& n = g.apply("ReduceMean", layer.name);
    OnnxGraph::ints(n, "axes", {first ? 2 : 1, first ? 3 : 2});
    OnnxGraph::integer(n, "keepdims", 0);
    g.set(n.output(0), OnnxLayout::vector);
  }
};

/// Flatten in Keras's channels-last order: back to NHWC if the image is NCHW, then Flatten.
template <>
struct OnnxLayerExport<Flatten> {
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    if (g.layout() == OnnxLayout::vector) return;
    g.nhwc(layer.name);
    OnnxGraph::integer(g.apply("Flatten", layer.name), "axis", 1);
    g.set(g.value(), OnnxLayout::vector);
  }
};

/// BatchNormalization in inference form: the moving statistics. ONNX normalizes axis 1,
/// so an image goes NCHW; a vector `[batch, channels]` is already right.
template <class Momentum, class Epsilon>
struct OnnxLayerExport<BatchNormalizationWith<Momentum, Epsilon>> {
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    const std::int64_t c = detail::onnx_dim(layer.in.channels());
    const std::string x = layer.in.is_image() ? g.nchw(layer.name) : g.value();
    const std::string gamma = g.weight(layer.name + "/gamma", {c}, layer.weight("gamma"));
    const std::string beta = g.weight(layer.name + "/beta", {c}, layer.weight("beta"));
    const std::string mean =
        g.weight(layer.name + "/moving_mean", {c}, layer.weight("moving_mean"));
    const std::string var =
        g.weight(layer.name + "/moving_variance", {c}, layer.weight("moving_variance"));
    ::onnx::NodeProto& n =
        g.add_node("BatchNormalization", layer.name, {x, gamma, beta, mean, var});
    OnnxGraph::real(n, "epsilon",
                    static_cast<float>(BatchNormalizationWith<Momentum, Epsilon>::epsilon));
    g.set(n.output(0), g.layout());
  }
};

/// Dropout is the identity in inference: no node.
template <class Rate>
struct OnnxLayerExport<Dropout<Rate>> {
  static void emit(OnnxGraph&, const OnnxLayerContext&) {}
};

/// The augmentation layers are the identity in inference: no node.
template <class Mode>
struct OnnxLayerExport<RandomFlip<Mode>> {
  static void emit(OnnxGraph&, const OnnxLayerContext&) {}
};
template <class Factor, class... Options>
struct OnnxLayerExport<RandomContrast<Factor, Options...>> {
  static void emit(OnnxGraph&, const OnnxLayerContext&) {}
};
template <class H, class W, class... Os>
struct OnnxLayerExport<RandomTranslation<H, W, Os...>> {
  static void emit(OnnxGraph&, const OnnxLayerContext&) {}
};
template <class H, class... Rest>
struct OnnxLayerExport<RandomZoom<H, Rest...>> {
  static void emit(OnnxGraph&, const OnnxLayerContext&) {}
};
template <class F, class... Os>
struct OnnxLayerExport<RandomRotation<F, Os...>> {
  static void emit(OnnxGraph&, const OnnxLayerContext&) {}
};

/// RandomCrop changes the shape: its inference, Keras's centred crop, as a Slice of the
/// spatial axes in whichever layout the image is (none where the window is the whole image),
/// then, where the window is larger than the crop, a Resize on NCHW to the crop's size: linear
/// with half-pixel centres, as Keras's resize (its sizes built from the batch and channels of
/// the Slice's output, since opset 17's Resize takes every axis's size).
template <std::size_t Height, std::size_t Width>
struct OnnxLayerExport<RandomCrop<Height, Width>> {
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    const auto w = RandomCrop<Height, Width>::centred_window(layer.in.height(), layer.in.width());
    const auto constant = [&](std::string_view what, std::initializer_list<std::int64_t> v) {
      ::onnx::NodeProto& c = g.add_node("Constant", layer.name + "/" + std::string(what), {});
      OnnxGraph::ints(c, "value_ints", v);
      return c.output(0);
    };
    using detail::onnx_dim;
    if (w.height != layer.in.height() || w.width != layer.in.width()) {
      const bool first = g.layout() == OnnxLayout::nchw;
      const std::string starts = constant("starts", {onnx_dim(w.top), onnx_dim(w.left)});
      const std::string ends =
          constant("ends", {onnx_dim(w.top + w.height), onnx_dim(w.left + w.width)});
      const std::string axes = constant("axes", {first ? 2 : 1, first ? 3 : 2});
      g.set(g.add_node("Slice", layer.name, {g.value(), starts, ends, axes}).output(0), g.layout());
    }
    if (w.height == Height && w.width == Width) return;
    const std::string x = g.nchw(layer.name);
    ::onnx::NodeProto& batch_channels = g.add_node("Shape", layer.name, {x});
    OnnxGraph::integer(batch_channels, "start", 0);
    OnnxGraph::integer(batch_channels, "end", 2);
    ::onnx::NodeProto& sizes = g.add_node(
        "Concat", layer.name,
        {batch_channels.output(0), constant("size", {onnx_dim(Height), onnx_dim(Width)})});
    OnnxGraph::integer(sizes, "axis", 0);
    ::onnx::NodeProto& resize = g.add_node("Resize", layer.name, {x, "", "", sizes.output(0)});
    const auto text = [&](std::string_view name, std::string_view value) {
      ::onnx::AttributeProto& a = *resize.add_attribute();
      a.set_name(std::string(name));
      a.set_type(::onnx::AttributeProto::STRING);
      a.set_s(std::string(value));
    };
    text("mode", "linear");
    text("coordinate_transformation_mode", "half_pixel");
    g.set(resize.output(0), OnnxLayout::nchw);
  }
};

/// Activation adds no node of its own: its activation is exported after it as every layer's
/// is (Relu, Sigmoid, Tanh, Softmax over the last axis, GELU's tanh form).
template <class Act>
struct OnnxLayerExport<Activation<Act>> {
  static void emit(OnnxGraph&, const OnnxLayerContext&) {}
};

/// A residual's Add, in the layout of its first input (the shortcut's is transposed to it).
template <>
struct OnnxLayerExport<Add> {
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    std::string shortcut = layer.second;
    if (layer.second_layout != g.layout()) {
      auto& t = g.add_node("Transpose", layer.name, {shortcut});
      OnnxGraph::ints(t, "perm",
                      g.layout() == OnnxLayout::nchw
                          ? std::initializer_list<std::int64_t>{0, 3, 1, 2}
                          : std::initializer_list<std::int64_t>{0, 2, 3, 1});
      shortcut = t.output(0);
    }
    auto& n = g.add_node("Add", layer.name, {g.value(), shortcut});
    g.set(n.output(0), g.layout());
  }
};

/// Rescaling as Mul then Add, in whichever layout the value is (either left out when it is
/// the identity).
template <class Scale, class Offset>
struct OnnxLayerExport<Rescaling<Scale, Offset>> {
  using L = Rescaling<Scale, Offset>;
  static void emit(OnnxGraph& g, const OnnxLayerContext& layer) {
    if constexpr (L::scale != 1.0) {
      const std::string s = g.scalar(layer.name + "/scale", static_cast<float>(L::scale));
      g.set(g.add_node("Mul", layer.name, {g.value(), s}).output(0), g.layout());
    }
    if constexpr (L::offset != 0.0) {
      const std::string o = g.scalar(layer.name + "/offset", static_cast<float>(L::offset));
      g.set(g.add_node("Add", layer.name, {g.value(), o}).output(0), g.layout());
    }
  }
};

namespace detail {

inline void onnx_value_info(::onnx::ValueInfoProto& v, const std::string& name, int type,
                            Shape shape) {
  v.set_name(name);
  ::onnx::TypeProto_Tensor& t = *v.mutable_type()->mutable_tensor_type();
  t.set_elem_type(type);
  ::onnx::TensorShapeProto& s = *t.mutable_shape();
  s.add_dim()->set_dim_param("batch");
  for (std::size_t i = 0; i < shape.rank; ++i) s.add_dim()->set_dim_value(onnx_dim(shape.dims[i]));
}

inline void write_onnx(const ::onnx::ModelProto& proto, const std::filesystem::path& path) {
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw error("save_onnx " + path.string() +
                ": expected a model protobuf can serialize (under 2 GiB), found one it cannot");
  io::detail::AtomicFile file(path);
  file.write(std::as_bytes(std::span<const char>(bytes)));
  file.commit();
}

template <class L>
constexpr bool onnx_check_layer() {
  static_assert(OnnxExportable<L>,
                "save_onnx: this layer (or its activation) has no ONNX export; specialize "
                "memopt::OnnxLayerExport<Layer> (or OnnxActivationExport<Activation>) with a "
                "static emit function (see memopt/io/onnx.hpp)");
  return true;
}

}  // namespace detail

/// The ONNX model of a model type `Spec` with these weights (`trainable` and `state` laid out
/// as `Model::get_parameters()` and `get_state_weights()` give them).
template <class Spec>
::onnx::ModelProto make_onnx_model(std::span<const float> trainable, std::span<const float> state,
                                   const OnnxOptions& options = {}) {
  if (trainable.size() != Spec::parameter_count || state.size() != Spec::state_count)
    throw error("save_onnx: expected " + std::to_string(Spec::parameter_count) +
                " parameters and " + std::to_string(Spec::state_count) + " state values, found " +
                std::to_string(trainable.size()) + " and " + std::to_string(state.size()));
  using layers = typename Spec::layers;
  ::onnx::ModelProto model;
  model.set_ir_version(onnx_ir_version);
  model.set_producer_name("memopt");
  model.set_model_version(1);
  ::onnx::OperatorSetIdProto& opset = *model.add_opset_import();
  opset.set_domain("");
  opset.set_version(onnx_opset);
  ::onnx::StringStringEntryProto& policy = *model.add_metadata_props();
  policy.set_key("memopt.policy");
  policy.set_value(std::string(Spec::policy::name));

  ::onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name("sequential");
  constexpr Shape in = Spec::shapes[0];
  OnnxGraph g(graph, options.precision, options.input_name,
              in.is_image() ? OnnxLayout::nhwc : OnnxLayout::vector);
  detail::onnx_value_info(*graph.add_input(), options.input_name, g.element_type(), in);

  const SpecTables tables = Spec::tables();
  // The value and layout of each of Spec::shapes (the input, then each layer's output), for
  // the layers of a residual block that read an earlier one.
  std::vector<std::pair<std::string, OnnxLayout>> outputs(Spec::layer_count + 1);
  outputs[0] = {g.value(), g.layout()};
  static_for<Spec::layer_count>([&](auto i) {
    using L = type_list_at<i, layers>;
    static_assert(detail::onnx_check_layer<L>());
    constexpr LayerInputs reads = Spec::wiring[i];
    g.set(outputs[reads.first].first, outputs[reads.first].second);
    OnnxLayerContext layer{tables.layer_name(i),
                           Spec::shapes[reads.first],
                           Spec::shapes[i + 1],
                           Spec::weights,
                           i,
                           trainable,
                           state};
    if constexpr (reads.second != LayerInputs::no_input) {
      layer.second = outputs[reads.second].first;
      layer.second_layout = outputs[reads.second].second;
    }
    if constexpr (OnnxExportable<L>) {  // else the static_assert above is the one error
      OnnxLayerExport<L>::emit(g, layer);
      OnnxActivationExport<typename L::activation>::emit(g, layer.name);
    }
    outputs[i + 1] = {g.value(), g.layout()};
  });

  // The last node writes the graph's output; a graph of identities gets an Identity.
  const bool produced = graph.node_size() > 0 &&
                        graph.node(graph.node_size() - 1).output(0) == g.value() &&
                        g.value() != options.input_name;
  if (produced)
    graph.mutable_node(graph.node_size() - 1)->set_output(0, options.output_name);
  else
    g.add_node("Identity", "output", {g.value()}).set_output(0, options.output_name);
  detail::onnx_value_info(*graph.add_output(), options.output_name, g.element_type(),
                          Spec::shapes[Spec::layer_count]);
  return model;
}

/// The ONNX model of `model`'s inference graph (see `save_onnx`), to inspect or amend before
/// writing it.
///
/// ```cpp
/// onnx::ModelProto proto = mo::make_onnx_model(model);
/// ```
template <class M>
requires requires(const M& m) {
  typename M::spec;
  m.get_parameters();
  m.get_state_weights();
}
::onnx::ModelProto make_onnx_model(const M& model, const OnnxOptions& options = {}) {
  const std::vector<float> trainable = model.get_parameters();
  const std::vector<float> state = model.get_state_weights();
  return make_onnx_model<typename M::spec>(trainable, state, options);
}

/// Writes `model`'s inference graph to `path` as ONNX (opset 17, IR version 8): Dense as
/// Gemm, Conv2D and pooling on NCHW between one Transpose at each end of the image part,
/// BatchNormalization with its moving statistics, Dropout left out, Rescaling as Mul/Add,
/// activations as their ONNX operators. The input is `[batch, ...Input's dims]` channels-last,
/// as memopt and Keras feed it; the output is what `predict` returns. The file is written
/// under a temporary name and renamed, so `path` is never left half-written.
///
/// ```cpp
/// mo::save_onnx(model, "model.onnx");  // python: onnxruntime.InferenceSession("model.onnx")
/// mo::save_onnx(model, "model16.onnx", {.precision = mo::OnnxPrecision::float16});
/// ```
template <class M>
requires requires(const M& m) {
  typename M::spec;
  m.get_parameters();
  m.get_state_weights();
}
void save_onnx(const M& model, const std::filesystem::path& path, const OnnxOptions& options = {}) {
  detail::write_onnx(make_onnx_model(model, options), path);
}

/// What `callbacks::ModelCheckpoint` needs to write model type `M`'s ONNX graph at each save
/// (its `onnx_export` option): the model's weights as the callback sees them, exported as
/// `save_onnx` does. A separate object so that the callback itself needs no ONNX library:
/// only a program that includes this header and links memopt::onnx pays for it. A model of
/// another type than `M` raises memopt::error naming the weights that differ.
///
/// ```cpp
/// mo::callbacks::ModelCheckpoint ckpt{{.filepath = "ckpt-{epoch:02d}.safetensors",
///                                      .onnx_filepath = "model-{epoch:02d}.onnx",
///                                      .onnx_export = mo::onnx_export<Model>()}};
/// ```
template <class M>
requires requires {
  typename M::spec;
}
std::function<void(const TrainingContext&, const std::filesystem::path&)> onnx_export(
    OnnxOptions options = {}) {
  return [options = std::move(options)](const TrainingContext& model,
                                        const std::filesystem::path& path) {
    using Spec = typename M::spec;
    // The context hides the model's type: its named tensors say whether it is `M` (same
    // names and sizes, in order) and carry the moving statistics beside the trainable weights.
    const std::vector<NamedWeights> named = model.named_weights();
    std::vector<checkpoint::ParameterSlice> slices = checkpoint::parameter_slices<Spec>();
    const std::vector<checkpoint::ParameterSlice> state_slices = checkpoint::state_slices<Spec>();
    slices.insert(slices.end(), state_slices.begin(), state_slices.end());
    bool same = named.size() == slices.size();
    for (std::size_t i = 0; same && i < slices.size(); ++i)
      same = named[i].name == slices[i].name && named[i].values.size() == slices[i].size;
    if (!same) {
      const auto list = [](const auto& items, auto size) {
        std::string s;
        for (const auto& t : items)
          s += (s.empty() ? "" : ", ") + t.name + " (" + std::to_string(size(t)) + ")";
        return s.empty() ? std::string("none") : s;
      };
      throw error("onnx_export " + path.string() + ": expected a model with the weights " +
                  list(slices, [](const auto& t) { return t.size; }) + "; found " +
                  list(named, [](const auto& t) { return t.values.size(); }));
    }
    std::vector<float> trainable(Spec::parameter_count), state(Spec::state_count);
    for (std::size_t i = 0; i < named.size(); ++i) {
      std::vector<float>& to = i < slices.size() - state_slices.size() ? trainable : state;
      std::copy(named[i].values.begin(), named[i].values.end(),
                to.begin() + static_cast<std::ptrdiff_t>(slices[i].offset));
    }
    detail::write_onnx(make_onnx_model<Spec>(trainable, state, options), path);
  };
}

}  // namespace memopt
