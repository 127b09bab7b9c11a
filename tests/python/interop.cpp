// The C++ half of the safetensors interoperability test (test_interop.py drives it).
//
//   memopt_safetensors_interop write DIR   writes memopt_*.safetensors and memopt_expected.txt
//   memopt_safetensors_interop read DIR    loads python_*.safetensors, checks them against
//                                          python_expected.txt; exit status 0 when all match
//
// Expected values travel as text with 9 significant digits, which round-trips every float.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <memopt/memopt.hpp>

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using Net = mo::Sequential<mo::Dense<5, mo::ReLU>, mo::Dense<3, mo::Softmax>>;
using Model = mo::Model<Net, mo::Input<4>>;

void put(std::ofstream& out, const std::string& name, const std::vector<float>& values) {
  out << name;
  char buf[32];
  for (float v : values) {
    std::snprintf(buf, sizeof buf, " %.9g", double(v));
    out << buf;
  }
  out << '\n';
}

std::map<std::string, std::vector<double>> read_expected(const fs::path& p) {
  std::map<std::string, std::vector<double>> m;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string name;
    s >> name;
    double v = 0;
    while (s >> v) m[name].push_back(v);
  }
  return m;
}

int write(const fs::path& dir) {
  Model model{11};
  model.compile(mo::Adam{{.learning_rate = 0.05}}, mo::SparseCategoricalCrossentropy{});
  std::vector<float> x(64 * 4);
  std::vector<std::int32_t> y(64);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * float(i));
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = std::int32_t(i % 3);
  const auto data = mo::data::from(std::move(x), std::move(y), 4);
  model.fit(data | mo::data::batch(16), {.epochs = 2, .verbose = 0});
  model.save_weights(dir / "memopt_weights.safetensors");
  model.save(dir / "memopt_full.safetensors");

  std::ofstream out(dir / "memopt_expected.txt");
  const auto w = model.get_weights();
  for (const auto& s : mo::checkpoint::parameter_slices<Model::spec>())
    put(out, s.name,
        std::vector<float>(w.begin() + std::ptrdiff_t(s.offset),
                           w.begin() + std::ptrdiff_t(s.offset + s.size)));
  const auto state = model.get_optimizer_state();
  const std::size_t n = Model::parameter_count;
  for (const auto& s : mo::checkpoint::parameter_slices<Model::spec>())
    put(out, "optimizer/" + s.name + "/velocity",
        std::vector<float>(state.begin() + std::ptrdiff_t(n + s.offset),
                           state.begin() + std::ptrdiff_t(n + s.offset + s.size)));
  out << "iterations " << model.iterations() << '\n';

  // One tensor of each dtype memopt converts.
  std::vector<float> f32(6);
  std::vector<mo::half> f16(6);
  std::vector<mo::bfloat16> bf16(6);
  const std::vector<std::int64_t> i64{-7, 0, 1LL << 53, 42};
  for (std::size_t i = 0; i < 6; ++i) {
    f32[i] = 1.0f / float(i + 3) - 0.25f;
    f16[i] = mo::half(100.0f * f32[i]);
    bf16[i] = mo::bfloat16(-3.0f * f32[i]);
  }
  const std::vector<mo::io::TensorView> views{
      mo::io::TensorView::of("f32", {2, 3}, std::span<const float>(f32)),
      mo::io::TensorView::of("f16", {3, 2}, std::span<const mo::half>(f16)),
      mo::io::TensorView::of("bf16", {6}, std::span<const mo::bfloat16>(bf16)),
      mo::io::TensorView::of("i64", {4}, std::span<const std::int64_t>(i64))};
  mo::io::save_safetensors(dir / "memopt_dtypes.safetensors", views,
                           {{"writer", "memopt"}, {"unicode", "\xc3\xa9t\xc3\xa9"}});
  put(out, "f32", f32);
  std::vector<float> f;
  for (auto h : f16) f.push_back(float(h));
  put(out, "f16", f);
  f.clear();
  for (auto b : bf16) f.push_back(float(b));
  put(out, "bf16", f);
  out << "i64 -7 0 9007199254740992 42\n";
  return 0;
}

int read(const fs::path& dir) {
  const auto expected = read_expected(dir / "python_expected.txt");
  int failures = 0;
  const auto check = [&](const std::string& what, double got, double want, double tol) {
    if (std::fabs(got - want) > tol * std::max(1.0, std::fabs(want))) {
      std::fprintf(stderr, "mismatch: %s: got %.9g, expected %.9g\n", what.c_str(), got, want);
      ++failures;
    }
  };

  // Weights written by numpy load into the model exactly, and predict agrees with numpy.
  Model model{1};
  model.load_weights(dir / "python_weights.safetensors");
  const auto w = model.get_weights();
  for (const auto& s : mo::checkpoint::parameter_slices<Model::spec>()) {
    const auto& e = expected.at(s.name);
    for (std::size_t i = 0; i < s.size; ++i) check(s.name, w[s.offset + i], float(e.at(i)), 0);
  }
  const auto& xs = expected.at("inputs");
  std::vector<float> x(xs.begin(), xs.end());
  const auto probs = model.predict(x);
  const auto& ps = expected.at("probabilities");
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    err += (probs.at(i) - ps[i]) * (probs.at(i) - ps[i]);
    norm += ps[i] * ps[i];
  }
  if (std::sqrt(err / norm) > 1e-6) {
    std::fprintf(stderr, "mismatch: predict vs numpy: relative error %.3g\n",
                 std::sqrt(err / norm));
    ++failures;
  }

  const auto f = mo::io::SafetensorsFile::read(dir / "python_dtypes.safetensors");
  for (const char* name : {"f32", "f16"}) {
    const auto got = f.floats(name);
    const auto& want = expected.at(name);
    if (got.size() != want.size()) ++failures;
    for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) check(name, got[i], want[i], 0);
  }
  const auto ints = f.int64s("i64");
  const auto& want_ints = expected.at("i64");
  for (std::size_t i = 0; i < ints.size(); ++i) check("i64", double(ints[i]), want_ints.at(i), 0);
  if (f.metadata().at("format") != "np") {
    std::fprintf(stderr, "mismatch: __metadata__ format\n");
    ++failures;
  }
  std::printf("read: %d mismatches\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s write|read DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::string mode = argv[1];
    if (mode == "write") return write(argv[2]);
    if (mode == "read") return read(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 2;
}
