#include "core/colocation.h"

#include <string>
#include <unordered_map>
#include <utility>

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

std::vector<int32_t> GroupLayerIndex(const Graph& graph, const OpGroups& groups) {
  std::vector<int32_t> layer_of_group(static_cast<size_t>(groups.num_groups()));
  std::unordered_map<std::string, int32_t> index;
  for (int32_t g = 0; g < groups.num_groups(); ++g) {
    const Op& first = graph.op(groups.members[g].front());
    std::string key = first.layer.empty() ? "\x01group" + std::to_string(g) : first.layer;
    layer_of_group[g] = index.emplace(std::move(key), static_cast<int32_t>(index.size())).first->second;
  }
  return layer_of_group;
}

}  // namespace devplace
