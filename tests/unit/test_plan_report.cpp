// The plan made visible: memory_report (fmt and JSON text), the timeline SVG, summary().
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memopt/memopt.hpp>

namespace mo = memopt;
using mo::plan::BufferRole;

namespace {

using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using M = mo::Model<Net, mo::Input<784>, mo::mixed_float16>;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::filesystem::path scratch_dir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("memopt_plan_report_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("memory_report names every buffer, with the plan's bytes, offsets and lifetimes") {
  const mo::plan::MemoryReport r = M::memory_report(32);
  constexpr auto p = M::training_plan(32);
  REQUIRE(r.buffers.size() == p.count);
  CHECK(r.kind == "training");
  CHECK(r.policy == "mixed_float16");
  CHECK(r.batch == 32);
  CHECK(r.arena_bytes == M::arena_bytes(32));
  CHECK(r.naive_bytes == M::naive_bytes(32));
  CHECK(r.lower_bound_bytes == M::lower_bound_bytes(32));
  CHECK(r.steps.size() == static_cast<std::size_t>(p.steps));
  CHECK(r.steps.front() == "forward dense");
  CHECK(r.steps[2] == "loss");
  CHECK(r.steps.back() == "optimizer");
  for (std::size_t k = 0; k < p.count; ++k) {
    CHECK(r.buffers[k].bytes == p.buffers[k].bytes);
    CHECK(r.buffers[k].offset == p.buffers[k].offset);
    CHECK(r.buffers[k].first == p.buffers[k].first);
    CHECK(r.buffers[k].last == p.buffers[k].last);
  }
  const auto named = [&](const std::string& name) {
    for (const auto& b : r.buffers)
      if (b.name == name) return true;
    return false;
  };
  for (const char* name :
       {"input", "labels", "dense/activation", "dense/relu_mask", "dense/activation_grad",
        "dense_1/logits", "dense_1/logits_grad", "parameter_grads", "step_scalars"})
    CHECK_MESSAGE(named(name), name);

  const mo::plan::MemoryReport inf = M::inference_memory_report(32);
  CHECK(inf.kind == "inference");
  CHECK(inf.arena_bytes == M::inference_arena_bytes(32));
  CHECK(inf.buffers.size() == 3);
}

TEST_CASE("memory_report prints with fmt as a table") {
  const std::string s = fmt::format("{}", M::memory_report(32));
  CHECK(s.find("training memory plan (mixed_float16, batch 32)") != std::string::npos);
  CHECK(s.find("dense/activation") != std::string::npos);
  CHECK(s.find("parameter_grads") != std::string::npos);
  CHECK(s.find("forward dense ..") != std::string::npos);
  CHECK(s.find("peak at step") != std::string::npos);
  CHECK(count(s, "\n") == M::training_plan(32).count + 3);  // header, columns, peak
}

template <class T>
concept Streamable = requires(std::ostream& os, const T& t) {
  os << t;
};

TEST_CASE("memory_report prints to a std::ostream as the same table") {
  // Checked through a concept, so that without operator<< this fails at run time rather than
  // stopping the build with 60 lines of candidates.
  REQUIRE(Streamable<mo::plan::MemoryReport>);
  M model{1};
  const auto streamed = [](const auto& report) {
    std::ostringstream os;
    if constexpr (Streamable<std::decay_t<decltype(report)>>) os << report << "end";
    return os.str();
  };
  const std::string s = streamed(model.memory_report(64));
  CHECK(s == fmt::format("{}end", model.memory_report(64)));
  CHECK(s.find("training memory plan (mixed_float16, batch 64)") != std::string::npos);
}

TEST_CASE("memory_report as JSON text, read back by an independent parser") {
  const nlohmann::json back = nlohmann::json::parse(mo::plan::to_json(M::memory_report(256)));
  CHECK(back["kind"] == "training");
  CHECK(back["policy"] == "mixed_float16");
  CHECK(back["batch"] == 256);
  CHECK(back["arena_bytes"].get<std::size_t>() == M::arena_bytes(256));
  CHECK(back["lower_bound_bytes"].get<std::size_t>() == M::lower_bound_bytes(256));
  CHECK(back["naive_bytes"].get<std::size_t>() == M::naive_bytes(256));
  CHECK(back["alignment"].get<std::size_t>() == 256);
  REQUIRE(back["buffers"].size() == M::training_plan(256).count);
  const auto& b = back["buffers"][2];
  CHECK(b["name"] == "dense/activation");
  CHECK(b["role"] == "activation");
  CHECK(b["layer"] == 0);
  CHECK(b["bytes"].get<std::size_t>() == 256 * 128 * 2);
  CHECK(b["offset"].get<std::size_t>() % 256 == 0);
  CHECK(b["first_step"] == 0);
  CHECK(back["steps"][back["peak_step"].get<std::size_t>()].is_string());
}

TEST_CASE("write_memory_timeline_svg draws one labelled rectangle per buffer, atomically") {
  const auto dir = scratch_dir();
  const auto path = dir / "arena.svg";
  M::write_memory_timeline_svg(path, 32);
  REQUIRE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(dir / "arena.svg.tmp"));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string svg = text.str();
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  const mo::plan::MemoryReport r = M::memory_report(32);
  CHECK(count(svg, "<g><title>") == r.buffers.size());
  for (const auto& b : r.buffers) CHECK_MESSAGE(svg.find(b.name) != std::string::npos, b.name);
  for (const auto& s : r.steps) CHECK_MESSAGE(svg.find(s) != std::string::npos, s);
  std::filesystem::remove_all(dir);

  CHECK_THROWS_AS(M::write_memory_timeline_svg("/nonexistent-memopt-dir/arena.svg", 32), mo::error);
}

TEST_CASE("summary shows arena, naive and lower bound for the batch size") {
  const std::string s = M{1}.summary_string(64);
  const auto with = [&](std::size_t v) { return s.find(std::to_string(v)) != std::string::npos; };
  CHECK(with(M::arena_bytes(64)));
  CHECK(with(M::naive_bytes(64)));
  CHECK(with(M::lower_bound_bytes(64)));
  CHECK(with(M::inference_arena_bytes(64)));
}
