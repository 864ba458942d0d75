// `devplace run -g G -t T -p P [--costs C] [--warmup N] [--repeats N] [--backend B] [--seed S] [--json]`: executes one
// training step of a strategy for real (warm-ups, then timed repeats) and prints the measured step time next to
// the simulated one. --op-csv FILE writes every op's measured kernel time next to the cost model's price.
// Under torchrun's environment variables (RANK, WORLD_SIZE >= 2, MASTER_ADDR, MASTER_PORT) the process is one rank
// of a multi-process execution and runs its devices' ops (exec/multiprocess.h); rank 0 prints the result.
// --processes N launches N such ranks on this machine (apps/launcher.h). A strategy file in the pipeline form runs
// its micro-batches in the schedule's order (Executor::CreatePipeline, one process) and reports each stage's
// measured busy time next to the simulated one.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "apps/launcher.h"
#include "core/atomic_file.h"
#include "core/pipeline_json.h"
#include "distributed/config.h"
#include "exec/executor.h"
#include "exec/multiprocess.h"
#include "exec/pipeline.h"
#include "sim/collectives.h"
#include "sim/engine.h"
#include "sim/pipeline.h"
#include "sim/simulator.h"

namespace devplace::cli {

namespace {

// The simulator's time for one of the executor's collectives alone on an idle machine (sim/collectives.h), or -1
// for a kind it does not build here.
double SimulatedCollective(const Topology& topology, const CollectiveTime& c) {
  sim::TaskGraph tg;
  const SimOptions options;
  sim::CommBuilder builder(topology, options, &tg);
  const std::vector<sim::Ready> after(c.devices.size());
  if (c.kind == "all-reduce") builder.AllReduce(c.devices, c.bytes, after);
  else if (c.kind == "reduce-scatter") builder.ReduceScatter(c.devices, c.bytes, after);
  else return -1.0;
  builder.Finish();
  sim::Engine engine;
  Expected<double> seconds = builder.Run(&engine);
  return seconds.ok() ? *seconds : -1.0;
}

// A pipeline run's stages: measured busy time (the stage's busiest device) and bubble next to the simulated ones.
nlohmann::json PipelineRunJson(const PipelinePlan& plan, const PipelineResult& sim, const ExecResult& run,
                               const Topology& topology) {
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    double busy = 0.0;
    nlohmann::json devices = nlohmann::json::array();
    for (DeviceId d : plan.stages[s].devices) {
      busy = std::max(busy, run.device_busy_seconds[d]);
      devices.push_back(topology.device(d).name);
    }
    stages.push_back({{"name", plan.stages[s].name},
                      {"devices", std::move(devices)},
                      {"busy_ms", busy * 1e3},
                      {"simulated_busy_ms", sim.stages[s].busy_seconds * 1e3},
                      {"bubble_fraction", run.median_step > 0 ? 1.0 - busy / run.median_step : 0.0},
                      {"simulated_bubble_fraction", sim.stages[s].bubble_fraction}});
  }
  return {{"schedule", std::string(ToString(plan.schedule))},
          {"microbatches", plan.microbatches},
          {"simulated_bubble_fraction", sim.bubble_fraction},
          {"stages", std::move(stages)}};
}

}  // namespace

void RegisterRunCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string graph, topology, strategy, costs, op_csv, backend = "auto";
    int32_t warmup = 2, repeats = 5, processes = 1;
    uint64_t seed = 0;
    double timeout = 60.0;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("run", "Execute a strategy for real and compare with the simulator");
  cmd->add_option("-g,--graph", opts->graph, "Graph JSON file")->required();
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file (cpu-local.yaml for this machine's cores)")
      ->required();
  cmd->add_option("-p,--strategy", opts->strategy, "Strategy JSON file")->required();
  cmd->add_option("--costs", opts->costs, "Profiled cost table for the simulation (default: analytic model)");
  cmd->add_option("--warmup", opts->warmup, "Untimed steps first (default 2)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", opts->repeats, "Timed steps (default 5)")->check(CLI::PositiveNumber);
  cmd->add_option("--backend", opts->backend, "auto, cpu or cuda (default auto)");
  cmd->add_option("--seed", opts->seed, "Seed of the inputs and weights (default 0)");
  cmd->add_option("--op-csv", opts->op_csv, "Write each op's measured and simulated time to this CSV file");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->add_option("--processes", opts->processes,
                  "Run as this many processes on this machine (one per device, or per device the strategy uses), "
                  "over c10d with Gloo (default 1)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--timeout", opts->timeout,
                  "Multi-process runs: seconds to wait for the other ranks (rendezvous, each transfer, a step "
                  "without progress) before failing (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->callback([opts, &ctx]() {
    Graph graph = LoadGraph(opts->graph);
    Topology topology = LoadTopology(opts->topology);
    std::optional<PipelinePlan> plan;
    if (Unwrap(DetectStrategyFileForm(opts->strategy)) == StrategyForm::kPipeline)
      plan = Unwrap(ReadPipelinePlanFile(opts->strategy, graph, topology));
    Strategy strategy =
        plan ? Unwrap(MicrobatchStrategy(graph, topology, *plan)) : LoadStrategy(opts->strategy, graph, topology);
    CostModel cost = LoadCostModel(opts->costs);
    if (plan && opts->processes > 1)
      throw CliError(opts->strategy + ": a pipeline plan runs in one process (--processes is not supported for it)");
    if (opts->processes > 1) {  // the inputs are checked once, here, before any rank starts
      Unwrap(RankOfDevices(topology, strategy, opts->processes));
      ctx.exit_code = LaunchLocalRanks(opts->processes, WithoutOption(ctx.args, "--processes"), opts->timeout + 5.0);
      return;
    }
    std::optional<DistributedConfig> distributed = Unwrap(DistributedConfigFromEnv(
        [](const char* name) { return static_cast<const char*>(std::getenv(name)); }, opts->timeout));
    if (distributed && distributed->world_size < 2) distributed.reset();
    if (plan && distributed)
      throw CliError(opts->strategy + ": a pipeline plan runs in one process, not as a rank of a group");
    std::optional<PipelineResult> piped;
    if (plan) piped = Unwrap(SimulatePipeline(graph, topology, *plan, cost));
    SimResult sim = piped ? piped->sim : Unwrap(Simulate(graph, topology, strategy, cost));
    ExecOptions options;
    options.warmup_steps = opts->warmup;
    options.timed_steps = opts->repeats;
    options.backend = opts->backend;
    options.seed = opts->seed;
    ExecResult run = Unwrap(plan          ? ExecutePipeline(graph, topology, *plan, options)
                            : distributed ? ExecuteStrategyAsRank(graph, topology, strategy, options, *distributed)
                                          : ExecuteStrategy(graph, topology, strategy, options));
    const nlohmann::json pipeline = plan ? PipelineRunJson(*plan, *piped, run, topology) : nlohmann::json();
    if (distributed && distributed->rank != 0) {  // rank 0 reports the whole run
      ctx.exit_code = 0;
      return;
    }
    const double error = (sim.step_time - run.median_step) / run.median_step;
    if (!opts->op_csv.empty()) {
      std::ostringstream csv;
      csv << "op,type,role,device,measured_us,handoff_us,simulated_us\n";
      for (OpId op = 0; op < graph.num_ops(); ++op) {
        const OpConfig& config = strategy.configs[op];
        const Device& device = topology.device(config.devices[0]);
        csv << graph.op(op).name << "," << graph.op(op).type << "," << ToString(graph.op(op).role) << ","
            << device.name << "," << run.op_seconds[op] * 1e6 << "," << run.op_handoff_seconds[op] * 1e6 << ","
            << cost.ComputeTime(graph, op, config, 0, device) * 1e6 << "\n";
      }
      Check(WriteFileAtomic(opts->op_csv, csv.str()));
    }
    nlohmann::json collectives = nlohmann::json::array();
    for (const CollectiveTime& c : run.collectives)
      collectives.push_back({{"kind", c.kind}, {"op", c.label}, {"bytes", c.bytes}, {"measured_ms", c.seconds * 1e3},
                             {"measured_busy_ms", c.busy_seconds * 1e3},
                             {"simulated_ms", SimulatedCollective(topology, c) * 1e3}});
    if (opts->json) {
      nlohmann::json devices = nlohmann::json::array();
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        devices.push_back({{"name", topology.device(d).name},
                           {"ops", run.device_ops[d]},
                           {"busy_ms", run.device_busy_seconds[d] * 1e3},
                           {"copy_ms", run.device_copy_seconds[d] * 1e3},
                           {"simulated_busy_ms", sim.devices[d].busy_seconds * 1e3}});
      std::vector<double> steps_ms;
      for (double s : run.step_seconds) steps_ms.push_back(s * 1e3);
      nlohmann::json out = {{"graph", graph.name()},
                           {"topology", topology.name()},
                           {"backend", run.backend.name},
                           {"backend_note", run.backend.note},
                           {"cuda_index", run.backend.cuda_index},
                           {"processes", distributed ? distributed->world_size : 1},
                           {"measured_ms",
                            {{"median", run.median_step * 1e3}, {"min", run.min_step * 1e3},
                             {"max", run.max_step * 1e3}, {"spread", run.spread}, {"steps", steps_ms}}},
                           {"simulated_ms", sim.step_time * 1e3},
                           {"error_pct", error * 100},
                           {"cost_model", cost.Describe()},
                           {"cost_fallbacks", sim.cost_fallbacks},
                           {"devices", devices},
                           {"copies", run.num_copies},
                           {"bytes_copied", run.bytes_copied},
                           {"stand_in_ops", run.stand_in_ops},
                           {"stand_in_types", run.stand_in_types},
                           {"collectives", collectives}};
      if (plan) out["pipeline"] = pipeline;
      PrintJson(out);
    } else {
      if (!run.backend.note.empty()) std::cerr << "devplace: " << run.backend.note << "\n";
      std::cout << "executed " << graph.name() << " on " << topology.name() << " (" << run.backend.name
                << " backend";
      if (distributed) std::cout << ", " << distributed->world_size << " processes over c10d";
      std::cout << "): step " << FormatSeconds(run.median_step) << " median (min "
                << FormatSeconds(run.min_step) << ", max " << FormatSeconds(run.max_step) << ") over "
                << run.step_seconds.size() << " steps after " << opts->warmup << " warm-ups\n";
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        std::cout << "  " << topology.device(d).name << ": " << run.device_ops[d] << " ops, busy "
                  << FormatSeconds(run.device_busy_seconds[d]) << " (simulated "
                  << FormatSeconds(sim.devices[d].busy_seconds) << "), copying out "
                  << FormatSeconds(run.device_copy_seconds[d]) << "\n";
      std::cout << "  " << run.num_copies << " tensors (" << FormatBytes(static_cast<double>(run.bytes_copied))
                << ") copied between devices per step; " << run.stand_in_ops << " ops ran a stand-in kernel";
      for (size_t i = 0; i < run.stand_in_types.size(); ++i)
        std::cout << (i ? ", " : " (") << run.stand_in_types[i] << (i + 1 == run.stand_in_types.size() ? ")" : "");
      std::cout << "\nsimulated: " << FormatSeconds(sim.step_time) << " (" << (error >= 0 ? "+" : "")
                << std::round(error * 1000) / 10 << "% vs measured; " << cost.Describe() << ")\n";
      if (plan) {
        std::cout << "  pipeline: " << plan->stages.size() << " stages, " << plan->microbatches << " micro-batches, "
                  << ToString(plan->schedule) << "\n";
        for (const nlohmann::json& st : pipeline["stages"])
          std::cout << "    stage " << st["name"].get<std::string>() << ": busy "
                    << FormatSeconds(st["busy_ms"].get<double>() / 1e3) << " (simulated "
                    << FormatSeconds(st["simulated_busy_ms"].get<double>() / 1e3) << "), bubble "
                    << std::round(st["bubble_fraction"].get<double>() * 1000) / 10 << "% (simulated "
                    << std::round(st["simulated_bubble_fraction"].get<double>() * 1000) / 10 << "%)\n";
      }
      if (sim.cost_fallbacks > 0)
        std::cout << "  " << sim.cost_fallbacks << " ops had no profiled entry and were priced analytically\n";
      if (!run.collectives.empty()) {
        double busy = 0.0, simulated = 0.0;
        for (const nlohmann::json& c : collectives) {
          busy += c["measured_busy_ms"].get<double>();
          simulated += std::max(0.0, c["simulated_ms"].get<double>());
        }
        std::cout << "  " << run.collectives.size() << " collectives per step: their steps took "
                  << FormatSeconds(busy / 1e3) << " in all (each alone on an idle machine simulated "
                  << FormatSeconds(simulated / 1e3) << "; --json lists them)\n";
      }
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
