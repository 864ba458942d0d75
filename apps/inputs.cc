#include "apps/inputs.h"

#include <unistd.h>

#include "apps/cli_util.h"
#include "core/graph_json.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"

namespace devplace::cli {

Graph LoadGraph(const std::string& path) { return Unwrap(ReadGraphFile(path)); }

Topology LoadTopology(const std::string& path) { return Unwrap(ReadTopologyFile(path)); }

Strategy LoadStrategy(const std::string& path, const Graph& graph, const Topology& topology) {
  return Unwrap(ReadStrategyFile(path, graph, topology));
}

CostModel LoadCostModel(const std::string& path) {
  return path.empty() ? MakeAnalyticCostModel() : Unwrap(ReadCostModelFile(path));
}

bool StderrIsTerminal() { return ::isatty(STDERR_FILENO) != 0; }

}  // namespace devplace::cli
