// FlexFlow's MCMC search (Jia, Zaharia, Aiken, "Beyond Data and Model Parallelism for Deep Neural Networks",
// SysML 2019, section 6): Metropolis-Hastings over per-op configs, one colocation group changed per proposal,
// each proposal priced by delta simulation.
#pragma once

#include <string>
#include <utility>

#include "agents/search.h"

namespace devplace {

// Settings of the MCMC search.
struct McmcOptions {
  // Acceptance of a worse proposal: min(1, exp(beta * (cost(S) - cost(S*)) / cost(S0))), with costs relative to the
  // initial strategy's cost S0 so that beta does not depend on the graph's scale (a 1% worse step is accepted
  // with probability exp(-beta / 100)).
  double beta = 200.0;
  // Probability that a proposal splits the group data-parallel (sample dimension, where every member can be
  // split) over a random set of devices, instead of moving it whole to one random device.
  double partition_probability = 0.1;
  // After this many proposals without a new best, the chain restarts from the best strategy found.
  int64_t reset_interval = 2000;
  // Evaluations used when the request sets no budget at all.
  int64_t default_evaluations = 10000;
  // The walk's acceptance prices a strategy by its penalised time (sim/objective.h StepCost::Penalised) with this
  // penalty factor and the initial step time as reference: OOM is allowed during the walk, but the best is kept
  // by the objective's order, so an OOM strategy is never preferred to one that fits.
  double oom_penalty = 10.0;
  // Independent chains walking from the same start, each with its own RNG stream (chain 0 the request's seed,
  // chain i > 0 a SplitMix64 mix of seed and i) and its own delta simulator, and an equal share of the evaluation
  // budget left after the warm start (the first chains take the remainder; a seconds budget applies to each chain
  // as a whole). The best of the chains' bests wins, ties to the lowest chain. With one chain the search is the
  // single walk. Results depend on `chains`, never on `threads`.
  int32_t chains = 1;
  // Threads the chains run on (0: one per core, std::thread::hardware_concurrency()); at most `chains` are used.
  int32_t threads = 0;
};

// Starts from request.initial when given, otherwise from the better of the human-expert and m-ETF strategies
// (their evaluations count against the budget; m-ETF's alone when an evaluation budget below D + 3 cannot pay
// for the comparison). Proposals are priced by delta simulation with memory checked
// against per-device estimates (sim/estimates.h); a proposal that would become the best is checked with the
// simulator's exact memory model. Never returns a strategy that ranks worse than its start (sim/objective.h).
class McmcSearch : public SearchAlgorithm {
 public:
  // `name`: what the registry calls this configuration ("mcmc": one chain; "mcmc-chains": 8 chains on all cores).
  explicit McmcSearch(McmcOptions options = {}, std::string name = "mcmc")
      : options_(options), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  bool refines_initial() const override { return true; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override;

 private:
  McmcOptions options_;
  std::string name_;
};

}  // namespace devplace
