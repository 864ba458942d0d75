#include <utility>

#include "agents/search.h"
#include "agents/auto_shard.h"
#include "agents/baechi_placers.h"
#include "agents/expert_placer.h"
#include "agents/mcmc_search.h"
#include "agents/partitioner_placers.h"
#include "agents/pipeline_dp.h"
#include "agents/simple_placers.h"
#include "agents/tofu_dp.h"
#include "core/check.h"
#include "sim/estimates.h"

namespace devplace {

Status CheckSearchProblem(const SearchProblem& problem) {
  if (problem.graph == nullptr) return Error{"search: the problem has no graph"};
  if (problem.topology == nullptr) return Error{"search: the problem has no topology"};
  if (Status s = CheckTrainingGraph(*problem.graph); !s) return s;
  if (problem.topology->num_devices() < 1)
    return Error{"topology '" + problem.topology->name() + "' has no devices"};
  return ValidateSimOptions(problem.sim);
}

Expected<SearchResult> SearchAlgorithm::Search(const SearchProblem& problem, const SearchRequest& request) const {
  if (Status s = CheckSearchProblem(problem); !s) return Error{name() + ": " + s.error().message};
  if (request.initial != nullptr && refines_initial())
    if (Status s = ValidateStrategy(*request.initial, *problem.graph, *problem.topology); !s)
      return Error{name() + ": initial strategy: " + s.error().message};
  return DoSearch(problem, request);
}

void SearchRegistry::Add(std::string name, Factory factory) {
  DEVPLACE_CHECK(!name.empty(), "a search needs a name");
  for (const auto& [known, f] : entries_) DEVPLACE_CHECK(known != name, "search '" + name + "' registered twice");
  entries_.emplace_back(std::move(name), std::move(factory));
}

std::vector<std::string> SearchRegistry::names() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : entries_) names.push_back(name);
  return names;
}

std::string SearchRegistry::names_list() const {
  std::string list;
  for (const auto& [name, factory] : entries_) list += (list.empty() ? "" : ", ") + name;
  return list;
}

Expected<std::unique_ptr<SearchAlgorithm>> SearchRegistry::Make(std::string_view name) const {
  for (const auto& [known, factory] : entries_)
    if (known == name) return factory();
  return Error{"unknown algorithm '" + std::string(name) + "' (known: " + names_list() + ")"};
}

void SearchRegistry::AddFunction(std::string name, SearchFunction function) {
  std::string label = name;
  Add(std::move(name), [label, function] { return std::make_unique<FunctionSearch>(label, function); });
}

void RegisterBaselineSearches(SearchRegistry* registry) {
  registry->AddFunction("single", PlaceOnSingleDevice);
  registry->AddFunction("data-parallel", PlaceDataParallel);
  registry->AddFunction("round-robin", PlaceRoundRobin);
  registry->AddFunction("random", PlaceRandomly);
  registry->AddFunction("expert", PlaceLikeAnExpert);
  registry->AddFunction("scotch", PlaceWithScotch);
  registry->AddFunction("metis", PlaceWithMetis);
  registry->AddFunction("m-topo", PlaceMTopo);
  registry->AddFunction("m-etf", PlaceMEtf);
  registry->Add("mcmc", [] { return std::make_unique<McmcSearch>(); });
  registry->Add("mcmc-chains", [] {
    McmcOptions options;
    options.chains = 8;
    return std::make_unique<McmcSearch>(options, "mcmc-chains");
  });
  registry->Add("tofu-dp", [] { return std::make_unique<TofuDpSearch>(); });
  registry->Add("auto-shard", [] { return std::make_unique<AutoShardSearch>(); });
  registry->Add("pipeline-dp", [] { return std::make_unique<PipelineDpSearch>(); });
}

SearchRegistry BaselineSearches() {
  SearchRegistry registry;
  RegisterBaselineSearches(&registry);
  return registry;
}

std::vector<std::string> SearchAlgorithmNames() { return BaselineSearches().names(); }

Expected<std::unique_ptr<SearchAlgorithm>> MakeSearchAlgorithm(std::string_view name) {
  return BaselineSearches().Make(name);
}

}  // namespace devplace
