// Learned placement as SearchAlgorithms, so `devplace search` and `devplace compare` can run them beside the
// baselines. devplace_agents stays LibTorch-free: programs that link devplace_learn ask these functions for
// the extra algorithms (MakeSearchAlgorithm does not know them).
//   placer-zeroshot  the policy's placement without any search (1 evaluation)
//   placer-finetune  PPO fine-tuning on the graph within budget.max_evaluations (default 2000) and
//                    budget.max_seconds
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agents/search.h"
#include "core/status.h"

namespace devplace {

// {"placer-zeroshot", "placer-finetune"}.
std::vector<std::string> LearnedSearchAlgorithmNames();
// The learned algorithm `name` using the policy in `policy_dir` (empty: DefaultPolicyDir()); the policy is
// loaded when Search runs. Error for an unknown name.
Expected<std::unique_ptr<SearchAlgorithm>> MakeLearnedSearchAlgorithm(std::string_view name,
                                                                      const std::string& policy_dir = "");
// MakeSearchAlgorithm, then the learned algorithms: the lookup programs linking devplace_learn use.
Expected<std::unique_ptr<SearchAlgorithm>> MakeAnySearchAlgorithm(std::string_view name,
                                                                  const std::string& policy_dir = "");

}  // namespace devplace
