// The one interface every placement algorithm implements, from the simple baselines to MCMC and the learned
// policies: (graph, topology, cost model, budget, seed, progress callback) -> strategy, with the evaluations
// used and the wall time reported. Algorithms stop within their budget.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/pipeline.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace devplace {

// Limits on a search. A value <= 0 means "no limit" for that dimension; algorithms that need a limit use
// their documented default when both are unlimited.
struct SearchBudget {
  int64_t max_evaluations = 0;  // simulations (full or delta) the algorithm may run
  double max_seconds = 0.0;     // wall-clock seconds
};

// A progress report: sent by algorithms that evaluate placements, at most a few times per second.
struct SearchProgress {
  int64_t evaluations = 0;
  double seconds = 0.0;
  double best_step_time = 0.0;  // best simulated step time so far (0 when nothing was evaluated yet)
};
using ProgressCallback = std::function<void(const SearchProgress&)>;

// What to place, and on what. The pointers must stay valid during the search.
struct SearchProblem {
  const Graph* graph = nullptr;
  const Topology* topology = nullptr;
  CostModel cost;
  SimOptions sim;
};

// How to search.
struct SearchRequest {
  SearchBudget budget;
  uint64_t seed = 0;
  const Strategy* initial = nullptr;  // a starting strategy, for algorithms that refine one (else ignored)
  ProgressCallback progress;          // may be empty
};

// The outcome of a search.
struct SearchResult {
  Strategy strategy;
  int64_t evaluations = 0;  // simulations run
  double seconds = 0.0;     // wall time of the search
  // Set by pipeline searches (pipeline-dp): the pipeline found, which is what the strategy should be simulated as
  // (SimulatePipeline); `strategy` is then its per-op form for consumers that take one (the search's header says how
  // it lowers the plan).
  std::optional<PipelinePlan> pipeline;
};

// A placement algorithm. Implementations are stateless apart from their settings: Search may be called
// repeatedly and gives the same result for the same problem, request and seed.
class SearchAlgorithm {
 public:
  virtual ~SearchAlgorithm() = default;
  virtual std::string name() const = 0;
  // True for algorithms that start from request.initial when one is given; they never return a strategy that
  // ranks worse than it (sim/objective.h). The others ignore request.initial.
  virtual bool refines_initial() const { return false; }
  // Checks the problem (CheckSearchProblem) and, for algorithms that refine one, the initial strategy against
  // the graph and topology, then runs the algorithm (DoSearch). The strategy respects colocation groups and
  // validates against the problem's graph and topology.
  Expected<SearchResult> Search(const SearchProblem& problem, const SearchRequest& request) const;

 protected:
  // The algorithm itself, called by Search with a checked problem.
  virtual Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const = 0;
};

// A search that is one function of its problem and request (the one-shot placers: single, data-parallel,
// round-robin, random, expert, m-TOPO, m-ETF, Scotch, METIS), named for the registry.
using SearchFunction = Expected<SearchResult> (*)(const SearchProblem& problem, const SearchRequest& request);

// The SearchAlgorithm `name` that runs `function` after Search's checks.
class FunctionSearch final : public SearchAlgorithm {
 public:
  FunctionSearch(std::string name, SearchFunction function) : name_(std::move(name)), function_(function) {}
  std::string name() const override { return name_; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override {
    return function_(problem, request);
  }

 private:
  std::string name_;
  SearchFunction function_;
};

// What every search requires of its problem: a graph and a topology, a graph one can train
// (sim/estimates.h CheckTrainingGraph: at least one op, at least one with FLOPs or parameters), at least one device and
// valid simulation options. Errors name what is missing.
Status CheckSearchProblem(const SearchProblem& problem);

// The searches a program offers, by name: each library adds its own (RegisterBaselineSearches here,
// RegisterLearnedSearches in agents/learned/learned_search.h), and programs and tests build the registry
// they need. A value, not a global: nothing registers itself.
class SearchRegistry {
 public:
  using Factory = std::function<std::unique_ptr<SearchAlgorithm>()>;
  // Adds `name` (non-empty, not yet registered: a programming error otherwise) made by `factory`.
  void Add(std::string name, Factory factory);
  // Registered names, in the order they were added (the order they are listed to users).
  std::vector<std::string> names() const;
  // "a, b, c": the names for help texts and errors.
  std::string names_list() const;
  // The algorithm called `name`; an error lists the registered names.
  Expected<std::unique_ptr<SearchAlgorithm>> Make(std::string_view name) const;
  // Adds `name` as a FunctionSearch of `function`.
  void AddFunction(std::string name, SearchFunction function);

 private:
  std::vector<std::pair<std::string, Factory>> entries_;
};

// Adds the search baselines of this library (single, data-parallel, round-robin, random, expert, scotch, metis,
// m-topo, m-etf, mcmc, tofu-dp, auto-shard, pipeline-dp with its default options), in that order.
void RegisterBaselineSearches(SearchRegistry* registry);

// A registry holding the baselines only (RegisterBaselineSearches): for programs without the learned searches.
SearchRegistry BaselineSearches();
// BaselineSearches().names().
std::vector<std::string> SearchAlgorithmNames();
// BaselineSearches().Make(name).
Expected<std::unique_ptr<SearchAlgorithm>> MakeSearchAlgorithm(std::string_view name);

}  // namespace devplace
