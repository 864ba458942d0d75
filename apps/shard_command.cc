// `devplace shard -g G.json -t T.yaml --spec S.yaml -o STRATEGY.json [--mesh RxC] [--json]`: propagates a sharding
// spec's annotations to every op (core/sharding_propagation.h), lowers the specs to per-op configs and writes the
// strategy in the sharded JSON form (docs/formats.md). Prints which annotations matched what and which of them are
// needed (the others imply the rest), which forward tensors stayed replicated and which op types had no rule. Nothing is written when any input is bad.
#include <iostream>
#include <map>
#include <memory>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "core/graph_json.h"
#include "core/sharding_io.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"

namespace devplace::cli {
namespace {

struct ShardOptions {
  std::string graph, topology, spec, output, mesh;
  bool json = false;
};

// Counts of forward ops by what propagation made of them.
struct Summary {
  int32_t forward = 0, sharded = 0, partial = 0;
};

Summary Summarise(const Graph& g, const ShardingPlan& plan) {
  Summary s;
  for (OpId o = 0; o < g.num_ops(); ++o) {
    if (g.op(o).role != OpRole::kForward) continue;
    ++s.forward;
    s.sharded += plan.specs[o].is_replicated() ? 0 : 1;
    s.partial += plan.specs[o].partial.empty() ? 0 : 1;
  }
  return s;
}

// Collectives over the forward edges by kind (ReshardKind order), e.g. {"all-reduce": 48}.
std::map<std::string, int64_t> Conversions(const Graph& g, const ShardingPlan& plan) {
  std::map<std::string, int64_t> counts;
  for (const std::vector<ReshardStep>& steps : ForwardEdgeResharding(g, plan.specs))
    for (const ReshardStep& step : steps) ++counts[std::string(ToString(step.kind))];
  return counts;
}

nlohmann::json Names(const Graph& g, const std::vector<OpId>& ops) {
  nlohmann::json list = nlohmann::json::array();
  for (OpId o : ops) list.push_back(g.op(o).name);
  return list;
}

nlohmann::json ReportJson(const Graph& g, const ShardingRequest& req, const ShardingPlan& plan,
                          const std::vector<char>& needed, const std::string& output) {
  const Summary s = Summarise(g, plan);
  nlohmann::json annotations = nlohmann::json::array();
  for (size_t i = 0; i < req.annotations.size(); ++i)
    annotations.push_back({{"origin", req.annotations[i].origin},
                           {"ops", req.annotations[i].pattern},
                           {"spec", FormatSpec(req.annotations[i].spec, req.mesh)},
                           {"matched_ops", plan.ops_per_annotation[i]},
                           {"needed", needed[i] != 0}});
  return {{"graph", g.name()},
          {"mesh", {{"name", req.mesh.name}, {"shape", req.mesh.shape}, {"axes", req.mesh.axes}}},
          {"annotations", annotations},
          {"zero", req.zero_axis < 0 ? nlohmann::json(nullptr)
                                     : nlohmann::json{{"axis", req.mesh.axes[req.zero_axis]},
                                                      {"stage", req.zero_stage}}},
          {"ops", g.num_ops()},
          {"forward_ops", s.forward},
          {"forward_sharded", s.sharded},
          {"forward_partial", s.partial},
          {"replicated", Names(g, plan.replicated)},
          {"unknown_types", plan.unknown_types},
          {"unknown_ops", Names(g, plan.unknown_ops)},
          {"conversions", Conversions(g, plan)},
          {"sweeps", plan.iterations},
          {"output", output}};
}

// At most `limit` names, then "... and N more".
std::string NameList(const Graph& g, const std::vector<OpId>& ops, size_t limit = 8) {
  std::string out;
  for (size_t i = 0; i < ops.size() && i < limit; ++i) out += (i ? ", " : "") + g.op(ops[i]).name;
  if (ops.size() > limit) out += ", ... and " + std::to_string(ops.size() - limit) + " more";
  return out;
}

void PrintHuman(const Graph& g, const Topology& t, const ShardingRequest& req, const ShardingPlan& plan,
                const std::vector<char>& needed, const std::string& output) {
  const Summary s = Summarise(g, plan);
  std::string axes;
  for (const std::string& a : req.mesh.axes) axes += (axes.empty() ? "" : ", ") + a;
  std::cout << "sharded '" << g.name() << "' (" << g.num_ops() << " ops) on mesh '" << req.mesh.name << "' "
            << FormatShape(req.mesh.shape) << " (" << axes << ") of '" << t.name() << "'\n"
            << "  annotations:\n";
  for (size_t i = 0; i < req.annotations.size(); ++i)
    std::cout << "    " << req.annotations[i].pattern << " -> " << FormatSpec(req.annotations[i].spec, req.mesh)
              << "  (" << plan.ops_per_annotation[i] << " ops"
              << (needed[i] ? "" : "; implied by the others") << ")\n";
  if (req.zero_axis >= 0)
    std::cout << "  ZeRO:          stage " << req.zero_stage << " over '" << req.mesh.axes[req.zero_axis] << "'\n";
  std::cout << "  forward ops:   " << s.forward << ", " << s.sharded << " sharded (" << s.partial
            << " partial sums), " << plan.replicated.size() << " replicated\n"
            << "  propagation:   " << plan.iterations << " sweeps\n";
  std::string conversions;
  for (const auto& [kind, count] : Conversions(g, plan))
    conversions += (conversions.empty() ? "" : ", ") + std::to_string(count) + " " + kind;
  std::cout << "  conversions:   " << (conversions.empty() ? "none" : conversions) << " (forward edges)\n";
  if (!plan.replicated.empty()) std::cout << "  replicated:    " << NameList(g, plan.replicated) << "\n";
  if (!plan.unknown_types.empty()) {
    std::string types;
    for (const std::string& ty : plan.unknown_types) types += (types.empty() ? "" : ", ") + ty;
    std::cout << "  no rule for:   " << types << " (" << plan.unknown_ops.size() << " ops replicated)\n";
  }
  std::cout << "  wrote " << output << "\n";
}

}  // namespace

void RegisterShardCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<ShardOptions>();
  CLI::App* cmd = app.add_subcommand("shard", "Propagate sharding annotations over a device mesh into a strategy");
  cmd->add_option("-g,--graph", opts->graph, "Graph JSON file")->required();
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file (may declare meshes:)")->required();
  cmd->add_option("--spec", opts->spec, "Sharding spec YAML (mesh and annotations; see configs/sharding/)")
      ->required();
  cmd->add_option("-o,--output", opts->output, "Strategy JSON file to write (sharded form)")->required();
  cmd->add_option("--mesh", opts->mesh, "Mesh shape, e.g. 2x4, replacing the spec's (its axis names kept)");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    const Graph graph = Unwrap(ReadGraphFile(opts->graph));
    const Topology topology = Unwrap(ReadTopologyFile(opts->topology));
    const std::vector<Mesh> meshes = Unwrap(ReadTopologyMeshes(opts->topology, topology));
    const ShardingRequest request = Unwrap(ReadShardingRequestFile(opts->spec, topology, meshes, opts->mesh));
    const ShardingPlan plan = Unwrap(PropagateSharding(graph, request.mesh, request.annotations, request.zero_axis));
    const Strategy strategy = Unwrap(LowerSpecs(graph, plan.specs, request.mesh, request.weight_shard_axis()));
    if (Status st = ValidateStrategy(strategy, graph, topology); !st.ok())
      throw CliError(opts->spec + ": the propagated strategy is invalid: " + st.error().message);
    const std::vector<char> needed = NeededAnnotations(graph, request.mesh, request.annotations, plan, request.zero_axis);
    Check(WriteShardedStrategyFile(strategy, graph, topology, request.mesh, opts->output));
    if (opts->json)
      PrintJson(ReportJson(graph, request, plan, needed, opts->output));
    else
      PrintHuman(graph, topology, request, plan, needed, opts->output);
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
