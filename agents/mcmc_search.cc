#include "agents/mcmc_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>

#include "agents/expert_placer.h"
#include "agents/search_budget.h"
#include "core/colocation.h"

namespace devplace {

namespace {

// Uniform real in [0, 1) from 53 random bits (deterministic across standard libraries).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// The dimension of `op` used to split it n ways: its first sample dim, else its first dim of any kind, of size
// >= n; -1 if none.
int32_t SplitDim(const Op& op, int32_t n) {
  for (int pass = 0; pass < 2; ++pass)
    for (size_t k = 0; k < op.dims.size(); ++k)
      if ((pass == 1 || op.dims[k].kind == DimKind::kSample) && op.dims[k].size >= n) return static_cast<int32_t>(k);
  return -1;
}

// Config splitting `op` over `devices` along SplitDim, or std::nullopt if it cannot be split that many ways.
std::optional<OpConfig> SplitConfig(const Op& op, const std::vector<DeviceId>& devices) {
  const auto n = static_cast<int32_t>(devices.size());
  if (n == 1) return OpConfig{devices, {}};
  int32_t dim = SplitDim(op, n);
  if (dim < 0) return std::nullopt;
  OpConfig c{devices, std::vector<int32_t>(op.dims.size(), 1)};
  c.degrees[dim] = n;
  return c;
}

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

}  // namespace

Expected<SearchResult> McmcSearch::Search(const SearchProblem& problem, const SearchRequest& request) const {
  SearchRequest bounded = request;
  if (bounded.budget.max_evaluations <= 0 && bounded.budget.max_seconds <= 0)
    bounded.budget.max_evaluations = options_.default_evaluations;
  BudgetTracker budget(bounded);

  Strategy start;
  if (request.initial) {
    start = *request.initial;
  } else {
    SearchRequest expert_request = bounded;
    expert_request.progress = nullptr;
    Expected<SearchResult> expert = ExpertPlacer().Search(problem, expert_request);
    if (!expert.ok()) return expert.error();
    start = std::move(expert->strategy);
    for (int64_t i = 0; i < expert->evaluations; ++i) budget.RecordEvaluation(0);
  }
  Expected<DeltaSimulator> sim =
      DeltaSimulator::Create(*problem.graph, *problem.topology, start, problem.cost, problem.sim);
  if (!sim.ok()) return sim.error();
  budget.RecordEvaluation(sim->step_time());

  const double scale = sim->step_time() > 0 ? sim->step_time() : 1.0;
  auto cost = [&]() { return sim->step_time() + (sim->result().oom ? options_.oom_penalty * scale : 0.0); };
  double current = cost(), best = current;
  Strategy best_strategy = start;
  Chain chain(problem, options_, request.seed);
  std::vector<std::pair<OpId, OpConfig>> proposal, undo;
  int64_t since_best = 0;

  while (!budget.exhausted()) {
    if (!chain.Propose(&proposal)) continue;
    undo.clear();
    for (const auto& [op, config] : proposal) undo.emplace_back(op, sim->strategy().configs[op]);
    if (Status s = sim->SetConfigs(proposal); !s.ok()) return s.error();
    double next = cost();
    budget.RecordEvaluation(best);
    if (next < best) {
      best = next;
      best_strategy = sim->strategy();
      since_best = 0;
    } else if (++since_best >= options_.reset_interval) {
      since_best = 0;
      std::vector<std::pair<OpId, OpConfig>> reset;
      for (OpId op = 0; op < problem.graph->num_ops(); ++op)
        if (!(sim->strategy().configs[op] == best_strategy.configs[op]))
          reset.emplace_back(op, best_strategy.configs[op]);
      if (Status s = sim->SetConfigs(reset); !s.ok()) return s.error();
      current = cost();
      continue;
    }
    bool accept = next <= current || Uniform(chain.rng()) < std::exp(options_.beta * (current - next) / scale);
    if (accept) {
      current = next;
    } else if (Status s = sim->SetConfigs(undo); !s.ok()) {
      return s.error();
    }
  }
  budget.ReportFinal(best);
  return SearchResult{std::move(best_strategy), budget.evaluations(), budget.seconds()};
}

}  // namespace devplace
