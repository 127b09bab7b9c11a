// RandomCrop's ONNX export: its inference, Keras's centred crop, as a Slice of the spatial
// axes in the layout the image is in, and a Resize (linear, half-pixel) where the centred
// window is larger than the crop; read back from the ModelProto. Values against ONNX Runtime:
// the model proposed for tests/python/onnx_export.cpp in the RandomCrop report.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <memopt/backend/cpu.hpp>
#include <memopt/io/onnx.hpp>
#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

std::vector<std::string> ops_of(const onnx::GraphProto& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.node())
    if (n.op_type() != "Constant") ops.push_back(n.op_type());
  return ops;
}

const onnx::NodeProto& producer(const onnx::GraphProto& g, const std::string& output) {
  for (const auto& n : g.node())
    if (n.output(0) == output) return n;
  FAIL("no node writes " << output);
  throw;
}
const onnx::NodeProto& first(const onnx::GraphProto& g, const std::string& op) {
  for (const auto& n : g.node())
    if (n.op_type() == op) return n;
  FAIL("no node " << op);
  throw;
}
// The int64 values of the Constant that writes `output`.
std::vector<std::int64_t> constant_ints(const onnx::GraphProto& g, const std::string& output) {
  const onnx::NodeProto& c = producer(g, output);
  REQUIRE(c.op_type() == "Constant");
  REQUIRE(c.attribute_size() == 1);
  return {c.attribute(0).ints().begin(), c.attribute(0).ints().end()};
}
std::string text(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.s();
  return "";
}

}  // namespace

TEST_CASE("save_onnx: RandomCrop first, no resize: a Slice of NHWC's axes 1 and 2") {
  // 8 x 16 to 8 x 8: Keras's centred window is columns 4 to 11.
  using M = mo::Model<mo::Sequential<mo::RandomCrop<8, 8>, mo::Conv2D<4, 3>, mo::Flatten,
                                     mo::Dense<3, mo::Softmax>>,
                      mo::Input<8, 16, 2>>;
  const onnx::GraphProto g = mo::make_onnx_model(M{7}).graph();
  CHECK(ops_of(g) == std::vector<std::string>{"Slice", "Transpose", "Conv", "Transpose", "Flatten",
                                              "Gemm", "Softmax"});
  const onnx::NodeProto& slice = first(g, "Slice");
  CHECK(slice.input(0) == "input");
  CHECK(constant_ints(g, slice.input(1)) == std::vector<std::int64_t>{0, 4});
  CHECK(constant_ints(g, slice.input(2)) == std::vector<std::int64_t>{8, 12});
  CHECK(constant_ints(g, slice.input(3)) == std::vector<std::int64_t>{1, 2});
}

TEST_CASE("save_onnx: RandomCrop of a square to a smaller square: no Slice, a Resize on NCHW") {
  using M = mo::Model<mo::Sequential<mo::RandomCrop<8, 8>, mo::Conv2D<4, 3>, mo::Flatten,
                                     mo::Dense<3, mo::Softmax>>,
                      mo::Input<10, 10, 1>>;
  const onnx::GraphProto g = mo::make_onnx_model(M{7}).graph();
  CHECK(ops_of(g) == std::vector<std::string>{"Transpose", "Shape", "Concat", "Resize", "Conv",
                                              "Transpose", "Flatten", "Gemm", "Softmax"});
  const onnx::NodeProto& resize = first(g, "Resize");
  CHECK(text(resize, "mode") == "linear");
  CHECK(text(resize, "coordinate_transformation_mode") == "half_pixel");
  CHECK(resize.input(1).empty());
  CHECK(resize.input(2).empty());
  const onnx::NodeProto& sizes = producer(g, resize.input(3));
  CHECK(sizes.op_type() == "Concat");
  CHECK(producer(g, sizes.input(0)).op_type() == "Shape");
  CHECK(constant_ints(g, sizes.input(1)) == std::vector<std::int64_t>{8, 8});
  CHECK(first(g, "Conv").input(0) == resize.output(0));  // already NCHW: no second Transpose
}

TEST_CASE("save_onnx: RandomCrop after a Conv2D slices NCHW's axes 2 and 3, then resizes") {
  // 9 x 9 to 3 x 2: the window is 9 x 6 at column 1, resized to 3 x 2.
  using M = mo::Model<mo::Sequential<mo::Conv2D<2, 1>, mo::RandomCrop<3, 2>, mo::Flatten,
                                     mo::Dense<3, mo::Softmax>>,
                      mo::Input<9, 9, 2>>;
  const onnx::GraphProto g = mo::make_onnx_model(M{7}).graph();
  CHECK(ops_of(g) == std::vector<std::string>{"Transpose", "Conv", "Slice", "Shape", "Concat",
                                              "Resize", "Transpose", "Flatten", "Gemm", "Softmax"});
  const onnx::NodeProto& slice = first(g, "Slice");
  CHECK(constant_ints(g, slice.input(1)) == std::vector<std::int64_t>{0, 1});
  CHECK(constant_ints(g, slice.input(2)) == std::vector<std::int64_t>{9, 7});
  CHECK(constant_ints(g, slice.input(3)) == std::vector<std::int64_t>{2, 3});
}
