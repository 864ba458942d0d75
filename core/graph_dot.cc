#include "core/graph_dot.h"

#include <map>
#include <sstream>
#include <vector>

#include "core/colocation.h"
#include "core/format.h"

namespace devplace {
namespace {

// Colours of devices 0, 1, ... (ColorBrewer's Set3 and Pastel1), cycled on larger machines.
constexpr const char* kPalette[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                    "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
                                    "#fbb4ae", "#b3cde3", "#decbe4", "#fed9a6"};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

const char* DeviceColour(DeviceId device) { return kPalette[device % kPaletteSize]; }

// A DOT double-quoted string.
std::string Quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The attributes of a node run on `devices` (filled with their colours; none: unfilled), with an extra style
// ("dashed", "dotted" or none).
std::string Attributes(const std::vector<DeviceId>& devices, const std::string& extra_style = "") {
  std::string styles = devices.empty() ? "" : devices.size() == 1 ? "filled" : "striped";
  if (!extra_style.empty()) {
    if (!styles.empty()) styles += ',';
    styles += extra_style;
  }
  std::string colours;
  for (DeviceId d : devices) {
    if (!colours.empty()) colours += ':';
    colours += DeviceColour(d);
  }
  std::string out;
  if (!styles.empty()) out += ", style=\"" + styles + "\"";
  if (!colours.empty()) out += ", fillcolor=\"" + colours + "\"";
  return out;
}

void WriteLegend(std::ostringstream& out, const Topology& topology) {
  out << "  subgraph cluster_legend {\n    label=\"devices\";\n";
  for (DeviceId d = 0; d < topology.num_devices(); ++d)
    out << "    legend" << d << " [label=" << Quote(topology.device(d).name) << ", style=\"filled\", fillcolor=\""
        << DeviceColour(d) << "\"];\n";
  out << "  }\n";
}

void WriteDetailed(std::ostringstream& out, const Graph& graph, const Strategy* strategy) {
  auto node = [&](OpId id, const char* indent) {
    const Op& op = graph.op(id);
    const std::string style = op.role == OpRole::kBackward ? "dashed" : op.role == OpRole::kUpdate ? "dotted" : "";
    const std::vector<DeviceId> devices = strategy ? strategy->configs[id].devices : std::vector<DeviceId>{};
    out << indent << "op" << id << " [label=" << Quote(op.name + "\n" + op.type) << Attributes(devices, style)
        << "];\n";
  };
  const OpGroups groups = ColocationGroups(graph);
  for (int32_t g = 0; g < groups.num_groups(); ++g) {
    const std::vector<OpId>& members = groups.members[g];
    if (members.size() < 2) {
      node(members[0], "  ");
      continue;
    }
    out << "  subgraph cluster_group" << g << " {\n    label=" << Quote(graph.op(members[0]).colocation)
        << ";\n    style=\"rounded\";\n";
    for (OpId id : members) node(id, "    ");
    out << "  }\n";
  }
  for (const Edge& e : graph.edges())
    out << "  op" << e.src << " -> op" << e.dst << " [label=" << Quote(FormatBytes(static_cast<double>(e.bytes)))
        << "];\n";
}

void WriteCollapsed(std::ostringstream& out, const Graph& graph, const Topology* topology, const Strategy* strategy) {
  std::map<std::string, int32_t> index;  // layer name -> node id, in order of first appearance
  std::vector<std::string> names;
  std::vector<int32_t> layer_of(graph.num_ops());
  for (OpId id = 0; id < graph.num_ops(); ++id) {
    const std::string layer = graph.op(id).layer.empty() ? "(no layer)" : graph.op(id).layer;
    auto [it, added] = index.emplace(layer, static_cast<int32_t>(names.size()));
    if (added) names.push_back(layer);
    layer_of[id] = it->second;
  }
  const size_t num_layers = names.size();
  std::vector<int32_t> ops(num_layers, 0);
  std::vector<double> flops(num_layers, 0.0);
  const int32_t num_devices = topology ? topology->num_devices() : 0;
  std::vector<double> device_flops(num_layers * num_devices, 0.0);
  for (OpId id = 0; id < graph.num_ops(); ++id) {
    const int32_t l = layer_of[id];
    ++ops[l];
    flops[l] += graph.op(id).flops;
    if (!strategy) continue;
    const OpConfig& config = strategy->configs[id];
    // Every op counts, even a FLOP-free one, so that a layer of only such ops still gets its device.
    for (DeviceId d : config.devices)
      device_flops[l * num_devices + d] += (graph.op(id).flops + 1.0) / config.num_parts();
  }
  for (size_t l = 0; l < num_layers; ++l) {
    std::string fill;
    if (strategy) {
      DeviceId busiest = 0;
      for (DeviceId d = 1; d < num_devices; ++d)
        if (device_flops[l * num_devices + d] > device_flops[l * num_devices + busiest]) busiest = d;
      fill = Attributes({busiest});
    }
    out << "  layer" << l << " [label="
        << Quote(names[l] + "\n" + std::to_string(ops[l]) + " ops, " + FormatCount(flops[l]) + " FLOPs") << fill
        << "];\n";
  }
  std::map<std::pair<int32_t, int32_t>, double> bytes;
  for (const Edge& e : graph.edges())
    if (layer_of[e.src] != layer_of[e.dst]) bytes[{layer_of[e.src], layer_of[e.dst]}] += static_cast<double>(e.bytes);
  for (const auto& [pair, b] : bytes)
    out << "  layer" << pair.first << " -> layer" << pair.second << " [label=" << Quote(FormatBytes(b)) << "];\n";
}

}  // namespace

Expected<std::string> GraphToDot(const Graph& graph, const Topology* topology, const Strategy* strategy,
                                 const DotOptions& options) {
  if (strategy) {
    if (!topology) return Error{"a strategy needs its topology to be drawn"};
    if (Status s = ValidateStrategy(*strategy, graph, *topology); !s.ok()) return s.error();
  }
  std::ostringstream out;
  out << "digraph " << Quote(graph.name()) << " {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n"
      << "  edge [fontsize=8];\n";
  if (options.max_ops > 0 && graph.num_ops() > options.max_ops)
    WriteCollapsed(out, graph, topology, strategy);
  else
    WriteDetailed(out, graph, strategy);
  if (strategy) WriteLegend(out, *topology);
  out << "}\n";
  return out.str();
}

}  // namespace devplace
