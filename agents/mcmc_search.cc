#include "agents/mcmc_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>

#include "agents/baechi_placers.h"
#include "agents/expert_placer.h"
#include "agents/op_estimates.h"
#include "agents/search_budget.h"
#include "core/colocation.h"

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

// Estimated memory per device of the chain's current strategy (agents/op_estimates.h), kept up to date per
// proposal so that proposals overfilling a device are penalised without a full memory simulation. A part of a
// sample-split op holds the whole parameter state (a replica) and 1/n of the output; other splits shard both.
class MemoryLedger {
 public:
  MemoryLedger(const Graph& graph, const Topology& topology, const OpEstimates& estimates, const Strategy& strategy)
      : graph_(graph), topology_(topology), estimates_(estimates), used_(topology.num_devices(), 0) {
    for (OpId op = 0; op < graph.num_ops(); ++op) Add(op, strategy.configs[op], +1);
  }
  void Add(OpId op, const OpConfig& config, int sign) {
    const Op& o = graph_.op(op);
    const auto n = static_cast<int64_t>(config.devices.size());
    const int64_t params = estimates_.memory_bytes[op] - (o.role == OpRole::kForward ? OutputBytes(o) : 0);
    const int64_t activations = estimates_.memory_bytes[op] - params;
    bool replicated = false;
    for (size_t k = 0; k < config.degrees.size(); ++k)
      replicated |= config.degrees[k] > 1 && o.dims[k].kind == DimKind::kSample;
    const int64_t per_device = (replicated ? params : params / n) + activations / n;
    for (DeviceId d : config.devices) used_[d] += sign * per_device;
  }
  bool over_capacity() const {
    for (DeviceId d = 0; d < topology_.num_devices(); ++d)
      if (used_[d] > topology_.device(d).memory_bytes) return true;
    return false;
  }

 private:
  const Graph& graph_;
  const Topology& topology_;
  const OpEstimates& estimates_;
  std::vector<int64_t> used_;
};

// The better (by simulated step time, OOM last) of the expert's and m-ETF's strategies.
Expected<Strategy> WarmStart(const SearchProblem& problem, const SearchRequest& request, BudgetTracker* budget) {
  SearchRequest quiet = request;
  quiet.progress = nullptr;
  Strategy best;
  double best_cost = std::numeric_limits<double>::infinity();
  std::unique_ptr<SearchAlgorithm> starts[] = {std::make_unique<ExpertPlacer>(), std::make_unique<MEtfPlacer>()};
  for (const auto& algo : starts) {
    Expected<SearchResult> r = algo->Search(problem, quiet);
    if (!r.ok()) return r.error();
    Expected<SimResult> sim = Simulate(*problem.graph, *problem.topology, r->strategy, problem.cost, problem.sim);
    if (!sim.ok()) return sim.error();
    for (int64_t i = 0; i <= r->evaluations; ++i) budget->RecordEvaluation(0);
    double cost = sim->step_time + (sim->oom ? 1e9 : 0.0);
    if (cost < best_cost) {
      best_cost = cost;
      best = std::move(r->strategy);
    }
  }
  return best;
}

}  // namespace

Expected<SearchResult> McmcSearch::Search(const SearchProblem& problem, const SearchRequest& request) const {
  SearchRequest bounded = request;
  if (bounded.budget.max_evaluations <= 0 && bounded.budget.max_seconds <= 0)
    bounded.budget.max_evaluations = options_.default_evaluations;
  BudgetTracker budget(bounded);
  const Graph& graph = *problem.graph;

  Strategy start;
  if (request.initial) {
    start = *request.initial;
  } else {
    Expected<Strategy> warm = WarmStart(problem, bounded, &budget);
    if (!warm.ok()) return warm.error();
    start = std::move(*warm);
  }
  Expected<DeltaSimulator> sim = DeltaSimulator::Create(graph, *problem.topology, start, problem.cost, problem.sim);
  if (!sim.ok()) return sim.error();
  budget.RecordEvaluation(sim->step_time());
  OpEstimates estimates = EstimateOps(graph, *problem.topology, problem.cost, problem.sim.optimizer_state_factor);
  MemoryLedger ledger(graph, *problem.topology, estimates, start);

  const double scale = sim->step_time() > 0 ? sim->step_time() : 1.0;
  const double penalty = options_.oom_penalty * scale;
  // The walk prices memory with the ledger's estimate; a candidate for the best is checked exactly.
  auto walk_cost = [&]() { return sim->step_time() + (ledger.over_capacity() ? penalty : 0.0); };
  auto exact_cost = [&]() { return sim->step_time() + (sim->oom() ? penalty : 0.0); };
  double current = walk_cost(), best = exact_cost();
  Strategy best_strategy = start;
  Chain chain(problem, options_, request.seed);
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
    Expected<double> asked = sim->StepTimeIf(proposal);
    if (!asked.ok()) return asked.error();
    double next = *asked + (ledger.over_capacity() ? penalty : 0.0);
    bool made = false;
    auto make = [&]() -> Status {
      made = true;
      undo.clear();
      for (const auto& [op, config] : proposal) undo.emplace_back(op, sim->strategy().configs[op]);
      return sim->SetConfigs(proposal);
    };
    if (next < best) {
      if (Status s = make(); !s.ok()) return s.error();
      next = exact_cost();
    }
    if (made && next < best) {
      best = next;
      best_strategy = sim->strategy();
      since_best = 0;
    } else if (++since_best >= options_.reset_interval) {
      since_best = 0;
      if (!made) count(proposal, -1);
      std::vector<std::pair<OpId, OpConfig>> reset;
      for (OpId op = 0; op < graph.num_ops(); ++op)
        if (!(sim->strategy().configs[op] == best_strategy.configs[op]))
          reset.emplace_back(op, best_strategy.configs[op]);
      if (Status s = apply(reset); !s.ok()) return s.error();
      current = walk_cost();
      budget.RecordEvaluation(best);
      continue;
    }
    budget.RecordEvaluation(best);
    bool accept = next <= current || Uniform(chain.rng()) < std::exp(options_.beta * (current - next) / scale);
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
  budget.ReportFinal(best);
  return SearchResult{std::move(best_strategy), budget.evaluations(), budget.seconds()};
}

}  // namespace devplace
