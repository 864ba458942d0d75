// JSON form of a Graph (schema in docs/formats.md). Readers reject unknown keys and report
// "<file>: <field path>: <reason>"; writers are deterministic and atomic.
#pragma once

#include <optional>
#include <string>

#include "core/graph.h"
#include "core/status.h"

namespace devplace {

// Serialises `graph` (format "devplace.graph", version 1).
std::string GraphToJson(const Graph& graph);
// Parses and validates a graph; `source` names the input in error messages (usually the file path).
Expected<Graph> GraphFromJson(const std::string& text, const std::string& source);

// The one-pass reader GraphFromJson tries first (no JSON document is built): a builder holding the graph's name,
// ops and edges when `text` is a graph file in the form this reader takes as it is (every field of its JSON type,
// integers written as integers, no unknown or repeated key, at least one op, edges between existing ops), else
// std::nullopt; GraphFromJson then reads the text with its checked reader, which names what is wrong. For every
// text it takes, the builder holds what the checked reader builds.
std::optional<GraphBuilder> GraphBuilderFromJsonFast(const std::string& text);

Expected<Graph> ReadGraphFile(const std::string& path);
Status WriteGraphFile(const Graph& graph, const std::string& path);

}  // namespace devplace
