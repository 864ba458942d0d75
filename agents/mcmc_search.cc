#include "agents/mcmc_search.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "agents/baechi_placers.h"
#include "agents/expert_placer.h"
#include "agents/search_budget.h"
#include "core/colocation.h"
#include "core/parallel.h"
#include "sim/estimates.h"
#include "sim/objective.h"

namespace devplace {

namespace {

// Uniform real in [0, 1) from 53 random bits (deterministic across standard libraries).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

class Chain {
 public:
  Chain(const SearchProblem& problem, const McmcOptions& options, uint64_t seed)
      : problem_(problem), options_(options), groups_(ColocationGroups(*problem.graph)), rng_(seed) {}

  // Draws a new config for every member of a random group; false if the draw is not applicable.
  bool Propose(std::vector<std::pair<OpId, OpConfig>>* changes) {
    changes->clear();
    const Graph& g = *problem_.graph;
    const int32_t devices = problem_.topology->num_devices();
    const auto& members = groups_.members[rng_() % groups_.num_groups()];
    std::vector<DeviceId> chosen;
    if (devices > 1 && Uniform(rng_) < options_.partition_probability) {
      int32_t n = 2 + static_cast<int32_t>(rng_() % (devices - 1));
      std::vector<DeviceId> all(devices);
      std::iota(all.begin(), all.end(), 0);
      for (int32_t i = 0; i < n; ++i) std::swap(all[i], all[i + rng_() % (devices - i)]);
      chosen.assign(all.begin(), all.begin() + n);
      std::sort(chosen.begin(), chosen.end());
    } else {
      chosen = {static_cast<DeviceId>(rng_() % devices)};
    }
    for (OpId op : members) {
      std::optional<OpConfig> c = SplitConfig(g.op(op), chosen);
      if (!c) return false;
      changes->emplace_back(op, std::move(*c));
    }
    return true;
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  const SearchProblem& problem_;
  const McmcOptions& options_;
  OpGroups groups_;
  std::mt19937_64 rng_;
};

// Estimated memory per device of the chain's current strategy (sim/estimates.h OpPartMemoryEstimate), kept up
// to date per proposal so that proposals overfilling a device are penalised without a full memory simulation.
class MemoryLedger {
 public:
  MemoryLedger(const Graph& graph, const Topology& topology, double optimizer_state_factor, const Strategy& strategy)
      : graph_(graph), topology_(topology), factor_(optimizer_state_factor), used_(topology.num_devices(), 0) {
    for (OpId op = 0; op < graph.num_ops(); ++op) Add(op, strategy.configs[op], +1);
  }
  void Add(OpId op, const OpConfig& config, int sign) {
    const int64_t per_device = OpPartMemoryEstimate(graph_.op(op), config, factor_);
    for (DeviceId d : config.devices) used_[d] += sign * per_device;
  }
  // The cost of a step of `step_time` under the estimated memory (overage as in sim/objective.h).
  StepCost Cost(double step_time) const {
    StepCost cost{step_time, false, 0.0};
    for (DeviceId d = 0; d < topology_.num_devices(); ++d) {
      const int64_t capacity = topology_.device(d).memory_bytes;
      if (used_[d] <= capacity) continue;
      cost.oom = true;
      cost.overage += static_cast<double>(used_[d] - capacity) / static_cast<double>(capacity);
    }
    return cost;
  }

