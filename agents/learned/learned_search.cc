#include "agents/learned/learned_search.h"

#include <chrono>

#include "agents/learned/learning.h"

namespace devplace {

namespace {

constexpr int64_t kDefaultFinetuneEvaluations = 2000;

class LearnedSearch : public SearchAlgorithm {
 public:
  LearnedSearch(std::string name, std::string policy_dir, bool finetune)
      : name_(std::move(name)), policy_dir_(std::move(policy_dir)), finetune_(finetune) {}

  std::string name() const override { return name_; }

 protected:
  Expected<SearchResult> DoSearch(const SearchProblem& problem, const SearchRequest& request) const override {
    const auto started = std::chrono::steady_clock::now();
    Expected<std::unique_ptr<LearnedPolicy>> policy =
        LearnedPolicy::Load(policy_dir_.empty() ? DefaultPolicyDir() : policy_dir_);
    if (!policy) return policy.error();
    PlaceOptions options;
    options.seed = request.seed;
    if (finetune_) {
      const bool unlimited = request.budget.max_evaluations <= 0 && request.budget.max_seconds <= 0;
      options.finetune_evaluations =
          request.budget.max_evaluations > 0 ? request.budget.max_evaluations
                                             : (unlimited ? kDefaultFinetuneEvaluations : INT64_MAX / 2);
      options.max_seconds = request.budget.max_seconds;
      if (request.progress) {
        options.progress = [&](int64_t evaluations, double best) {
          request.progress({evaluations,
                            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), best});
        };
      }
    }
    Expected<PlaceResult> placed = (*policy)->Place(*problem.graph, *problem.topology, problem.cost, problem.sim, options);
    if (!placed) return placed.error();
    SearchResult result;
    result.strategy = std::move(placed->strategy);
    result.evaluations = placed->evaluations;
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return result;
  }

 private:
  std::string name_, policy_dir_;
  bool finetune_;
};

}  // namespace

void RegisterLearnedSearches(SearchRegistry* registry, const std::string& policy_dir) {
  for (const bool finetune : {false, true}) {
    const std::string name = finetune ? "placer-finetune" : "placer-zeroshot";
    registry->Add(name, [name, policy_dir, finetune] {
      return std::make_unique<LearnedSearch>(name, policy_dir, finetune);
    });
  }
}

SearchRegistry AllSearches(const std::string& policy_dir) {
  SearchRegistry registry;
  RegisterBaselineSearches(&registry);
  RegisterLearnedSearches(&registry, policy_dir);
  return registry;
}

Expected<std::unique_ptr<SearchAlgorithm>> MakeLearnedSearchAlgorithm(std::string_view name,
                                                                      const std::string& policy_dir) {
  SearchRegistry learned;
  RegisterLearnedSearches(&learned, policy_dir);
  return learned.Make(name);
}

Expected<std::unique_ptr<SearchAlgorithm>> MakeAnySearchAlgorithm(std::string_view name,
                                                                  const std::string& policy_dir) {
  return AllSearches(policy_dir).Make(name);
}

}  // namespace devplace
