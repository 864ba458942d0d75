#include "core/strategy_json.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_reader.h"
#include "core/sharding_json.h"

namespace devplace {

namespace {
constexpr const char* kFormat = "devplace.strategy";
constexpr int kVersion = 1;

// The document of `strategy`; with a mesh, ops whose config a spec describes are written as that spec.
std::string ToJson(const Strategy& strategy, const Graph& graph, const Topology& topology, const Mesh* mesh) {
  nlohmann::json ops = nlohmann::json::array();
  for (OpId i = 0; i < graph.num_ops(); ++i) {
    const OpConfig& c = strategy.configs[i];
    nlohmann::json entry = {{"op", graph.op(i).name}};
    if (std::optional<ShardingSpec> spec = mesh ? LiftConfig(graph.op(i), c, *mesh) : std::nullopt) {
      entry["spec"] = SpecDimsToJson(*spec, *mesh);
      if (!spec->partial.empty()) entry["partial"] = SpecPartialToJson(*spec, *mesh);
    } else {
      nlohmann::json devices = nlohmann::json::array();
      for (DeviceId d : c.devices) devices.push_back(topology.device(d).name);
      entry["devices"] = std::move(devices);
      if (!c.degrees.empty()) entry["degrees"] = c.degrees;
    }
    if (c.shard_weights) entry["shard_weights"] = true;
    ops.push_back(std::move(entry));
  }
  nlohmann::json doc = {{"format", kFormat}, {"version", kVersion}, {"graph", graph.name()}, {"topology", topology.name()}};
  if (mesh) doc["mesh"] = MeshToJson(*mesh, topology);
  doc["ops"] = std::move(ops);
  return doc.dump(1) + "\n";
}

}  // namespace

std::string StrategyToJson(const Strategy& strategy, const Graph& graph, const Topology& topology) {
  return ToJson(strategy, graph, topology, nullptr);
}

std::string ShardedStrategyToJson(const Strategy& strategy, const Graph& graph, const Topology& topology,
                                  const Mesh& mesh) {
  return ToJson(strategy, graph, topology, &mesh);
}

Expected<Strategy> StrategyFromJson(const std::string& text, const std::string& source, const Graph& graph,
                                    const Topology& topology) {
  Expected<Strategy> parsed = CatchInputErrors<Strategy>([&]() {
    nlohmann::json doc = ParseJson(text, source);
    JsonObject root(doc, source, "");
    if (root.string("format") != kFormat) root.fail("format", std::string("expected \"") + kFormat + "\"");
    root.integer("version", kVersion, kVersion);
    const std::string for_graph = root.string_or("graph", "");  // empty: made by hand, for any graph
    if (!for_graph.empty() && for_graph != graph.name())
      root.fail("graph", "the strategy is for graph '" + for_graph + "', not '" + graph.name() + "'");
    root.string_or("topology", "");  // informational
    std::optional<Mesh> mesh;
    if (const nlohmann::json* m = root.optional("mesh")) mesh = ReadMeshJson(*m, source, "mesh", topology, false);
    const nlohmann::json& ops = RequireArray(root.required("ops"), source, "ops");
    if (static_cast<int64_t>(ops.size()) != graph.num_ops())
      FailAt(source, "ops", "has " + std::to_string(ops.size()) + " entries but graph '" + graph.name() + "' has " +
                                std::to_string(graph.num_ops()) + " ops");
    Strategy s;
    s.configs.resize(ops.size());
    std::vector<char> seen(ops.size(), 0);
    for (size_t i = 0; i < ops.size(); ++i) {
      std::string path = "ops[" + std::to_string(i) + "]";
      JsonObject entry(ops[i], source, path);
      std::string name = entry.string("op");
      OpId id = graph.find(name);
      if (id < 0) entry.fail("op", "no op named '" + name + "' in graph '" + graph.name() + "'");
      if (seen[id]) entry.fail("op", "op '" + name + "' appears twice");
      seen[id] = 1;
      OpConfig& c = s.configs[id];
      if (entry.has("spec")) {
        if (!mesh) entry.fail("spec", "ops given by spec need a top-level mesh");
        if (entry.has("devices") || entry.has("degrees")) entry.fail("spec", "give either spec or devices, not both");
        ShardingSpec spec = ReadSpecJson(entry.required("spec"), entry.path_of("spec"), entry.optional("partial"),
                                         entry.path_of("partial"), source, *mesh);
        Expected<OpConfig> lowered = LowerSpec(graph.op(id), spec, *mesh);
        if (!lowered.ok()) entry.fail("spec", lowered.error().message);
        c = std::move(*lowered);
        c.shard_weights = entry.boolean_or("shard_weights", false);
        entry.finish();
        continue;
      }
      const nlohmann::json& devices = RequireArray(entry.required("devices"), source, entry.path_of("devices"));
      for (size_t k = 0; k < devices.size(); ++k) {
        std::string dpath = entry.path_of("devices") + "[" + std::to_string(k) + "]";
        std::string dname = ReadString(devices[k], source, dpath);
        DeviceId d = topology.find_device(dname);
        if (d < 0) FailAt(source, dpath, "unknown device '" + dname + "' (topology '" + topology.name() + "')");
        c.devices.push_back(d);
      }
      if (const nlohmann::json* degrees = entry.optional("degrees")) {
        RequireArray(*degrees, source, entry.path_of("degrees"));
        for (size_t k = 0; k < degrees->size(); ++k)
          c.degrees.push_back(static_cast<int32_t>(ReadInteger(
              (*degrees)[k], source, entry.path_of("degrees") + "[" + std::to_string(k) + "]", 1, 1 << 20)));
      }
      c.shard_weights = entry.boolean_or("shard_weights", false);
      entry.finish();
    }
    root.finish();
    return s;
  });
  if (!parsed.ok()) return parsed;
  if (Status st = ValidateStrategy(*parsed, graph, topology); !st.ok()) return Error{source + ": " + st.error().message};
  return parsed;
}

Expected<Strategy> ReadStrategyFile(const std::string& path, const Graph& graph, const Topology& topology) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return StrategyFromJson(*text, path, graph, topology);
}

Status WriteStrategyFile(const Strategy& strategy, const Graph& graph, const Topology& topology,
                         const std::string& path) {
  return WriteFileAtomic(path, StrategyToJson(strategy, graph, topology));
}

Status WriteShardedStrategyFile(const Strategy& strategy, const Graph& graph, const Topology& topology,
                                const Mesh& mesh, const std::string& path) {
  return WriteFileAtomic(path, ShardedStrategyToJson(strategy, graph, topology, mesh));
}

}  // namespace devplace
