// Colocation groups: ops that must share a device (a forward op with its backward and update ops, the
// unrolled steps of one RNN layer, ...). Placement algorithms place groups, not ops.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"

namespace devplace {

// The partition of a graph's ops into colocation groups. Ops with an empty colocation form singleton groups.
// Groups are numbered in the topological order of their first member, so group ids follow the data flow.
struct OpGroups {
  std::vector<int32_t> group_of_op;        // indexed by OpId
  std::vector<std::vector<OpId>> members;  // indexed by group id; members in topological order

  int32_t num_groups() const { return static_cast<int32_t>(members.size()); }
};

OpGroups ColocationGroups(const Graph& graph);

// The groups' layers in data-flow order, the units a human expert places: a group belongs to the layer
// (Op::layer) of its first member, and layers are numbered in the order the groups (numbered topologically by
// their first members) first reach them; a group whose first member has no layer is a layer of its own.
// Returns the layer index of every group (in [0, number of layers)).
std::vector<int32_t> GroupLayerIndex(const Graph& graph, const OpGroups& groups);

}  // namespace devplace
