// `devplace profile -g G [-t T] -o C.json [--isolated] [--warmup N] [--runs N] [--backend B] [--json]`: times every
// distinct op signature of a graph once per device kind with the executor's kernels (within single-device training
// steps, or alone with --isolated) and writes the cost table the simulator's profiled cost model reads
// (--costs C.json).
#include <iostream>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "exec/profiler.h"

namespace devplace::cli {

namespace {

// This machine's CPU as one device of kind "cpu" (the kind cpu-local.yaml gives its cores).
Topology ThisCpu() {
  TopologyBuilder builder("this-cpu");
  builder.add_device(Device{"cpu0", "cpu", "localhost", 8e10, 8e10, 1e10, int64_t{8} << 30});
  return Unwrap(std::move(builder).Build());
}

}  // namespace

void RegisterProfileCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string graph, topology, output, backend = "auto";
    int32_t warmup = 2, runs = 7;
    uint64_t seed = 0;
    bool isolated = false, json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("profile", "Time every distinct op of a graph and write a cost table");
  cmd->add_option("-g,--graph", opts->graph, "Graph JSON file")->required();
  cmd->add_option("-t,--topology", opts->topology,
                  "Topology whose device kinds to profile (default: this machine's CPU, kind 'cpu')");
  cmd->add_option("-o,--output", opts->output, "Output cost table JSON file")->required();
  cmd->add_flag("--isolated", opts->isolated,
                "Time each op signature alone on synthetic inputs (default: within single-device training steps)");
  cmd->add_option("--warmup", opts->warmup, "Untimed steps (--isolated: runs per op) (default 2)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--runs", opts->runs, "Timed steps (--isolated: runs per op); medians are kept (default 7)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--backend", opts->backend, "auto, cpu or cuda (default auto)");
  cmd->add_option("--seed", opts->seed, "Seed of the inputs and weights (default 0)");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    Graph graph = LoadGraph(opts->graph);
    Topology topology = opts->topology.empty() ? ThisCpu() : LoadTopology(opts->topology);
    ProfileOptions options;
    options.mode = opts->isolated ? ProfileMode::kIsolated : ProfileMode::kInGraph;
    options.warmup_runs = opts->warmup;
    options.timed_runs = opts->runs;
    options.backend = opts->backend;
    options.seed = opts->seed;
    ProfileResult profile = Unwrap(ProfileGraph(graph, topology, options));
    Check(WriteCostTableFile(CostTable{.entries = profile.entries}, opts->output));
    double total = 0.0;
    for (const OpTiming& p : profile.entries) total += p.seconds * p.instances;
    if (opts->json) {
      PrintJson({{"graph", graph.name()},
                 {"output", opts->output},
                 {"backend", profile.backend.name},
                 {"backend_note", profile.backend.note},
                 {"signatures", profile.entries.size()},
                 {"ops", graph.num_ops()},
                 {"stand_in_signatures", profile.stand_in_signatures},
                 {"kinds", profile.kind_settings},
                 {"sum_of_op_times_ms", total * 1e3},
                 {"seconds", profile.seconds}});
    } else {
      if (!profile.backend.note.empty()) std::cerr << "devplace: " << profile.backend.note << "\n";
      std::cout << "profiled " << profile.entries.size() << " op signatures of " << graph.name() << " ("
                << graph.num_ops() << " ops) on the " << profile.backend.name << " backend in "
                << FormatSeconds(profile.seconds) << "; sum of op times " << FormatSeconds(total) << "; "
                << profile.stand_in_signatures << " signatures ran a stand-in kernel\n";
      for (const std::string& kind : profile.kind_settings) std::cout << "  " << kind << "\n";
      std::cout << "wrote " << opts->output << "\n";
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
