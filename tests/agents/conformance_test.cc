// The conformance test every registered search passes (OpenSpiel's RandomSimTest, for searches): the registry of
// the devplace program (baselines and learned searches) is enumerated, and each algorithm is run on a small
// training graph: same seed, same strategy; the evaluation and time budgets respected; the strategy valid and
// colocation kept; never worse than its start when it refines one (sim/objective.h); an empty graph, or one
// without parameters, rejected with an error rather than a crash.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "agents/learned/learned_search.h"
#include "agents/search.h"
#include "core/check.h"
#include "core/colocation.h"
#include "sim/objective.h"
#include "tests/testing/agents_graphs.h"

namespace devplace {
namespace {

using testing::Gpus;
using testing::IndependentChains;

constexpr int64_t kEvaluations = 24;

// The registry under test: everything the devplace program offers.
const SearchRegistry& Registry() {
  static const SearchRegistry registry = AllSearches();
  return registry;
}

class SearchConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    Expected<std::unique_ptr<SearchAlgorithm>> made = Registry().Make(GetParam());
    ASSERT_TRUE(made.ok()) << made.error().message;
    algo_ = std::move(*made);
    problem_ = SearchProblem{&graph_, &topology_, MakeAnalyticCostModel(), SimOptions{}};
  }

  SearchResult Run(const SearchRequest& request) const {
    Expected<SearchResult> r = algo_->Search(problem_, request);
    EXPECT_TRUE(r.ok()) << GetParam() << ": " << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(*r) : SearchResult{};
  }

  StepCost Cost(const Strategy& strategy) const {
    Expected<SimResult> sim = Simulate(graph_, topology_, strategy, problem_.cost, problem_.sim);
    EXPECT_TRUE(sim.ok()) << (sim.ok() ? "" : sim.error().message);
    return sim.ok() ? CostOf(*sim, topology_) : StepCost{};
  }

  // Two chains of three matmuls (width 256) as a training graph: 18 ops in 6 colocation groups, on 3 GPUs.
  const Graph graph_ = IndependentChains(2, 3, 256);
  const Topology topology_ = Gpus(3);
  std::unique_ptr<SearchAlgorithm> algo_;
  SearchProblem problem_;
};

TEST_P(SearchConformance, NameMatchesTheRegistry) { EXPECT_EQ(algo_->name(), GetParam()); }

TEST_P(SearchConformance, SameSeedSameStrategy) {
  SearchRequest request;
  request.budget.max_evaluations = kEvaluations;
  request.seed = 7;
  const SearchResult a = Run(request), b = Run(request);
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.evaluations, b.evaluations);
}

TEST_P(SearchConformance, StrategyIsValidAndKeepsColocation) {
  SearchRequest request;
  request.budget.max_evaluations = kEvaluations;
  request.seed = 3;
  const SearchResult r = Run(request);
  ASSERT_EQ(static_cast<int32_t>(r.strategy.configs.size()), graph_.num_ops());
  const Status valid = ValidateStrategy(r.strategy, graph_, topology_);
  EXPECT_TRUE(valid.ok()) << valid.error().message;
  const OpGroups groups = ColocationGroups(graph_);
  for (const std::vector<OpId>& members : groups.members)
    for (OpId op : members)
      EXPECT_EQ(r.strategy.configs[op].devices, r.strategy.configs[members.front()].devices)
          << graph_.op(op).name << " is not with " << graph_.op(members.front()).name;
  EXPECT_GE(r.seconds, 0.0);
}

TEST_P(SearchConformance, RespectsTheEvaluationBudget) {
  for (int64_t budget : {int64_t{1}, kEvaluations}) {
    SearchRequest request;
    request.budget.max_evaluations = budget;
    int64_t reported = 0;
    request.progress = [&](const SearchProgress& p) { reported = std::max(reported, p.evaluations); };
    const SearchResult r = Run(request);
    // A search may always spend one evaluation on its start; beyond that the budget holds.
    EXPECT_LE(r.evaluations, std::max<int64_t>(budget, 1)) << "budget " << budget;
    EXPECT_LE(reported, r.evaluations) << "budget " << budget;
    EXPECT_GE(r.evaluations, 0);
  }
}

