#include "agents/tofu_dp.h"

#include <algorithm>
#include <optional>

#include "agents/search_budget.h"
#include "core/check.h"
#include "sim/objective.h"

namespace devplace {
namespace {

// Each unit's cheapest scheme on its own (the fallback when a level's DP runs out of time).
std::vector<int32_t> CheapestAlone(const TofuLevelProblem& level) {
  std::vector<int32_t> choice(static_cast<size_t>(level.num_units()));
  for (int32_t u = 0; u < level.num_units(); ++u)
    choice[u] = static_cast<int32_t>(std::min_element(level.unary[u].begin(), level.unary[u].end()) -
                                     level.unary[u].begin());
  return choice;
}

}  // namespace

Expected<SearchResult> TofuDpSearch::DoSearch(const SearchProblem& problem, const SearchRequest& request) const {
  BudgetTracker budget(request);
  const double max_seconds = request.budget.max_seconds;
  std::function<bool()> out_of_time;
  if (max_seconds > 0) out_of_time = [&] { return budget.seconds() >= max_seconds; };

  // candidates[j]: the strategy after j levels (j = 0: everything on one device).
  TofuPlanner planner(problem, options_);
  std::vector<Strategy> candidates;
  if (options_.try_fewer_levels) candidates.push_back(planner.ToStrategy());
  for (int32_t level = 0; level < planner.num_levels(); ++level) {
    const TofuLevelProblem next = planner.NextLevel();
    std::optional<TofuLevelSolution> solution;
    if (!out_of_time || !out_of_time()) solution = SolveTofuLevel(next, options_.max_states, out_of_time);
    planner.Apply(next, solution ? solution->choice : CheapestAlone(next));
    if (options_.try_fewer_levels || level + 1 == planner.num_levels()) candidates.push_back(planner.ToStrategy());
  }
  if (candidates.empty()) candidates.push_back(planner.ToStrategy());  // no levels: one device

  // Simulate the candidates from the most split down, while the budget lasts; keep the fastest that fits in
  // memory (ties: the more split) by the objective's order (sim/objective.h), or the most split one when nothing
  // was simulated.
  size_t best = candidates.size() - 1;
  std::optional<StepCost> best_cost;
  for (size_t j = candidates.size(); j-- > 0;) {
    const Status valid = ValidateStrategy(candidates[j], *problem.graph, *problem.topology);
    DEVPLACE_CHECK(valid.ok(), "tofu-dp made an invalid strategy: " + (valid.ok() ? "" : valid.error().message));
    if (budget.exhausted()) break;
    Expected<SimResult> sim = Simulate(*problem.graph, *problem.topology, candidates[j], problem.cost, problem.sim);
    if (!sim.ok()) return sim.error();
    const StepCost cost = CostOf(*sim, *problem.topology);
    if (!best_cost || cost < *best_cost) {
      best = j;
      best_cost = cost;
    }
    budget.RecordEvaluation(best_cost->step_time);
  }
  budget.ReportFinal(best_cost ? best_cost->step_time : 0.0);
  return SearchResult{std::move(candidates[best]), budget.evaluations(), budget.seconds()};
}

}  // namespace devplace
