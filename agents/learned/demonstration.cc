#include "agents/learned/demonstration.h"

#include <memory>

#include "agents/search.h"

namespace devplace {

Expected<Demonstration> MakeDemonstration(const PlacementGame& game, const std::vector<std::string>& algorithms,
                                          uint64_t seed) {
  if (algorithms.empty()) return Error{"demonstrations: no algorithm given"};
  const OpGroups& groups = game.groups();
  SearchProblem problem{&game.graph(), &game.topology(), game.cost(), game.config().sim};
  SearchRequest request;
  request.seed = seed;
  Demonstration best;
  for (const std::string& name : algorithms) {
    Expected<std::unique_ptr<SearchAlgorithm>> algorithm = MakeSearchAlgorithm(name);
    if (!algorithm) return Error{"demonstrations: " + algorithm.error().message};
    Expected<SearchResult> found = (*algorithm)->Search(problem, request);
    if (!found) return Error{"demonstrations: " + name + " on '" + game.graph().name() + "': " + found.error().message};
    Demonstration d;
    d.algorithm = name;
    for (int32_t g = 0; g < groups.num_groups(); ++g) {
      const OpConfig& config = found->strategy.configs[groups.members[g].front()];
      if (config.num_parts() == 1) {
        d.device_per_group.push_back(config.devices[0]);
        continue;
      }
      const int32_t split = game.data_parallel_action();
      bool expressible = split >= 0 && game.group_splittable(g);
      for (size_t k = 0; expressible && k < groups.members[g].size(); ++k)
        expressible = found->strategy.configs[groups.members[g][k]] == game.ActionConfig(groups.members[g][k], split);
      if (!expressible)
        return Error{"demonstrations: " + name + " partitions ops in a way the environment's actions cannot express" +
                     (split >= 0 ? "" : " (env.data_parallel_action is off)")};
      d.device_per_group.push_back(split);
    }
    Expected<SimResult> sim = game.Evaluate(d.device_per_group);
    if (!sim) return Error{"demonstrations: " + name + " on '" + game.graph().name() + "': " + sim.error().message};
    d.penalised_time = game.PenalisedTime(CostOf(*sim, game.topology()));
    if (best.device_per_group.empty() || d.penalised_time < best.penalised_time) best = std::move(d);
  }
  return best;
}

}  // namespace devplace
