// Loading the inputs most commands share (graph, topology, strategy, cost model), each failing with the
// reader's one-line "file: field: reason" error as a CliError.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"

namespace devplace::cli {

Graph LoadGraph(const std::string& path);
Topology LoadTopology(const std::string& path);
Strategy LoadStrategy(const std::string& path, const Graph& graph, const Topology& topology);
// The profiled cost model from `path`, or the default analytic model when `path` is empty.
CostModel LoadCostModel(const std::string& path);

// True when stderr is a terminal (progress lines are drawn only there).
bool StderrIsTerminal();

}  // namespace devplace::cli
