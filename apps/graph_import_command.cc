// `devplace graph import FILE [--batch B] [--dim NAME=N]... [--forward-only] -o G.json` for ONNX models and PyTorch
// execution traces, and `devplace graph import TRACE --device-kind K -o G.json [--costs C.json]` for traces with
// recorded runtimes (Chakra JSON or .et, Kineto), which are written as a profiled cost table beside the graph
// (G.costs.json unless --costs says otherwise). Gzipped files are read directly.
#include <algorithm>
#include <iostream>
#include <map>
#include <tuple>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "core/graph_json.h"
#include "datasets/import/importers.h"
#include "sim/cost_model.h"

namespace devplace::cli {

namespace {

// "G.json" -> "G.costs.json"; other names get ".costs.json" appended.
std::string CostsPathFor(const std::string& graph_path) {
  const std::string ext = ".json";
  if (graph_path.size() > ext.size() && graph_path.compare(graph_path.size() - ext.size(), ext.size(), ext) == 0)
    return graph_path.substr(0, graph_path.size() - ext.size()) + ".costs.json";
  return graph_path + ".costs.json";
}

// One profiled entry per distinct signature (op type, role, dtype, shape, FLOPs), with the mean of the recorded
// runtimes of the ops that share it (ops without a recorded runtime are left to the analytic fallback).
CostTable MeasuredCostTable(const Graph& g, const std::vector<double>& seconds, const std::string& device_kind) {
  using Key = std::tuple<std::string, OpRole, DType, std::vector<int64_t>, double>;
  std::map<Key, std::pair<double, int>> sums;
  for (OpId i = 0; i < g.num_ops(); ++i) {
    if (seconds[i] <= 0) continue;
    const Op& op = g.op(i);
    auto& [sum, count] = sums[Key{op.type, op.role, op.dtype, op.shape, op.flops}];
    sum += seconds[i];
    ++count;
  }
  CostTable table;
  for (const auto& [key, total] : sums) {
    const auto& [type, role, dtype, shape, flops] = key;
    table.entries.push_back(OpTiming{device_kind, type, role, dtype, shape, flops, total.first / total.second});
  }
  return table;
}

}  // namespace

void RegisterGraphImportCommand(CLI::App& graph, CommandContext& ctx) {
  struct Options {
    std::string input, output, costs, device_kind;
    int64_t batch = 0;
    std::vector<std::string> dims;
    bool forward_only = false, json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = graph.add_subcommand(
      "import", "Import an ONNX model or an execution trace (Chakra JSON or .et, PyTorch, Kineto) as a graph");
  cmd->add_option("file", opts->input,
                  "Model file: .onnx, or a trace: Chakra JSON or .et, PyTorch execution trace, Kineto (also .gz)")
      ->required();
  cmd->add_option("--batch", opts->batch, "ONNX: batch size of the data inputs (default: the model's, 1 if symbolic)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--dim", opts->dims, "ONNX: size of another symbolic input dimension, NAME=N (repeatable)");
  cmd->add_flag("--forward-only", opts->forward_only, "ONNX: write the forward graph, not the training graph");
  cmd->add_option("--device-kind", opts->device_kind,
                  "Timed traces (Chakra, Kineto): kind of the devices the trace was recorded on, as the topology "
                  "names it (e.g. v100)");
  cmd->add_option("--costs", opts->costs,
                  "Timed traces: where to write the profiled cost table (default: G.costs.json)");
  cmd->add_option("-o,--output", opts->output, "Output graph JSON file")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->callback([opts, &ctx]() {
    ImportOptions options;
    options.batch = opts->batch;
    options.derive_training = !opts->forward_only;
    for (const std::string& d : opts->dims) {
      const size_t eq = d.find('=');
      int64_t value = 0;
      try {
        if (eq == std::string::npos || eq == 0) throw std::invalid_argument(d);
        size_t used = 0;
        value = std::stoll(d.substr(eq + 1), &used);
        if (used != d.size() - eq - 1 || value <= 0) throw std::invalid_argument(d);
      } catch (const std::exception&) {
        throw CliError("--dim " + d + ": expected NAME=N with N > 0");
      }
      options.dims[d.substr(0, eq)] = value;
    }
    ImportResult r = Unwrap(ImportModelFile(opts->input, options));
    std::string costs_path;
    const bool timed = std::any_of(r.measured_seconds.begin(), r.measured_seconds.end(), [](double t) { return t > 0; });
    if (timed) {
      if (opts->device_kind.empty())
        throw CliError(opts->input + ": a trace with recorded runtimes needs --device-kind (the kind of the devices "
                                     "it was recorded on, as the topology names them, e.g. v100)");
      costs_path = opts->costs.empty() ? CostsPathFor(opts->output) : opts->costs;
    } else if (!opts->costs.empty() || !opts->device_kind.empty()) {
      throw CliError(opts->input + ": --costs and --device-kind apply to traces with recorded runtimes only (this " +
                     r.format + " file records none)");
    }
    for (const std::string& w : r.warnings) std::cerr << "warning: " << w << "\n";
    Check(WriteGraphFile(r.graph, opts->output));
    size_t entries = 0;
    if (!costs_path.empty()) {
      CostTable table = MeasuredCostTable(r.graph, r.measured_seconds, opts->device_kind);
      entries = table.entries.size();
      Check(WriteCostTableFile(table, costs_path));
    }
    const Graph& g = r.graph;
    if (opts->json) {
      nlohmann::json out = {{"path", opts->output},
                            {"format", r.format},
                            {"name", g.name()},
                            {"num_ops", g.num_ops()},
                            {"num_edges", g.num_edges()},
                            {"total_flops", g.total_flops()},
                            {"param_bytes", g.total_param_bytes()},
                            {"warnings", r.warnings}};
      if (!costs_path.empty()) {
        out["costs_path"] = costs_path;
        out["cost_entries"] = entries;
      }
      PrintJson(out);
    } else {
      std::cout << "imported " << opts->input << " (" << r.format << ") -> " << opts->output << ": graph " << g.name()
                << ", " << g.num_ops() << " ops (" << g.count_role(OpRole::kForward) << " forward, "
                << g.count_role(OpRole::kBackward) << " backward, " << g.count_role(OpRole::kUpdate) << " update), "
                << g.num_edges() << " edges, " << FormatCount(g.total_flops()) << "FLOPs per step, "
                << FormatBytes(static_cast<double>(g.total_param_bytes())) << " of parameters\n";
      if (!costs_path.empty())
        std::cout << "wrote " << costs_path << ": " << entries << " measured op times for device kind '"
                  << opts->device_kind << "'\n";
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
