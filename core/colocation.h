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

}  // namespace devplace
