#include "agents/search_budget.h"

namespace devplace {

BudgetTracker::BudgetTracker(const SearchRequest& request)
    : start_(Clock::now()),
      last_report_(start_),
      max_evaluations_(request.budget.max_evaluations),
      max_seconds_(request.budget.max_seconds),
      progress_(request.progress) {}

double BudgetTracker::seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void BudgetTracker::RecordEvaluation(double best_step_time) {
  ++evaluations_;
  if (!progress_) return;
  Clock::time_point now = Clock::now();
  if (now - last_report_ < std::chrono::milliseconds(200)) return;
  last_report_ = now;
  progress_(SearchProgress{evaluations_, seconds(), best_step_time});
}

bool BudgetTracker::exhausted() const {
  if (max_evaluations_ > 0 && evaluations_ >= max_evaluations_) return true;
  return max_seconds_ > 0 && seconds() >= max_seconds_;
}

void BudgetTracker::ReportFinal(double best_step_time) const {
  if (progress_) progress_(SearchProgress{evaluations_, seconds(), best_step_time});
}

}  // namespace devplace
