// `devplace simulate -g G.json -t T.yaml -p P.json [--costs C.json] [--trace X.json] [--json]`: simulates one
// training step of a placed graph and prints a summary (or one JSON object with --json). A strategy file in the
// pipeline form (a "pipeline" object) is simulated with its schedule and also reports the bubble fraction and
// each stage's peak memory.
#include <cstdio>
#include <iostream>
#include <memory>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "core/graph_json.h"
#include "core/pipeline_json.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"
#include "sim/pipeline.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace devplace::cli {
namespace {

struct SimulateOptions {
  std::string graph, topology, placement, costs, trace;
  bool json = false;
};

nlohmann::json ResultJson(const SimResult& r, const Graph& g, const Topology& t, const CostModel& cost) {
  nlohmann::json peak = nlohmann::json::object(), util = nlohmann::json::object(),
                 busy = nlohmann::json::object(), links = nlohmann::json::array(),
                 oom_devices = nlohmann::json::array(), path = nlohmann::json::array();
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    const std::string& name = t.device(d).name;
    peak[name] = r.devices[d].peak_bytes;
    util[name] = r.devices[d].utilisation;
    busy[name] = r.devices[d].busy_seconds * 1e3;
    if (r.devices[d].overage_bytes > 0)
      oom_devices.push_back({{"device", name}, {"overage_bytes", r.devices[d].overage_bytes}});
  }
  for (LinkId l = 0; l < t.num_links(); ++l) {
    if (r.links[l].num_tasks == 0) continue;
    links.push_back({{"src", t.node_name(t.link(l).src)},
                     {"dst", t.node_name(t.link(l).dst)},
                     {"bytes", r.links[l].bytes},
                     {"busy_ms", r.links[l].busy_seconds * 1e3}});
  }
  for (OpId op : r.critical_path) path.push_back(g.op(op).name);
  return {{"graph", g.name()},
          {"topology", t.name()},
          {"step_time_ms", r.step_time * 1e3},
          {"peak_memory_bytes", peak},
          {"oom", r.oom},
          {"oom_devices", oom_devices},
          {"bytes_moved", r.bytes_moved},
          {"utilisation", util},
          {"busy_ms", busy},
          {"links", links},
          {"num_tasks", r.num_tasks},
          {"num_compute_tasks", r.num_compute_tasks},
          {"cost_model", cost.Describe()},
          {"cost_fallbacks", r.cost_fallbacks},
          {"critical_path", path},
          {"critical_path_compute_ms", r.critical_compute_seconds * 1e3}};
}

nlohmann::json PipelineJson(const PipelineResult& r, const PipelinePlan& plan, const Topology& t) {
  nlohmann::json stages = nlohmann::json::array();
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PipelineStageStats& st = r.stages[s];
    nlohmann::json devices = nlohmann::json::array();
    for (DeviceId d : plan.stages[s].devices) devices.push_back(t.device(d).name);
    stages.push_back({{"name", plan.stages[s].name},
                      {"devices", std::move(devices)},
                      {"busy_ms", st.busy_seconds * 1e3},
                      {"bubble_fraction", st.bubble_fraction},
                      {"max_in_flight", st.max_in_flight},
                      {"activation_peak_bytes", st.activation_peak_bytes},
                      {"peak_memory_bytes", st.peak_bytes}});
  }
  return {{"schedule", std::string(ToString(plan.schedule))},
          {"microbatches", plan.microbatches},
          {"delay_weight_gradients", plan.delay_weight_gradients},
          {"reshard",
           {{"method", std::string(ToString(plan.reshard.method))},
            {"balance", std::string(ToString(plan.reshard.balance))},
            {"chunks", plan.reshard.chunks},
            {"signal_only", plan.reshard.signal_only}}},
          {"bubble_fraction", r.bubble_fraction},
          {"stages", std::move(stages)}};
}

// A fraction as a percentage with one decimal, e.g. "35.0%".
std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f%%", fraction * 100);
  return text;
}

void PrintPipeline(const PipelineResult& r, const PipelinePlan& plan) {
  std::cout << "  pipeline:      " << plan.stages.size() << " stages, " << plan.microbatches << " micro-batches, "
            << ToString(plan.schedule) << (plan.delay_weight_gradients ? ", weight gradients delayed" : "")
            << ", resharding " << ToString(plan.reshard.method) << "/" << ToString(plan.reshard.balance)
            << (plan.reshard.signal_only ? " (signal only)" : "") << ", bubble " << Percent(r.bubble_fraction) << "\n";
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PipelineStageStats& st = r.stages[s];
    std::cout << "    stage " << plan.stages[s].name << "  busy " << FormatSeconds(st.busy_seconds) << "  bubble "
              << Percent(st.bubble_fraction) << "  in flight " << st.max_in_flight
              << "  activations " << FormatBytes(static_cast<double>(st.activation_peak_bytes)) << "  peak memory "
              << FormatBytes(static_cast<double>(st.peak_bytes)) << "\n";
  }
}

