// The undirected, weighted graph of colocation groups that graph partitioners work on, in CSR form with
// integer weights scaled to fit 32-bit partitioner indices.
#pragma once

#include <cstdint>
#include <vector>

#include "agents/search.h"
#include "core/colocation.h"

namespace devplace {

// Symmetric CSR: the neighbours of group g are adjacency[offsets[g] .. offsets[g+1]), each pair listed in both
// directions with equal weights; parallel edges are merged (bytes summed) and self-loops dropped.
struct GroupGraph {
  OpGroups groups;
  std::vector<int32_t> offsets, adjacency;
  std::vector<int32_t> vertex_weights;  // compute time, scaled to integers >= 1
  std::vector<int32_t> edge_weights;    // bytes, scaled to integers >= 1

  int32_t num_vertices() const { return groups.num_groups(); }
};

GroupGraph BuildGroupGraph(const SearchProblem& problem);

// Expands a device per group to a plain placement of the ops.
Strategy PlacementFromGroups(const OpGroups& groups, const std::vector<int32_t>& device_of_group);

}  // namespace devplace
