// Budget keeping shared by the search algorithms: counts evaluations, watches the clock, and rate-limits
// progress reports.
#pragma once

#include <chrono>
#include <cstdint>

#include "agents/search.h"

namespace devplace {

// Tracks one search's use of its budget.
class BudgetTracker {
 public:
  explicit BudgetTracker(const SearchRequest& request);

  // Records one evaluation and whether it improved the best step time; reports progress at most every 0.2 s.
  void RecordEvaluation(double best_step_time);
  // True once either limit is reached. With both limits unset it never is.
  bool exhausted() const;
  bool limited() const { return max_evaluations_ > 0 || max_seconds_ > 0; }
  int64_t evaluations() const { return evaluations_; }
  double seconds() const;
  // Sends a final progress report (if a callback is set).
  void ReportFinal(double best_step_time) const;

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
  mutable Clock::time_point last_report_;
  int64_t max_evaluations_;
  double max_seconds_;
  int64_t evaluations_ = 0;
  ProgressCallback progress_;
};

}  // namespace devplace
