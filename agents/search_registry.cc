#include <functional>
#include <utility>

#include "agents/search.h"
#include "agents/baechi_placers.h"
#include "agents/expert_placer.h"
#include "agents/mcmc_search.h"
#include "agents/partitioner_placers.h"
#include "agents/simple_placers.h"
#include "agents/tofu_dp.h"

namespace devplace {

namespace {

using Factory = std::function<std::unique_ptr<SearchAlgorithm>()>;

const std::vector<std::pair<std::string, Factory>>& Registry() {
  static const std::vector<std::pair<std::string, Factory>> registry = {
      {"single", [] { return std::make_unique<SingleDevicePlacer>(); }},
      {"data-parallel", [] { return std::make_unique<DataParallelPlacer>(); }},
      {"round-robin", [] { return std::make_unique<RoundRobinPlacer>(); }},
      {"random", [] { return std::make_unique<RandomPlacer>(); }},
      {"expert", [] { return std::make_unique<ExpertPlacer>(); }},
      {"scotch", [] { return std::make_unique<ScotchPlacer>(); }},
      {"metis", [] { return std::make_unique<MetisPlacer>(); }},
      {"m-topo", [] { return std::make_unique<MTopoPlacer>(); }},
      {"m-etf", [] { return std::make_unique<MEtfPlacer>(); }},
      {"mcmc", [] { return std::make_unique<McmcSearch>(); }},
      {"tofu-dp", [] { return std::make_unique<TofuDpSearch>(); }},
  };
  return registry;
}

}  // namespace

std::vector<std::string> SearchAlgorithmNames() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : Registry()) names.push_back(name);
  return names;
}

Expected<std::unique_ptr<SearchAlgorithm>> MakeSearchAlgorithm(std::string_view name) {
  for (const auto& [known, factory] : Registry())
    if (known == name) return factory();
  std::string list;
  for (const std::string& n : SearchAlgorithmNames()) list += (list.empty() ? "" : ", ") + n;
  return Error{"unknown algorithm '" + std::string(name) + "' (known: " + list + ")"};
}

}  // namespace devplace
