// `devplace cost-error -g G.json -t T.yaml --costs C.json [--json]`: how far the analytic roofline model is from a
// profiled cost table on a graph's ops, per device kind and op type (median and 90th percentile of the relative
// error, median ratio analytic / measured), with the analytic settings the table carries (its "analytic" section:
// the model the simulator falls back to).
#include <cstdio>
#include <iostream>
#include <memory>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "sim/cost_error.h"

namespace devplace::cli {

void RegisterCostErrorCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string graph, topology, costs;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("cost-error", "Error of the analytic cost model against a profiled cost table");
  cmd->add_option("-g,--graph", opts->graph, "Graph JSON file")->required();
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file (a device of each profiled kind)")->required();
  cmd->add_option("--costs", opts->costs, "Profiled cost table JSON (devplace profile)")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    const Graph graph = LoadGraph(opts->graph);
    const Topology topology = LoadTopology(opts->topology);
    const CostTable table = Unwrap(ReadCostTableFile(opts->costs));
    const std::vector<CostErrorRow> rows = Unwrap(CompareAnalyticWithProfile(graph, topology, table, table.analytic));
    if (opts->json) {
      nlohmann::json list = nlohmann::json::array();
      for (const CostErrorRow& r : rows)
        list.push_back({{"device_kind", r.device_kind},
                        {"op_type", r.op_type},
                        {"ops", r.ops},
                        {"measured_ms", r.measured_seconds * 1e3},
                        {"analytic_ms", r.analytic_seconds * 1e3},
                        {"median_abs_error", r.median_abs_error},
                        {"p90_abs_error", r.p90_abs_error},
                        {"median_ratio", r.median_ratio}});
      PrintJson({{"graph", graph.name()}, {"topology", topology.name()}, {"costs", opts->costs}, {"rows", list}});
    } else {
      std::cout << "analytic model vs " << opts->costs << " on " << graph.name() << " (" << topology.name()
                << "): relative error |analytic - measured| / measured per op\n";
      std::printf("%-10s %-22s %5s %12s %12s %9s %9s %9s\n", "kind", "op type", "ops", "measured ms", "analytic ms",
                  "median", "p90", "ratio");
      for (const CostErrorRow& r : rows)
        std::printf("%-10s %-22s %5d %12.3f %12.3f %8.1f%% %8.1f%% %9.3f\n", r.device_kind.c_str(),
                    r.op_type.c_str(), r.ops, r.measured_seconds * 1e3, r.analytic_seconds * 1e3,
                    r.median_abs_error * 100, r.p90_abs_error * 100, r.median_ratio);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
