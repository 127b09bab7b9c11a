// expect: save_onnx: this layer \(or its activation\) has no ONNX export
// A layer kind with no OnnxLayerExport specialization cannot be exported: the misuse names
// what to specialize. The twin exports a model of known layers. Needs memopt::onnx's include
// paths only (compile-only; tests/compile_fail/CMakeLists.txt adds it for onnx_*.cpp).
#include <span>

#include <memopt/io/onnx.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;

#ifdef MEMOPT_FAILTEST
// A user's layer: a Dense with its own type, so that no specialization matches it. Only the
// model's spec is built: a Model would also need a CPU kernel for it.
struct MyDense : mo::Dense<4> {};
using Layer = MyDense;
#else
using Layer = mo::Dense<4>;
#endif
using Spec = mo::ModelSpec<mo::Sequential<Layer>, mo::Input<3>, mo::float32>;

onnx::ModelProto exported(std::span<const float> weights) {
  return mo::make_onnx_model<Spec>(weights, {});
}
