// The one interface every placement algorithm implements, from the simple baselines to MCMC and the learned
// policies: (graph, topology, cost model, budget, seed, progress callback) -> strategy, with the evaluations
// used and the wall time reported. Algorithms stop within their budget.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
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
};

// A placement algorithm. Implementations are stateless apart from their settings: Search may be called
// repeatedly and gives the same result for the same problem, request and seed.
class SearchAlgorithm {
 public:
  virtual ~SearchAlgorithm() = default;
  virtual std::string name() const = 0;
  // The strategy respects colocation groups and validates against the problem's graph and topology.
  virtual Expected<SearchResult> Search(const SearchProblem& problem, const SearchRequest& request) const = 0;
};

// Names accepted by MakeSearchAlgorithm, in the order they are listed to users.
std::vector<std::string> SearchAlgorithmNames();
// The algorithm called `name`; an error lists the known names.
Expected<std::unique_ptr<SearchAlgorithm>> MakeSearchAlgorithm(std::string_view name);

}  // namespace devplace
