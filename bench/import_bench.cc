// Import speed and memory of a large PyTorch execution trace (issue 20's target: a 100k-node trace in under 10 s
// and 2 GB). The trace is the first iteration (ProfilerStep#4: 4,796 nodes) of the real ResNet-50 trace of
// tests/data/real/pytorch_et/resnet_1gpu_et.1.0.3-chakra.0.0.4.json.gz repeated until it holds 100k nodes: every
// copy gets fresh node ids and keeps the tensor ids, so each copy reads what the one before wrote (one long
// step). It is written to a file by a child process (so that building it does not count in this process's peak
// RSS), then timed through ImportModelFile, as `devplace graph import` runs it.
//   build/bench/import_bench            (docs/performance.md, "Importing a large execution trace")
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "datasets/import/importers.h"

namespace devplace {
namespace {

constexpr int kTargetNodes = 100000;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "import_bench: %s\n", message.c_str());
  std::exit(1);
}

std::string Gunzip(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (!in) Die("cannot open " + path);
  std::string text;
  char buffer[1 << 16];
  for (int n; (n = gzread(in, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<size_t>(n));
  gzclose(in);
  return text;
}

// Writes the trace of about kTargetNodes nodes to `path`; returns its node count.
int64_t WriteLargeTrace(const std::string& path) {
  const nlohmann::json source = nlohmann::json::parse(
      Gunzip(DEVPLACE_SOURCE_DIR "/tests/data/real/pytorch_et/resnet_1gpu_et.1.0.3-chakra.0.0.4.json.gz"));
  const nlohmann::json& nodes = source.at("nodes");
  std::vector<int64_t> steps;
  int64_t max_id = 0;
  for (const auto& n : nodes) {
    max_id = std::max<int64_t>(max_id, n.at("id").get<int64_t>());
    if (n.at("name").get<std::string>().rfind("ProfilerStep#", 0) == 0) steps.push_back(n.at("id").get<int64_t>());
  }
  std::sort(steps.begin(), steps.end());
  if (steps.size() < 2) Die("the source trace should record several iterations");
  // As the importer does: the first iteration is the ids from the first ProfilerStep# to the next one.
  const int64_t step = steps[0], next = steps[1];
  nlohmann::json header = nlohmann::json::array(), body = nlohmann::json::array();
  for (const auto& n : nodes) {
    const int64_t id = n.at("id").get<int64_t>();
    if (id <= step)
      header.push_back(n);  // process, thread and the step itself
    else if (id < next)
      body.push_back(n);
  }
  std::ofstream out(path);
  nlohmann::json meta = source;
  meta.erase("nodes");
  std::string text = meta.dump();
  out << text.substr(0, text.size() - 1) << ",\"nodes\":[";
  int64_t count = 0;
  for (const auto& n : header) out << (count++ ? "," : "") << n.dump();
  for (int64_t copy = 0; count < kTargetNodes; ++copy) {
    const int64_t shift = copy * (max_id + 1);
    for (nlohmann::json n : body) {
      n["id"] = n.at("id").get<int64_t>() + shift;
      if (n.at("ctrl_deps").get<int64_t>() > step) n["ctrl_deps"] = n.at("ctrl_deps").get<int64_t>() + shift;
      out << "," << n.dump();
      ++count;
    }
  }
  out << "]}";
  if (!out) Die("cannot write " + path);
  return count;
}

int64_t PeakRssBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

void BM_ImportLargeTrace(benchmark::State& state) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("devplace_import_bench_" + std::to_string(getpid()) + ".json")).string();
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) Die("pipe failed");
  const pid_t child = fork();
  if (child == 0) {  // build the trace in a child: its memory never counts in this process's peak
    const int64_t nodes = WriteLargeTrace(path);
    if (write(pipe_fds[1], &nodes, sizeof nodes) != sizeof nodes) _exit(1);
    _exit(0);
  }
  int64_t nodes = 0;
  int status = 0;
  if (child < 0 || read(pipe_fds[0], &nodes, sizeof nodes) != sizeof nodes || waitpid(child, &status, 0) != child ||
      status != 0)
    Die("building the trace failed");
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  const int64_t rss_before = PeakRssBytes();
  int64_t ops = 0;
  for (auto _ : state) {
    Expected<ImportResult> r = ImportModelFile(path);
    if (!r.ok()) Die(r.error().message);
    ops = r->graph.num_ops();
    benchmark::DoNotOptimize(r->graph);
  }
  state.counters["trace_nodes"] = static_cast<double>(nodes);
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  state.counters["graph_ops"] = static_cast<double>(ops);
  state.counters["peak_rss_MB"] = static_cast<double>(PeakRssBytes()) / 1e6;
  state.counters["rss_before_MB"] = static_cast<double>(rss_before) / 1e6;
  std::filesystem::remove(path);
}
BENCHMARK(BM_ImportLargeTrace)->Unit(benchmark::kSecond)->Iterations(3)->UseRealTime();

}  // namespace
}  // namespace devplace

BENCHMARK_MAIN();
