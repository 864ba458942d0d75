// Learned placement as SearchAlgorithms, so `devplace search` and `devplace compare` can run them beside the
// baselines. devplace_agents stays LibTorch-free: programs that link devplace_learn add these searches to their
// registry (agents/search.h SearchRegistry) with RegisterLearnedSearches.
//   placer-zeroshot  the policy's placement without any search (1 evaluation)
//   placer-finetune  PPO fine-tuning on the graph within budget.max_evaluations (default 2000) and
//                    budget.max_seconds
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "agents/search.h"
#include "core/status.h"

namespace devplace {

// Adds placer-zeroshot and placer-finetune, using the policy in `policy_dir` (empty: DefaultPolicyDir()); the
// policy is loaded when Search runs.
void RegisterLearnedSearches(SearchRegistry* registry, const std::string& policy_dir = "");
// Every search of a program linking devplace_learn: the baselines, then the learned searches.
SearchRegistry AllSearches(const std::string& policy_dir = "");
// The learned algorithm `name` using the policy in `policy_dir`. Error for an unknown name.
Expected<std::unique_ptr<SearchAlgorithm>> MakeLearnedSearchAlgorithm(std::string_view name,
                                                                      const std::string& policy_dir = "");
// AllSearches(policy_dir).Make(name): the lookup programs linking devplace_learn use.
Expected<std::unique_ptr<SearchAlgorithm>> MakeAnySearchAlgorithm(std::string_view name,
                                                                  const std::string& policy_dir = "");

}  // namespace devplace
