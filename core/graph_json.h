// JSON form of a Graph (schema in docs/formats.md). Readers reject unknown keys and report
// "<file>: <field path>: <reason>"; writers are deterministic and atomic.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/status.h"

namespace devplace {

// Serialises `graph` (format "devplace.graph", version 1).
std::string GraphToJson(const Graph& graph);
// Parses and validates a graph; `source` names the input in error messages (usually the file path).
Expected<Graph> GraphFromJson(const std::string& text, const std::string& source);

Expected<Graph> ReadGraphFile(const std::string& path);
Status WriteGraphFile(const Graph& graph, const std::string& path);

}  // namespace devplace
