// JSON form of a Strategy (schema in docs/formats.md): ops and devices are referred to by name, so a strategy
// file is readable and survives re-ordering. Readers reject unknown keys and report "<file>: <field>: <reason>".
#pragma once

#include <string>

#include "core/graph.h"
#include "core/mesh.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

// Serialises `strategy` for `graph` on `topology` (format "devplace.strategy", version 1).
std::string StrategyToJson(const Strategy& strategy, const Graph& graph, const Topology& topology);
// Serialises `strategy` in the sharded form: the mesh, and per op the spec on `mesh` whose lowering is its config
// (LiftConfig, core/sharding.h) or, for an op no spec describes, its devices and degrees.
std::string ShardedStrategyToJson(const Strategy& strategy, const Graph& graph, const Topology& topology,
                                  const Mesh& mesh);
// Parses a strategy (plain or sharded form: ops given by spec are lowered on the file's mesh) and validates it against `graph` and `topology` (ValidateStrategy).
Expected<Strategy> StrategyFromJson(const std::string& text, const std::string& source, const Graph& graph,
                                    const Topology& topology);

Expected<Strategy> ReadStrategyFile(const std::string& path, const Graph& graph, const Topology& topology);
Status WriteStrategyFile(const Strategy& strategy, const Graph& graph, const Topology& topology,
                         const std::string& path);
Status WriteShardedStrategyFile(const Strategy& strategy, const Graph& graph, const Topology& topology,
                                const Mesh& mesh, const std::string& path);

}  // namespace devplace
