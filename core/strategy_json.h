// JSON form of a Strategy (schema in docs/formats.md): ops and devices are referred to by name, so a strategy
// file is readable and survives re-ordering. Readers reject unknown keys and report "<file>: <field>: <reason>".
#pragma once

#include <string>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

// Serialises `strategy` for `graph` on `topology` (format "devplace.strategy", version 1).
std::string StrategyToJson(const Strategy& strategy, const Graph& graph, const Topology& topology);
// Parses a strategy and validates it against `graph` and `topology` (ValidateStrategy).
Expected<Strategy> StrategyFromJson(const std::string& text, const std::string& source, const Graph& graph,
                                    const Topology& topology);

Expected<Strategy> ReadStrategyFile(const std::string& path, const Graph& graph, const Topology& topology);
Status WriteStrategyFile(const Strategy& strategy, const Graph& graph, const Topology& topology,
                         const std::string& path);

}  // namespace devplace
