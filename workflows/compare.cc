#include "workflows/compare.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "agents/learned/learned_search.h"
#include "agents/search.h"
#include "core/topology_yaml.h"
#include "sim/pipeline.h"
#include "sim/simulator.h"
#include "workflows/suite_inputs.h"

namespace devplace {

namespace {

// A pipeline search's plan simulated as the pipeline it is (its step, per-device and per-link statistics).
Expected<SimResult> SimulatePlan(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                                 const SearchProblem& problem) {
  Expected<PipelineResult> r = SimulatePipeline(graph, topology, plan, problem.cost, problem.sim);
  if (!r.ok()) return r.error();
  return std::move(r->sim);
}

CompareCell RunCell(const SearchAlgorithm& algo, const Graph& graph, const Topology& topology,
                    const CompareSuite& suite, const std::string& model_label) {
  CompareCell cell{model_label, topology.name(), algo.name()};
  SearchProblem problem{&graph, &topology, MakeAnalyticCostModel(), SimOptions{}};
  SearchRequest request;
  request.budget = SearchBudget{suite.budget_evaluations, suite.budget_seconds};
  request.seed = suite.seed;
  Expected<SearchResult> result = algo.Search(problem, request);
  if (!result.ok()) {
    cell.error = result.error().message;
    return cell;
  }
  if (Status s = ValidateStrategy(result->strategy, graph, topology); !s.ok()) {
    cell.error = "invalid strategy: " + s.error().message;
    return cell;
  }
  Expected<SimResult> sim = result->pipeline ? SimulatePlan(graph, topology, *result->pipeline, problem)
                                             : Simulate(graph, topology, result->strategy, problem.cost, problem.sim);
  if (!sim.ok()) {
    cell.error = sim.error().message;
    return cell;
  }
  cell.ok = true;
  cell.step_time = sim->step_time;
  cell.oom = sim->oom;
  cell.evaluations = result->evaluations;
  cell.search_seconds = result->seconds;
  return cell;
}

// The suite's inputs, all loaded before anything is written.
struct CompareInputs {
  std::vector<std::unique_ptr<SearchAlgorithm>> algorithms;
  std::vector<Topology> topologies;
  std::vector<Graph> graphs;
};

Expected<CompareInputs> LoadInputs(const CompareSuite& suite) {
  CompareInputs in;
  for (size_t i = 0; i < suite.algorithms.size(); ++i) {
    Expected<std::unique_ptr<SearchAlgorithm>> algo = MakeAnySearchAlgorithm(suite.algorithms[i]);
    if (!algo) return Error{suite.source + ": algorithms[" + std::to_string(i) + "]: " + algo.error().message};
    in.algorithms.push_back(std::move(algo).value());
  }
  for (const std::string& path : suite.topologies) {
    Expected<Topology> t = ReadTopologyFile(path);
    if (!t) return t.error();
    in.topologies.push_back(std::move(t).value());
  }
  Expected<std::vector<Graph>> graphs = BuildSuiteGraphs(suite.models, suite.source);
  if (!graphs) return graphs.error();
  in.graphs = std::move(graphs).value();
  return in;
}

}  // namespace

Expected<CompareRun> RunCompareSuite(const CompareSuite& suite, const CompareRunOptions& options) {
  Expected<CompareInputs> in = LoadInputs(suite);
  if (!in) return in.error();
  if (Status s = CreateOutputDir(options.output_dir); !s) return s.error();

  CompareRun run;
  const size_t algorithms = in->algorithms.size(), topologies = in->topologies.size();
  const size_t total = in->graphs.size() * topologies * algorithms;
  run.cells.resize(total);
  // Cell i is (model, topology, algorithm) in model-major order; threads take the next cell of a search baseline
  // until none is left. The learned searches' cells run afterwards on this thread alone, as before: they set
  // LibTorch's process-wide thread settings (agents/learned/learner.cc) and use their own threads.
  const std::vector<std::string> baselines = SearchAlgorithmNames();
  std::vector<uint8_t> parallel(algorithms);
  for (size_t a = 0; a < algorithms; ++a)
    parallel[a] = std::find(baselines.begin(), baselines.end(), in->algorithms[a]->name()) != baselines.end();
  std::atomic<size_t> next{0};
  std::mutex report;
  auto notify = [&](size_t i, const CompareCell& cell, bool done) {
    if (!options.on_cell) return;
    std::lock_guard<std::mutex> lock(report);
    options.on_cell(i, total, cell, done);
  };
  auto run_cell = [&](size_t i) {
    const size_t m = i / (topologies * algorithms);
    const Topology& topology = in->topologies[i / algorithms % topologies];
    const SearchAlgorithm& algo = *in->algorithms[i % algorithms];
    const std::string label = suite.models[m].label();
    notify(i, {label, topology.name(), algo.name()}, false);
    run.cells[i] = RunCell(algo, in->graphs[m], topology, suite, label);
    notify(i, run.cells[i], true);
  };
  auto worker = [&]() {
    for (size_t i = next++; i < total; i = next++)
      if (parallel[i % algorithms]) run_cell(i);
  };
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min(total, options.threads > 0 ? static_cast<size_t>(options.threads) : hardware);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < total; ++i)
    if (!parallel[i % algorithms]) run_cell(i);
  for (const CompareCell& c : run.cells) run.failed += !c.ok;
  const std::string& dir = options.output_dir;
  if (Status s = WriteCompareCsv(run.cells, suite.baseline, dir + "/results.csv"); !s) return s.error();
  if (Status s = WriteCompareMarkdown(run.cells, suite.algorithms, suite.baseline, suite.name, options.command,
                                      dir + "/results.md");
      !s)
    return s.error();
  run.chart = WriteCompareChart(run.cells, suite.algorithms, suite.baseline, dir);
  return run;
}

}  // namespace devplace
