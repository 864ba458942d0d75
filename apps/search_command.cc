// `devplace search --algo A -g G -t T [--budget-evals N] [--budget-seconds S] [--seed N] [--init P.json]
//  [--costs C.json] [--mesh RxC] [--microbatches M --schedule S] -o P.json [--json]`: runs a placement
// algorithm, writes the strategy, and reports its simulated step time with the evaluations and wall time the
// search used. --mesh fixes auto-shard's mesh shape. A pipeline search (pipeline-dp) writes its pipeline plan and
// reports the pipeline's simulated step.
#include <cstdio>
#include <iostream>

#include "agents/auto_shard.h"
#include "agents/learned/learned_search.h"
#include "agents/pipeline_dp.h"
#include "agents/search.h"
#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "core/pipeline_json.h"
#include "core/strategy_json.h"
#include "sim/pipeline.h"

namespace devplace::cli {

void RegisterSearchCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string algo, graph, topology, init, costs, output, mesh;
    int64_t budget_evals = 0;
    double budget_seconds = 0;
    uint64_t seed = 0;
    int32_t microbatches = 0;
    std::string schedule;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("search", "Place a graph on a machine with a search algorithm");
  cmd->add_option("--algo", opts->algo, "Algorithm: " + AllSearches().names_list())->required();
  cmd->add_option("-g,--graph", opts->graph, "Graph JSON file")->required();
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file")->required();
  cmd->add_option("--budget-evals", opts->budget_evals, "Most simulations the search may run (default: its own)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--budget-seconds", opts->budget_seconds, "Most wall-clock seconds (default: its own)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", opts->seed, "Seed for randomised algorithms (default 0)");
  cmd->add_option("--init", opts->init, "Starting strategy, for algorithms that refine one");
  cmd->add_option("--costs", opts->costs, "Profiled cost table (default: the analytic cost model)");
  cmd->add_option("--mesh", opts->mesh, "auto-shard's mesh shape, e.g. 2x4 (default: every 1-D and 2-D shape)");
  cmd->add_option("--microbatches", opts->microbatches, "pipeline-dp: micro-batches per step (default 4)")
      ->check(CLI::Range(1, kMaxMicrobatches));
  cmd->add_option("--schedule", opts->schedule, "pipeline-dp: gpipe, 1f1b (default) or eager-1f1b");
  cmd->add_option("-o,--output", opts->output, "Output strategy JSON file")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    std::unique_ptr<SearchAlgorithm> algo = Unwrap(MakeAnySearchAlgorithm(opts->algo));
    if (!opts->mesh.empty()) {
      if (algo->name() != "auto-shard")
        throw CliError("--mesh: only --algo auto-shard takes a mesh (got --algo " + opts->algo + ")");
      algo = std::make_unique<AutoShardSearch>(AutoShardOptions{opts->mesh});
    }
    if (opts->microbatches > 0 || !opts->schedule.empty()) {
      if (opts->algo != "pipeline-dp") throw CliError("--microbatches and --schedule apply to --algo pipeline-dp only");
      PipelineDpOptions pipeline;
      if (opts->microbatches > 0) pipeline.microbatches = opts->microbatches;
      if (!opts->schedule.empty() && !ParsePipelineSchedule(opts->schedule, &pipeline.schedule))
        throw CliError("--schedule: unknown schedule '" + opts->schedule + "' (expected gpipe, 1f1b or eager-1f1b)");
      algo = std::make_unique<PipelineDpSearch>(pipeline);
    }
    Graph graph = LoadGraph(opts->graph);
    Topology topology = LoadTopology(opts->topology);
    Strategy initial;
    SearchRequest request;
    if (!opts->init.empty()) {
      initial = LoadStrategy(opts->init, graph, topology);
      request.initial = &initial;
    }
    SearchProblem problem{&graph, &topology, LoadCostModel(opts->costs), SimOptions{}};
    request.budget = SearchBudget{opts->budget_evals, opts->budget_seconds};
    request.seed = opts->seed;
    const bool draw_progress = !opts->json && StderrIsTerminal();
    if (draw_progress) {
      request.progress = [](const SearchProgress& p) {
        std::fprintf(stderr, "\r  %lld evaluations, %.1f s, best step %.3f ms   ",
                     static_cast<long long>(p.evaluations), p.seconds, p.best_step_time * 1e3);
      };
    }
    SearchResult result = Unwrap(algo->Search(problem, request));
    if (draw_progress && result.evaluations > 0) std::fprintf(stderr, "\n");
    Check(ValidateStrategy(result.strategy, graph, topology));
    SimResult sim;
    if (result.pipeline) {
      sim = Unwrap(SimulatePipeline(graph, topology, *result.pipeline, problem.cost, problem.sim)).sim;
      Check(WritePipelinePlanFile(*result.pipeline, graph, topology, opts->output));
    } else {
      sim = Unwrap(Simulate(graph, topology, result.strategy, problem.cost, problem.sim));
      Check(WriteStrategyFile(result.strategy, graph, topology, opts->output));
    }
    std::vector<int32_t> ops_per_device(topology.num_devices(), 0);
    for (const OpConfig& c : result.strategy.configs)
      for (DeviceId d : c.devices) ++ops_per_device[d];
    if (opts->json) {
      PrintJson({{"algorithm", algo->name()},
                 {"output", opts->output},
                 {"step_time_ms", sim.step_time * 1e3},
                 {"oom", sim.oom},
                 {"evaluations", result.evaluations},
                 {"search_seconds", result.seconds},
                 {"ops_per_device", ops_per_device}});
    } else {
      std::cout << algo->name() << ": simulated step time " << FormatSeconds(sim.step_time)
                << (sim.oom ? " (OUT OF MEMORY)" : "") << ", " << result.evaluations << " evaluations in "
                << FormatSeconds(result.seconds) << "\nops per device:";
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        std::cout << " " << topology.device(d).name << "=" << ops_per_device[d];
      std::cout << "\nwrote " << opts->output << "\n";
      for (const std::string& m : sim.oom_messages) std::cout << "  " << m << "\n";
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
