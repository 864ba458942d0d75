#include "agents/learned/demonstration.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>

#include "agents/search.h"

namespace devplace {

namespace {

// The split action of `game` whose configs equal the strategy's for every member of group `g`, or -1.
int32_t ExactSplit(const PlacementGame& game, const Strategy& strategy, int32_t g) {
  const std::vector<OpId>& members = game.groups().members[g];
  for (int32_t a = game.num_devices(); a < game.num_actions(); ++a) {
    if (!game.can_split(g, a)) continue;
    bool equal = true;
    for (size_t k = 0; equal && k < members.size(); ++k)
      equal = strategy.configs[members[k]] == game.ActionConfig(members[k], a);
    if (equal) return a;
  }
  return -1;
}

// SOAP games: the split action closest to the leader's config: the candidate with the same device set and the
// kind of the leader's most-split dimension if the group can take it, else the same device set with any kind,
// else -1.
int32_t ProjectedSplit(const PlacementGame& game, const Strategy& strategy, int32_t g) {
  const OpId leader = game.groups().members[g].front();
  const OpConfig& config = strategy.configs[leader];
  std::vector<DeviceId> devices = config.devices;
  std::sort(devices.begin(), devices.end());
  std::optional<DimKind> kind;
  int32_t most = 1;
  for (size_t k = 0; k < config.degrees.size(); ++k)
    if (config.degrees[k] > most) {
      most = config.degrees[k];
      kind = game.graph().op(leader).dims[k].kind;
    }
  int32_t same_devices = -1;
  for (int32_t a = game.num_devices(); a < game.num_actions(); ++a) {
    const SplitCandidate& c = game.candidate(a - game.num_devices());
    if (!game.can_split(g, a)) continue;
    std::vector<DeviceId> set = c.devices;  // candidates list their devices in ring order (env/candidates.h)
    std::sort(set.begin(), set.end());
    if (set != devices) continue;
    if (c.kind == kind) return a;
    if (same_devices < 0) same_devices = a;
  }
  return same_devices;
}

}  // namespace

Expected<Demonstration> MakeDemonstration(const PlacementGame& game, const std::vector<std::string>& algorithms,
                                          uint64_t seed) {
  if (algorithms.empty()) return Error{"demonstrations: no algorithm given"};
  const OpGroups& groups = game.groups();
  const bool soap = game.config().action_space == ActionSpace::kSoap;
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
      int32_t action = ExactSplit(game, found->strategy, g);
      if (action < 0 && soap) {
        action = ProjectedSplit(game, found->strategy, g);
        // Nothing close: the group's first device (its share of the work stays with the leader's part 0).
        if (action < 0) action = config.devices[0];
        ++d.projected_groups;
      }
      if (action < 0)
        return Error{"demonstrations: " + name + " partitions ops in a way the environment's actions cannot express" +
                     (game.data_parallel_action() >= 0 ? "" : " (env.data_parallel_action is off)")};
      d.device_per_group.push_back(action);
    }
    Expected<SimResult> sim = game.Evaluate(d.device_per_group);
    if (!sim) return Error{"demonstrations: " + name + " on '" + game.graph().name() + "': " + sim.error().message};
    d.penalised_time = game.PenalisedTime(CostOf(*sim, game.topology()));
    if (best.device_per_group.empty() || d.penalised_time < best.penalised_time) best = std::move(d);
  }
  return best;
}

Expected<int64_t> RefineDemonstration(const PlacementGame& game, int32_t groups, int32_t rounds, Demonstration* d) {
  const int32_t n = game.num_groups();
  if (static_cast<int32_t>(d->device_per_group.size()) != n) return Error{"refine: the demonstration has the wrong size"};
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  const DeviceId reference = game.reference_device();
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return game.group_seconds(a, reference) > game.group_seconds(b, reference);
  });
  order.resize(std::min(n, std::max(0, groups)));
  std::vector<int32_t> actions = d->device_per_group;
  int64_t evaluations = 0;
  auto time_of = [&](const std::vector<int32_t>& a) -> Expected<double> {
    Expected<SimResult> sim = game.Evaluate(a);
    if (!sim) return Error{"refine on '" + game.graph().name() + "': " + sim.error().message};
    ++evaluations;
    return game.PenalisedTime(CostOf(*sim, game.topology()));
  };
  Expected<double> start = time_of(actions);
  if (!start) return start.error();
  double best = *start;
  for (int32_t round = 0; round < rounds; ++round) {
    bool changed = false;
    for (int32_t g : order) {
      const int32_t current = actions[g];
      int32_t chosen = current;
      for (int32_t a = 0; a < game.num_actions(); ++a) {
        if (a == current || (game.is_split(a) && !game.can_split(g, a))) continue;
        actions[g] = a;
        Expected<double> t = time_of(actions);
        if (!t) return t.error();
        if (*t < best) {
          best = *t;
          chosen = a;
        }
      }
      actions[g] = chosen;
      changed = changed || chosen != current;
    }
    if (!changed) break;
  }
  if (best < d->penalised_time) {
    d->algorithm += "+refine";
    d->penalised_time = best;
    d->device_per_group = std::move(actions);
  }
  return evaluations;
}

}  // namespace devplace