void PrintHuman(const SimResult& r, const Graph& g, const Topology& t, const CostModel& cost, bool profiled,
                const PipelineResult* pipeline = nullptr, const PipelinePlan* plan = nullptr) {
  std::cout << "simulated one training step of '" << g.name() << "' (" << g.num_ops() << " ops, " << r.num_tasks
            << " tasks) on '" << t.name() << "'\n"
            << "  cost model:    " << cost.Describe() << "\n";
  if (profiled)
    std::cout << "  fallbacks:     " << r.cost_fallbacks << " of " << r.num_compute_tasks
              << " compute tasks had no profiled entry and were priced analytically\n";
  std::cout << "  step time:     " << FormatSeconds(r.step_time) << "\n";
  if (pipeline)
    PrintPipeline(*pipeline, *plan);
  else
    std::cout << "  critical path: " << r.critical_path.size() << " ops, " << FormatSeconds(r.critical_compute_seconds)
              << " computing, " << FormatSeconds(r.step_time - r.critical_compute_seconds)
              << " moving data or waiting\n";
  std::cout << "  bytes moved:   " << FormatBytes(static_cast<double>(r.bytes_moved)) << "\n"
            << "  devices:\n";
  size_t width = 0;
  for (const Device& d : t.devices()) width = std::max(width, d.name.size());
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    const DeviceStats& s = r.devices[d];
    std::string name = t.device(d).name;
    name.resize(width, ' ');
    std::cout << "    " << name << "  busy " << FormatSeconds(s.busy_seconds) << "  util "
              << static_cast<int>(s.utilisation * 100 + 0.5) << "%  peak memory "
              << FormatBytes(static_cast<double>(s.peak_bytes)) << " of "
              << FormatBytes(static_cast<double>(t.device(d).memory_bytes));
    if (s.overage_bytes > 0) std::cout << "  OUT OF MEMORY by " << FormatBytes(static_cast<double>(s.overage_bytes));
    std::cout << "\n";
  }
  bool any_link = false;
  for (LinkId l = 0; l < t.num_links(); ++l) {
    if (r.links[l].num_tasks == 0) continue;
    if (!any_link) std::cout << "  links used:\n";
    any_link = true;
    const Link& link = t.link(l);
    std::cout << "    " << t.node_name(link.src) << " -> " << t.node_name(link.dst) << " (" << link.kind << ")  "
              << FormatBytes(static_cast<double>(r.links[l].bytes)) << "  busy "
              << FormatSeconds(r.links[l].busy_seconds) << "\n";
  }
  if (!any_link) std::cout << "  links used:    none\n";
  for (const std::string& m : r.oom_messages) std::cout << "  OOM: " << m << "\n";
}

}  // namespace

void RegisterSimulateCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate one training step of a placed graph");
  cmd->add_option("-g,--graph", opts->graph, "Graph JSON file")->required();
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file (see configs/topologies/)")->required();
  cmd->add_option("-p,--placement", opts->placement, "Strategy JSON file (placement, partitioning or pipeline)")
      ->required();
  cmd->add_option("--costs", opts->costs, "Profiled cost table JSON (default: the analytic roofline model)");
  cmd->add_option("--trace", opts->trace, "Write a Chrome trace (opens in Perfetto) to this file");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    const Graph graph = Unwrap(ReadGraphFile(opts->graph));
    const Topology topology = Unwrap(ReadTopologyFile(opts->topology));
    const CostModel cost = opts->costs.empty() ? MakeAnalyticCostModel() : Unwrap(ReadCostModelFile(opts->costs));
    SimOptions options;
    options.keep_timeline = !opts->trace.empty();
    if (Unwrap(DetectStrategyFileForm(opts->placement)) == StrategyForm::kPipeline) {
      const PipelinePlan plan = Unwrap(ReadPipelinePlanFile(opts->placement, graph, topology));
      const PipelineResult result = Unwrap(SimulatePipeline(graph, topology, plan, cost, options));
      if (!opts->trace.empty()) Check(WritePipelineChromeTrace(result, plan, topology, opts->trace));
      if (opts->json) {
        nlohmann::json out = ResultJson(result.sim, graph, topology, cost);
        out.erase("critical_path");
        out.erase("critical_path_compute_ms");
        out["pipeline"] = PipelineJson(result, plan, topology);
        PrintJson(out);
      } else {
        PrintHuman(result.sim, graph, topology, cost, !opts->costs.empty(), &result, &plan);
      }
      ctx.exit_code = 0;
      return;
    }
    const Strategy strategy = Unwrap(ReadStrategyFile(opts->placement, graph, topology));
    const SimResult result = Unwrap(Simulate(graph, topology, strategy, cost, options));
    if (!opts->trace.empty()) Check(WriteChromeTrace(result, graph, topology, opts->trace));
    if (opts->json)
      PrintJson(ResultJson(result, graph, topology, cost));
    else
      PrintHuman(result, graph, topology, cost, !opts->costs.empty());
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