 private:
  const Graph& graph_;
  const Topology& topology_;
  double factor_;
  std::vector<int64_t> used_;
};

// The better (by the objective's order, sim/objective.h) of the expert's and m-ETF's strategies. When the
// evaluation budget cannot pay for comparing them (the expert's splits, one per device, two simulations and the
// walk's first), m-ETF's strategy, which costs no simulation.
Expected<Strategy> WarmStart(const SearchProblem& problem, const SearchRequest& request, BudgetTracker* budget) {
  SearchRequest quiet = request;
  quiet.progress = nullptr;
  const int64_t max_evaluations = request.budget.max_evaluations;
  if (max_evaluations > 0 && max_evaluations < problem.topology->num_devices() + 3) {
    Expected<SearchResult> r = FunctionSearch("m-etf", PlaceMEtf).Search(problem, quiet);
    if (!r.ok()) return r.error();
    return std::move(r->strategy);
  }
  Strategy best;
  std::optional<StepCost> best_cost;
  const FunctionSearch starts[] = {{"expert", PlaceLikeAnExpert}, {"m-etf", PlaceMEtf}};
  for (const auto& algo : starts) {
    Expected<SearchResult> r = algo.Search(problem, quiet);
    if (!r.ok()) return r.error();
    Expected<SimResult> sim = Simulate(*problem.graph, *problem.topology, r->strategy, problem.cost, problem.sim);
    if (!sim.ok()) return sim.error();
    for (int64_t i = 0; i <= r->evaluations; ++i) budget->RecordEvaluation(0);
    const StepCost cost = CostOf(*sim, *problem.topology);
    if (!best_cost || cost < *best_cost) {
      best_cost = cost;
      best = std::move(r->strategy);
    }
  }
  return best;
}

// The best a chain found.
struct ChainBest {
  StepCost cost;
  Strategy strategy;
};

// One Metropolis-Hastings walk from `start` with the RNG seeded by `seed`, until `budget` is exhausted.
Expected<ChainBest> Walk(const SearchProblem& problem, const McmcOptions& options, const Strategy& start,
                         uint64_t seed, BudgetTracker& budget) {
  const Graph& graph = *problem.graph;
  Expected<DeltaSimulator> sim = DeltaSimulator::Create(graph, *problem.topology, start, problem.cost, problem.sim);
  if (!sim.ok()) return sim.error();
  budget.RecordEvaluation(sim->step_time());
  MemoryLedger ledger(graph, *problem.topology, problem.sim.optimizer_state_factor, start);

  const double scale = sim->step_time() > 0 ? sim->step_time() : 1.0;
  // The walk prices memory with the ledger's estimate (penalised time, sim/objective.h); a candidate for the best
  // is checked exactly and ranked by the objective's order.
  auto penalised = [&](const StepCost& cost) { return cost.Penalised(scale, options.oom_penalty); };
  double current = penalised(ledger.Cost(sim->step_time()));
  StepCost best = sim->step_cost();
  Strategy best_strategy = start;
  Chain chain(problem, options, seed);
  std::vector<std::pair<OpId, OpConfig>> proposal, undo;
  // The ledger follows the walk's strategy, and also a proposal while it is only asked about.
  auto count = [&](const std::vector<std::pair<OpId, OpConfig>>& changes, int sign) {
    for (const auto& [op, config] : changes) {
      ledger.Add(op, sim->strategy().configs[op], -sign);
      ledger.Add(op, config, sign);
    }
  };
  auto apply = [&](const std::vector<std::pair<OpId, OpConfig>>& changes) {
    count(changes, +1);
    return sim->SetConfigs(changes);
  };
  int64_t since_best = 0;

  // A proposal is first only asked about (StepTimeIf: the simulator is left as it is) and made only when it may
  // be a new best (whose memory is then checked exactly) or is accepted; rejected ones cost no change and no undo.
  while (!budget.exhausted()) {
    if (!chain.Propose(&proposal)) continue;
    count(proposal, +1);
    // The configs to go back to are read before the query: between a query and the making of the same change the
    // simulator is not asked anything else (so that it can keep the parts a query by parts made).
    undo.clear();
    for (const auto& [op, config] : proposal) undo.emplace_back(op, sim->strategy().configs[op]);
    Expected<double> asked = sim->StepTimeIf(proposal);
    if (!asked.ok()) return asked.error();
    StepCost next_cost = ledger.Cost(*asked);
    bool made = false;
    auto make = [&]() -> Status {
      made = true;
      return sim->SetConfigs(proposal);
    };
    if (next_cost < best) {
      if (Status s = make(); !s.ok()) return s.error();
      next_cost = sim->step_cost();
    }
    const double next = penalised(next_cost);
    if (made && next_cost < best) {
      best = next_cost;
      best_strategy = sim->strategy();
      since_best = 0;
    } else if (++since_best >= options.reset_interval) {
      since_best = 0;
      if (!made) count(proposal, -1);
      std::vector<std::pair<OpId, OpConfig>> reset;
      for (OpId op = 0; op < graph.num_ops(); ++op)
        if (!(sim->strategy().configs[op] == best_strategy.configs[op]))
          reset.emplace_back(op, best_strategy.configs[op]);
      if (Status s = apply(reset); !s.ok()) return s.error();
      current = penalised(ledger.Cost(sim->step_time()));
      budget.RecordEvaluation(best.step_time);
      continue;
    }
    budget.RecordEvaluation(best.step_time);
    bool accept = next <= current || Uniform(chain.rng()) < std::exp(options.beta * (current - next) / scale);
    if (accept) {
      current = next;
      if (!made)
        if (Status s = make(); !s.ok()) return s.error();
    } else if (made) {
      if (Status s = apply(undo); !s.ok()) return s.error();
    } else {
      count(proposal, -1);
    }
  }
  return ChainBest{best, std::move(best_strategy)};
}

// Chain i's seed: the request's for chain 0, else SplitMix64's output for seed + i (independent streams).
uint64_t ChainSeed(uint64_t seed, int32_t chain) {
  if (chain == 0) return seed;
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(chain);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Expected<SearchResult> McmcSearch::DoSearch(const SearchProblem& problem, const SearchRequest& request) const {
  SearchRequest bounded = request;
  if (bounded.budget.max_evaluations <= 0 && bounded.budget.max_seconds <= 0)
    bounded.budget.max_evaluations = options_.default_evaluations;
  BudgetTracker budget(bounded);
  Strategy start;
  if (request.initial) {
    start = *request.initial;
  } else {
    Expected<Strategy> warm = WarmStart(problem, bounded, &budget);
    if (!warm.ok()) return warm.error();
    start = std::move(*warm);
  }
  const int32_t chains = std::max(1, options_.chains);
  if (chains == 1) {
    Expected<ChainBest> walk = Walk(problem, options_, start, request.seed, budget);
    if (!walk.ok()) return walk.error();
    budget.ReportFinal(walk->cost.step_time);
    return SearchResult{std::move(walk->strategy), budget.evaluations(), budget.seconds()};
  }
  // Each chain gets its share of the evaluations left, its own tracker (progress reports from chain 0 only) and
  // its own simulator; threads take the next chain until none is left.
  const int64_t left = bounded.budget.max_evaluations > 0
                           ? std::max<int64_t>(0, bounded.budget.max_evaluations - budget.evaluations())
                           : 0;
  std::vector<std::optional<Expected<ChainBest>>> outcomes(static_cast<size_t>(chains));
  std::vector<int64_t> used(static_cast<size_t>(chains), 0);
  const int32_t threads = std::min(chains, options_.threads > 0 ? options_.threads : HardwareThreads());
  // A seconds budget: the chains run in waves of `threads`, so each gets its wave's part of the time left.
  const double seconds_left = bounded.budget.max_seconds > 0
                                  ? std::max(0.0, bounded.budget.max_seconds - budget.seconds()) /
                                        ((chains + threads - 1) / threads)
                                  : 0.0;
  ParallelFor(static_cast<size_t>(chains), threads, [&](size_t chain) {
    const auto c = static_cast<int32_t>(chain);
    SearchRequest share = bounded;
    const int64_t evaluations = left / chains + (c < left % chains ? 1 : 0);
    if (left > 0 && evaluations == 0 && c > 0) return;  // fewer evaluations left than chains
    if (left > 0) share.budget.max_evaluations = std::max<int64_t>(1, evaluations);
    if (bounded.budget.max_seconds > 0) share.budget.max_seconds = std::max(seconds_left, 1e-9);
    if (c > 0) share.progress = nullptr;
    BudgetTracker chain_budget(share);
    outcomes[c].emplace(Walk(problem, options_, start, ChainSeed(request.seed, c), chain_budget));
    used[c] = chain_budget.evaluations();
  });
  int32_t winner = -1;
  for (int32_t c = 0; c < chains; ++c) {
    if (!outcomes[c]) continue;
    if (!outcomes[c]->ok()) return outcomes[c]->error();
    if (winner < 0 || (*outcomes[c])->cost < (*outcomes[winner])->cost) winner = c;
  }
  int64_t evaluations = budget.evaluations();
  for (int64_t u : used) evaluations += u;
  const ChainBest& best = **outcomes[winner];
  if (request.progress) request.progress(SearchProgress{evaluations, budget.seconds(), best.cost.step_time});
  return SearchResult{best.strategy, evaluations, budget.seconds()};
}

}  // namespace devplace
