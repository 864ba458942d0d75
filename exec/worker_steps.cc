#include "exec/worker_steps.h"

#include <algorithm>
#include <utility>

#include "core/quantile.h"
#include "exec/tensor_util.h"

namespace devplace::exec {

void StepGate::Serve(const std::function<void()>& step) {
  int64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return shutdown_ || generation_ != seen; });
      if (shutdown_) return;
      seen = generation_;
    }
    step();
    std::lock_guard<std::mutex> lock(mu_);
    if (--running_ == 0) done_cv_.notify_all();
  }
}

void StepGate::Run(int32_t workers) {
  std::unique_lock<std::mutex> lock(mu_);
  running_ = workers;
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lock, [&] { return running_ == 0; });
}

void StepGate::Fail(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.empty()) error_ = message;
  }
  abort_.store(true);
  for (ReadyQueue* q : queues_) q->Wake();
}

std::string StepGate::error() {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::string StepGate::TakeError() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string e = std::move(error_);
  error_.clear();
  return e;
}

void StepGate::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  start_cv_.notify_all();
}

void SummariseSteps(ExecResult* result) {
  const std::vector<double>& steps = result->step_seconds;
  result->median_step = Median(steps);
  result->min_step = *std::min_element(steps.begin(), steps.end());
  result->max_step = *std::max_element(steps.begin(), steps.end());
  result->spread = result->median_step > 0 ? (result->max_step - result->min_step) / result->median_step : 0.0;
}

}  // namespace devplace::exec