TEST_P(SearchConformance, RespectsTheTimeBudget) {
  SearchRequest request;
  request.budget.max_seconds = 0.2;
  const auto start = std::chrono::steady_clock::now();
  const SearchResult r = Run(request);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Budgets are checked between evaluations (and the learned searches load their policy first): allow for that,
  // on a shared machine, but not for a search that ignores the limit (unlimited MCMC runs 10,000 evaluations).
  EXPECT_LE(wall, 0.2 + 3.0);
  EXPECT_LE(r.seconds, wall + 1e-3);
}

// Algorithms that refine an initial strategy never end worse than it; the others ignore it.
TEST_P(SearchConformance, NeverWorseThanTheStrategyItRefines) {
  // Groups dealt round-robin over the devices: every chain crosses devices at every layer.
  const OpGroups groups = ColocationGroups(graph_);
  std::vector<DeviceId> device_of_op(graph_.num_ops());
  for (OpId op = 0; op < graph_.num_ops(); ++op)
    device_of_op[op] = groups.group_of_op[op] % topology_.num_devices();
  const Strategy initial = Strategy::FromPlacement(device_of_op);
  SearchRequest request;
  request.budget.max_evaluations = kEvaluations;
  request.seed = 5;
  request.initial = &initial;
  const SearchResult r = Run(request);
  if (!algo_->refines_initial()) {
    request.initial = nullptr;
    EXPECT_EQ(r.strategy, Run(request).strategy) << GetParam() << " does not refine, so ignores the initial strategy";
    return;
  }
  EXPECT_FALSE(Cost(initial) < Cost(r.strategy));

  // An initial strategy that does not fit the problem is an input error.
  const Strategy wrong = Strategy::AllOn(graph_.num_ops() - 1, 0);
  request.initial = &wrong;
  EXPECT_FALSE(algo_->Search(problem_, request).ok());
}

TEST_P(SearchConformance, RejectsGraphsWithNothingToTrain) {
  SearchRequest request;
  request.budget.max_evaluations = kEvaluations;
  const Graph empty = GraphBuilder("empty").Build().value();
  SearchProblem problem{&empty, &topology_, MakeAnalyticCostModel(), SimOptions{}};
  Expected<SearchResult> r = algo_->Search(problem, request);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("graph 'empty' has no ops"), std::string::npos) << r.error().message;

  GraphBuilder b("frozen");
  b.add_op(Op{.name = "x", .type = "input", .shape = {8, 8}});
  const Graph frozen = std::move(b).Build().value();
  problem.graph = &frozen;
  r = algo_->Search(problem, request);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no op with FLOPs or parameters"), std::string::npos) << r.error().message;

  const Topology none;  // no devices
  problem = SearchProblem{&graph_, &none, MakeAnalyticCostModel(), SimOptions{}};
  EXPECT_FALSE(algo_->Search(problem, request).ok());
}

INSTANTIATE_TEST_SUITE_P(Registered, SearchConformance, ::testing::ValuesIn(Registry().names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

TEST(SearchRegistry, ListsEveryAlgorithmOnceAndRejectsUnknownNames) {
  const std::vector<std::string> names = Registry().names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  for (const char* expected : {"single", "random", "mcmc", "tofu-dp", "placer-zeroshot", "placer-finetune"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  EXPECT_EQ(BaselineSearches().names().size() + 2, names.size());
  Expected<std::unique_ptr<SearchAlgorithm>> unknown = Registry().Make("annealing");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("placer-finetune"), std::string::npos) << unknown.error().message;
  SearchRegistry twice = BaselineSearches();
  EXPECT_THROW(RegisterBaselineSearches(&twice), InternalError);
}

}  // namespace
}  // namespace devplace
