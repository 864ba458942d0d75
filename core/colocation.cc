#include "core/colocation.h"

#include <string>
#include <unordered_map>

namespace devplace {

OpGroups ColocationGroups(const Graph& graph) {
  OpGroups groups;
  groups.group_of_op.assign(graph.num_ops(), -1);
  std::unordered_map<std::string, int32_t> by_name;
  for (OpId op : graph.topological_order()) {
    const std::string& name = graph.op(op).colocation;
    int32_t group;
    if (name.empty()) {
      group = groups.num_groups();
      groups.members.emplace_back();
    } else {
      auto [it, inserted] = by_name.emplace(name, groups.num_groups());
      if (inserted) groups.members.emplace_back();
      group = it->second;
    }
    groups.group_of_op[op] = group;
    groups.members[group].push_back(op);
  }
  return groups;
}

}  // namespace devplace
