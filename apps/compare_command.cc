// `devplace compare --suite S.yaml -o DIR [--json]`: runs every (model, topology, algorithm) cell of a suite with
// the suite's budget and seed, and writes DIR/results.md, DIR/results.csv and DIR/chart.png.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "agents/learned/learned_search.h"
#include "agents/search.h"
#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/compare_report.h"
#include "apps/inputs.h"
#include "apps/model_source.h"
#include "core/compare_suite.h"

namespace devplace::cli {

namespace {

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
  Expected<SimResult> sim = Simulate(graph, topology, result->strategy, problem.cost, problem.sim);
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

}  // namespace

void RegisterCompareCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string suite, output;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("compare", "Run every (model, topology, algorithm) cell of a suite");
  cmd->add_option("--suite", opts->suite, "Suite YAML file (see configs/suites/)")->required();
  cmd->add_option("-o,--output", opts->output, "Output directory (results.md, results.csv, chart.png)")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    CompareSuite suite = Unwrap(ReadCompareSuite(opts->suite));
    std::vector<std::unique_ptr<SearchAlgorithm>> algorithms;
    for (const std::string& name : suite.algorithms) algorithms.push_back(Unwrap(MakeAnySearchAlgorithm(name)));
    std::vector<Topology> topologies;
    for (const std::string& path : suite.topologies) topologies.push_back(LoadTopology(path));
    std::error_code ec;
    std::filesystem::create_directories(opts->output, ec);
    if (ec) throw CliError(opts->output + ": cannot create directory: " + ec.message());

    const size_t total = suite.models.size() * topologies.size() * algorithms.size();
    const bool progress = !opts->json;
    std::vector<CompareCell> cells;
    for (const SuiteModel& model : suite.models) {
      Graph graph = LoadSuiteModel(model);
      for (const Topology& topology : topologies) {
        for (const auto& algo : algorithms) {
          if (progress)
            std::fprintf(stderr, "[%zu/%zu] %s on %s: %s ...", cells.size() + 1, total, model.label().c_str(),
                         topology.name().c_str(), algo->name().c_str());
          cells.push_back(RunCell(*algo, graph, topology, suite, model.label()));
          const CompareCell& c = cells.back();
          if (progress) {
            if (c.ok)
              std::fprintf(stderr, " %.3f ms%s (%.1f s)\n", c.step_time * 1e3, c.oom ? " OOM" : "", c.search_seconds);
            else
              std::fprintf(stderr, " error: %s\n", c.error.c_str());
          }
        }
      }
    }
    std::string command = "devplace compare --suite " + opts->suite + " -o " + opts->output;
    Check(WriteCompareCsv(cells, suite.baseline, opts->output + "/results.csv"));
    Check(WriteCompareMarkdown(cells, suite.algorithms, suite.baseline, suite.name, command,
                               opts->output + "/results.md"));
    Status chart = WriteCompareChart(cells, suite.algorithms, suite.baseline, opts->output);
    if (!chart.ok()) std::cerr << "devplace: warning: " << chart.error().message << "\n";
    int failed = 0;
    for (const CompareCell& c : cells) failed += !c.ok;
    if (opts->json) {
      nlohmann::json rows = nlohmann::json::array();
      for (const CompareCell& c : cells)
        rows.push_back({{"model", c.model}, {"topology", c.topology}, {"algorithm", c.algorithm}, {"ok", c.ok},
                        {"step_time_ms", c.step_time * 1e3}, {"oom", c.oom}, {"evaluations", c.evaluations},
                        {"search_seconds", c.search_seconds},
                        {"speedup_over_baseline", SpeedupOverBaseline(cells, c, suite.baseline)}});
      PrintJson({{"suite", suite.name}, {"output", opts->output}, {"cells", rows}, {"failed", failed},
                 {"chart", chart.ok()}});
    } else {
      std::cout << "wrote " << opts->output << "/results.md, results.csv" << (chart.ok() ? ", chart.png" : "")
                << " (" << cells.size() << " cells, " << failed << " failed)\n";
    }
    ctx.exit_code = failed ? 1 : 0;
  });
}

}  // namespace devplace::cli
