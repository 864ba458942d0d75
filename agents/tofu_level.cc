// The DP of one Tofu bisection level: a pairwise labelling problem minimised by dynamic programming over the
// units in index order, with the schemes of the frontier as the state (variable elimination along a fixed order).
#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>

#include "agents/tofu_dp.h"
#include "core/check.h"

namespace devplace {

std::string TofuSchemeName(int32_t scheme) {
  if (scheme == kTofuReduce) return "reduce";
  if (scheme == kTofuKeep) return "keep";
  return "axis" + std::to_string(scheme);
}

double TofuLabellingCost(const TofuLevelProblem& problem, std::span<const int32_t> choice) {
  DEVPLACE_CHECK(static_cast<int32_t>(choice.size()) == problem.num_units(), "one choice per unit");
  double total = 0.0;
  for (int32_t u = 0; u < problem.num_units(); ++u) total += problem.unary[u][choice[u]];
  for (const TofuLevelProblem::Pair& p : problem.pairs)
    total += p.cost[static_cast<size_t>(choice[p.a]) * problem.schemes[p.b].size() + choice[p.b]];
  return total;
}

namespace {

// The states of one DP step: the frontier's scheme indices (one row per state), the best cost of each state and
// how it was reached (the previous step's state and the scheme of the unit decided in this step).
struct StepStates {
  std::vector<uint8_t> rows;
  std::vector<double> values;
  std::vector<int32_t> prev;
  std::vector<uint8_t> pick;

  size_t size() const { return values.size(); }
};

// Keeps the `keep` cheapest states (ties: earlier states), in their original order.
void Prune(StepStates* s, size_t width, size_t keep) {
  std::vector<size_t> order(s->size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return s->values[x] < s->values[y]; });
  order.resize(keep);
  std::sort(order.begin(), order.end());
  StepStates kept;
  for (size_t i : order) {
    kept.rows.insert(kept.rows.end(), s->rows.begin() + static_cast<std::ptrdiff_t>(i * width),
                     s->rows.begin() + static_cast<std::ptrdiff_t>((i + 1) * width));
    kept.values.push_back(s->values[i]);
    kept.prev.push_back(s->prev[i]);
    kept.pick.push_back(s->pick[i]);
  }
  *s = std::move(kept);
}

}  // namespace

std::optional<TofuLevelSolution> SolveTofuLevel(const TofuLevelProblem& problem, int64_t max_states,
                                                const std::function<bool()>& stop) {
  const int32_t n = problem.num_units();
  const size_t cap = static_cast<size_t>(std::max<int64_t>(1, max_states));
  DEVPLACE_CHECK(static_cast<int32_t>(problem.unary.size()) == n, "one unary cost vector per unit");
  // last[u]: the highest unit sharing a pair with u (u itself when none); into[v]: pairs whose later unit is v.
  std::vector<int32_t> last(static_cast<size_t>(n));
  std::iota(last.begin(), last.end(), 0);
  std::vector<std::vector<int32_t>> into(static_cast<size_t>(n));
  for (size_t k = 0; k < problem.pairs.size(); ++k) {
    const TofuLevelProblem::Pair& p = problem.pairs[k];
    DEVPLACE_CHECK(p.a >= 0 && p.a < p.b && p.b < n, "pairs join two units, a < b");
    DEVPLACE_CHECK(p.cost.size() == problem.schemes[p.a].size() * problem.schemes[p.b].size(), "pair cost size");
    last[p.a] = std::max(last[p.a], p.b);
    into[p.b].push_back(static_cast<int32_t>(k));
  }

  TofuLevelSolution solution;
  std::vector<int32_t> frontier;  // units whose scheme is part of the state, in the order of the state's columns
  std::vector<int32_t> column(static_cast<size_t>(n), -1);
  std::vector<StepStates> steps(static_cast<size_t>(n));
  StepStates current;
  current.values = {0.0};
  std::unordered_map<std::string, int32_t> index;
  std::string key;
  for (int32_t v = 0; v < n; ++v) {
    if (stop && v % 8 == 0 && stop()) return std::nullopt;
    const size_t m = problem.schemes[v].size();
    DEVPLACE_CHECK(m >= 1 && m <= 255 && problem.unary[v].size() == m, "unit schemes: 1 to 255 with a cost each");
    // The next frontier: the units that still have an undecided neighbour, then v if it has one.
    std::vector<int32_t> next_frontier, source;  // source: the old column, or -1 for v itself
    for (int32_t u : frontier)
      if (last[u] > v) {
        next_frontier.push_back(u);
        source.push_back(column[u]);
      }
    if (last[v] > v) {
      next_frontier.push_back(v);
      source.push_back(-1);
    }
    const size_t width = frontier.size(), next_width = next_frontier.size();
    StepStates next;
    index.clear();
    key.assign(next_width, '\0');
    for (size_t i = 0; i < current.size(); ++i) {
      const uint8_t* row = current.rows.data() + i * width;
      for (size_t s = 0; s < m; ++s) {
        double value = current.values[i] + problem.unary[v][s];
        for (int32_t k : into[v]) {
          const TofuLevelProblem::Pair& p = problem.pairs[k];
          value += p.cost[static_cast<size_t>(row[column[p.a]]) * m + s];
        }
        for (size_t c = 0; c < next_width; ++c)
          key[c] = static_cast<char>(source[c] < 0 ? static_cast<uint8_t>(s) : row[source[c]]);
        auto [it, inserted] = index.emplace(key, static_cast<int32_t>(next.size()));
        if (inserted) {
          next.rows.insert(next.rows.end(), key.begin(), key.end());
          next.values.push_back(value);
          next.prev.push_back(static_cast<int32_t>(i));
          next.pick.push_back(static_cast<uint8_t>(s));
        } else if (value < next.values[it->second]) {
          next.values[it->second] = value;
          next.prev[it->second] = static_cast<int32_t>(i);
          next.pick[it->second] = static_cast<uint8_t>(s);
        }
      }
    }
    if (next.size() > cap) {
      Prune(&next, next_width, cap);
      solution.exact = false;
    }
    for (int32_t u : frontier) column[u] = -1;
    frontier = std::move(next_frontier);
    for (size_t c = 0; c < frontier.size(); ++c) column[frontier[c]] = static_cast<int32_t>(c);
    current.rows = std::move(next.rows);
    current.values = std::move(next.values);
    steps[v].prev = std::move(next.prev);
    steps[v].pick = std::move(next.pick);
  }
  DEVPLACE_CHECK(frontier.empty() && current.size() == 1, "the DP ends with one state");
  solution.cost = current.values[0];
  solution.choice.assign(static_cast<size_t>(n), 0);
  int32_t state = 0;
  for (int32_t v = n - 1; v >= 0; --v) {
    solution.choice[v] = steps[v].pick[state];
    state = steps[v].prev[state];
  }
  return solution;
}

}  // namespace devplace
