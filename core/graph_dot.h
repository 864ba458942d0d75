// Graphviz DOT rendering of a graph (docs/python.md, `devplace graph export --format dot`): one box per op,
// coloured by device when a strategy is given, ops of a colocation group drawn inside one cluster; large graphs
// collapsed to one box per layer (scope).
#pragma once

#include <cstdint>
#include <string>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

struct DotOptions {
  // Graphs with more ops than this are drawn collapsed by layer; 0 never collapses.
  int32_t max_ops = 300;
};

// The DOT text ("digraph") of `graph`.
// - Detailed (num_ops <= options.max_ops): one node per op labelled with its name and type (backward ops dashed,
//   update ops dotted), one edge per tensor labelled with its size, and one cluster per colocation group of two
//   or more ops.
// - Collapsed: one node per layer (Op::layer; ops without one form "(no layer)") labelled with its op count and
//   FLOPs, one edge per ordered pair of layers that exchange data, labelled with the bytes summed.
// With `strategy` (which needs `topology`), nodes are filled with their device's colour (an op split over
// several devices: striped; a layer: the device running most of its FLOPs) and a legend lists the devices.
// Errors: a strategy without a topology, or one that does not fit (ValidateStrategy's message).
Expected<std::string> GraphToDot(const Graph& graph, const Topology* topology = nullptr,
                                 const Strategy* strategy = nullptr, const DotOptions& options = {});

}  // namespace devplace
