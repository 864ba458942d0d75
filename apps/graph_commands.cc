// `devplace graph info G.json [--json]`: summarises a graph file.
// (`graph gen`, `graph model` and `graph import` live in their own files and add to the same `graph` group.)
#include <iostream>
#include <map>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/file_command.h"
#include "core/graph_json.h"

namespace devplace::cli {

namespace {

nlohmann::json GraphSummaryJson(const Graph& g) {
  std::map<std::string, int> types;
  for (const Op& op : g.ops()) ++types[op.type];
  int64_t activation_bytes = 0;
  for (const Op& op : g.ops())
    if (op.role == OpRole::kForward) activation_bytes += OutputBytes(op);
  double forward_flops = 0;
  for (const Op& op : g.ops())
    if (op.role == OpRole::kForward) forward_flops += op.flops;
  return {{"name", g.name()},
          {"num_ops", g.num_ops()},
          {"num_edges", g.num_edges()},
          {"ops_by_role",
           {{"forward", g.count_role(OpRole::kForward)},
            {"backward", g.count_role(OpRole::kBackward)},
            {"update", g.count_role(OpRole::kUpdate)}}},
          {"total_flops", g.total_flops()},
          {"forward_flops", forward_flops},
          {"param_bytes", g.total_param_bytes()},
          {"forward_activation_bytes", activation_bytes},
          {"op_types", types}};
}

void PrintHuman(const Graph& g) {
  nlohmann::json s = GraphSummaryJson(g);
  std::cout << "graph " << g.name() << "\n"
            << "  ops:         " << g.num_ops() << " (" << g.count_role(OpRole::kForward) << " forward, "
            << g.count_role(OpRole::kBackward) << " backward, " << g.count_role(OpRole::kUpdate) << " update)\n"
            << "  edges:       " << g.num_edges() << "\n"
            << "  FLOPs:       " << FormatCount(g.total_flops()) << " per step ("
            << FormatCount(s["forward_flops"].get<double>()) << " forward)\n"
            << "  parameters:  " << FormatBytes(static_cast<double>(g.total_param_bytes())) << "\n"
            << "  activations: " << FormatBytes(s["forward_activation_bytes"].get<double>()) << " (forward outputs)\n"
            << "  op types:   ";
  std::vector<std::pair<int, std::string>> types;
  for (auto& [type, count] : s["op_types"].items()) types.emplace_back(count.get<int>(), type);
  std::sort(types.rbegin(), types.rend());
  for (size_t i = 0; i < types.size() && i < 8; ++i) std::cout << " " << types[i].second << " x" << types[i].first;
  if (types.size() > 8) std::cout << " (+" << types.size() - 8 << " more)";
  std::cout << "\n";
}

}  // namespace

CLI::App* RegisterGraphCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* graph = app.add_subcommand("graph", "Create, import and inspect computation graphs");
  graph->require_subcommand(1);
  AddFileCommand(graph, ctx, {"info", "Validate a graph file and summarise it", "graph", "Graph JSON file",
                              [](const std::string& path, bool json) {
                                const Graph g = Unwrap(ReadGraphFile(path));
                                if (json) PrintJson(GraphSummaryJson(g));
                                else PrintHuman(g);
                              }});
  return graph;
}

}  // namespace devplace::cli
