#include "workflows/compare.h"

#include <memory>

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
  const size_t total = in->graphs.size() * in->topologies.size() * in->algorithms.size();
  for (size_t m = 0; m < in->graphs.size(); ++m) {
    const std::string label = suite.models[m].label();
    for (const Topology& topology : in->topologies) {
      for (const auto& algo : in->algorithms) {
        if (options.on_cell) options.on_cell(run.cells.size(), total, {label, topology.name(), algo->name()}, false);
        run.cells.push_back(RunCell(*algo, in->graphs[m], topology, suite, label));
        run.failed += !run.cells.back().ok;
        if (options.on_cell) options.on_cell(run.cells.size() - 1, total, run.cells.back(), true);
      }
    }
  }
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
