#include "workflows/compare.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <mutex>
#include <vector>

#include "agents/learned/learned_search.h"
#include "agents/search.h"
#include "core/atomic_file.h"
#include "core/graph_json.h"
#include "core/parallel.h"
#include "core/sha256.h"
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

// The digest of everything a cell's result depends on: the suite's settings, the graphs, the machines and the
// algorithms, in the suite's order.
std::string InputsDigest(const CompareSuite& suite, const CompareInputs& in) {
  std::string text = suite.name + "\nseed " + std::to_string(suite.seed) + "\nbudget " +
                     std::to_string(suite.budget_evaluations) + " " +
                     std::to_string(std::bit_cast<uint64_t>(suite.budget_seconds)) + "\nbaseline " + suite.baseline + "\n";
  for (const Graph& g : in.graphs) text += GraphToJson(g);
  for (const Topology& t : in.topologies) text += TopologyToYaml(t);
  for (const auto& algo : in.algorithms) text += "algorithm " + algo->name() + "\n";
  return Sha256Hex(text);
}

// The finished cells of the run being resumed in `dir`, checked against `digest`.
Expected<std::vector<CompareCell>> ResumedCells(const std::string& dir, const std::string& digest) {
  const std::string path = dir + "/cells.json";
  Expected<std::string> text = ReadFile(path);
  if (!text) return Error{text.error().message + " (nothing to resume: run without --resume)"};
  Expected<CompareProgress> progress = CompareProgressFromJson(*text, path);
  if (!progress) return progress.error();
  if (progress->inputs_sha256 != digest)
    return Error{path + ": inputs_sha256: the run in " + dir + " is of other inputs (the suite, a graph or a "
                 "machine changed); run without --resume to start afresh"};
  for (CompareCell& c : progress->cells) c.resumed = true;
  return std::move(progress->cells);
}

}  // namespace

Expected<CompareRun> RunCompareSuite(const CompareSuite& suite, const CompareRunOptions& options) {
  Expected<CompareInputs> in = LoadInputs(suite);
  if (!in) return in.error();
  const std::string& dir = options.output_dir;
  CompareProgress progress{InputsDigest(suite, *in), {}};
  if (options.resume) {
    Expected<std::vector<CompareCell>> done = ResumedCells(dir, progress.inputs_sha256);
    if (!done) return done.error();
    progress.cells = std::move(done).value();
  } else {
    if (Status s = CreateOutputDir(dir); !s) return s.error();
    if (Status s = WriteFileAtomic(dir + "/cells.json", CompareProgressToJson(progress)); !s) return s.error();
  }

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
  auto key_of = [&](size_t i) {
    return CompareCell{suite.models[i / (topologies * algorithms)].label(),
                       in->topologies[i / algorithms % topologies].name(), in->algorithms[i % algorithms]->name()};
  };
  // The resumed run's finished cells, matched to the suite's cells by (model, topology, algorithm).
  std::vector<uint8_t> finished(total, 0), used(progress.cells.size(), 0);
  for (size_t i = 0; i < total; ++i) {
    const CompareCell key = key_of(i);
    for (size_t k = 0; k < progress.cells.size(); ++k) {
      const CompareCell& c = progress.cells[k];
      if (used[k] || c.model != key.model || c.topology != key.topology || c.algorithm != key.algorithm) continue;
      used[k] = finished[i] = 1;
      run.cells[i] = c;
      break;
    }
  }
  for (size_t k = 0; k < progress.cells.size(); ++k)
    if (!used[k])
      return Error{dir + "/cells.json: cells[" + std::to_string(k) + "]: " + progress.cells[k].model + " on " +
                   progress.cells[k].topology + " with " + progress.cells[k].algorithm + " is not a cell of the suite"};
  std::mutex record;  // guards progress and write_error
  Status write_error;
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
    const CompareCell key{label, topology.name(), algo.name()};
    if (finished[i]) {
      notify(i, run.cells[i], true);
      return;
    }
    notify(i, key, false);
    CompareCell cell = RunCell(algo, in->graphs[m], topology, suite, label);
    {
      // cells.json lists the finished cells in the order they finished, rewritten after each.
      std::lock_guard<std::mutex> lock(record);
      progress.cells.push_back(cell);
      if (write_error.ok()) write_error = WriteFileAtomic(dir + "/cells.json", CompareProgressToJson(progress));
    }
    run.cells[i] = std::move(cell);
    notify(i, run.cells[i], true);
  };
  ParallelFor(total, options.threads > 0 ? options.threads : HardwareThreads(), [&](size_t i) {
    if (parallel[i % algorithms]) run_cell(i);
  });
  for (size_t i = 0; i < total && write_error.ok(); ++i)
    if (!parallel[i % algorithms]) run_cell(i);
  if (!write_error.ok()) return write_error.error();
  for (const CompareCell& c : run.cells) run.failed += !c.ok;
  if (Status s = WriteCompareCsv(run.cells, suite.baseline, dir + "/results.csv"); !s) return s.error();
  if (Status s = WriteCompareMarkdown(run.cells, suite.algorithms, suite.baseline, suite.name, options.command,
                                      dir + "/results.md");
      !s)
    return s.error();
  run.chart = WriteCompareChart(run.cells, suite.algorithms, suite.baseline, dir);
  return run;
}

}  // namespace devplace
