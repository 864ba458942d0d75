// `devplace graph info G.json [--json]`: summarises a graph file.
// `devplace graph export G.json --format dot [-t T.yaml -p P.json] [--max-ops N] [-o G.dot]`: draws it (Graphviz).
// (`graph gen`, `graph model` and `graph import` live in their own files and add to the same `graph` group.)
#include <iostream>
#include <map>
#include <optional>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/file_command.h"
#include "apps/inputs.h"
#include "core/atomic_file.h"
#include "core/graph_dot.h"
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

void RegisterGraphExportCommand(CLI::App& graph, CommandContext& ctx) {
  struct Options {
    std::string path, format = "dot", topology, strategy, output;
    int32_t max_ops = DotOptions{}.max_ops;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = graph.add_subcommand("export", "Draw a graph for Graphviz (coloured by device with a strategy)");
  cmd->add_option("graph", opts->path, "Graph JSON file")->required();
  cmd->add_option("--format", opts->format, "Output format")->check(CLI::IsMember({"dot"}))->capture_default_str();
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file (needed with --placement)");
  cmd->add_option("-p,--placement", opts->strategy, "Strategy JSON file: fill each op with its device's colour");
  cmd->add_option("--max-ops", opts->max_ops, "Collapse graphs with more ops than this to one node per layer (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Write to this file (default: stdout)");
  cmd->add_flag("--json", opts->json, "With -o: print one JSON object describing what was written");
  cmd->callback([opts, &ctx]() {
    if (!opts->strategy.empty() && opts->topology.empty()) throw CliError("--placement needs --topology");
    if (opts->json && opts->output.empty()) throw CliError("--json needs -o (the drawing itself goes to stdout)");
    const Graph g = LoadGraph(opts->path);
    std::optional<Topology> topology;
    std::optional<Strategy> strategy;
    if (!opts->topology.empty()) topology = LoadTopology(opts->topology);
    if (!opts->strategy.empty()) strategy = LoadStrategy(opts->strategy, g, *topology);
    const DotOptions options{.max_ops = opts->max_ops};
    const std::string dot = Unwrap(GraphToDot(g, topology ? &*topology : nullptr, strategy ? &*strategy : nullptr,
                                              options));
    if (opts->output.empty()) {
      std::cout << dot;
    } else {
      Check(WriteFileAtomic(opts->output, dot));
      const bool collapsed = options.max_ops > 0 && g.num_ops() > options.max_ops;
      if (opts->json)
        PrintJson({{"graph", g.name()}, {"format", opts->format}, {"output", opts->output}, {"collapsed", collapsed}});
      else
        std::cerr << "wrote " << opts->output << (collapsed ? " (collapsed by layer)" : "") << "\n";
    }
    ctx.exit_code = 0;
  });
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
  RegisterGraphExportCommand(*graph, ctx);
  return graph;
}

}  // namespace devplace::cli
