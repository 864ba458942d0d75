// Internal to exec/: what the plain runtime (runtime.cc) and the task runtime (task_program.cc) share about the
// steps of their per-device worker threads: the start/finish handshake with the first failure of a step
// (StepGate), and the summary of the measured step times (SummariseSteps).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "exec/ready_queue.h"

namespace devplace::exec {

// Each worker thread runs Serve; Run starts one step on all of them and waits until each has finished it. A
// failure (Fail) is recorded once per step, sets the abort flag the workers' ReadyQueue::Pop watches and wakes
// their queues.
class StepGate {
 public:
  // A queue Fail wakes (a worker asleep in Pop notices the abort). Register every worker's before the first Run.
  void Watch(ReadyQueue* queue) { queues_.push_back(queue); }
  // The worker thread's loop: calls `step` once per Run, until Close.
  void Serve(const std::function<void()>& step);
  // Clears the abort flag, for a new step (a failure recorded since the last TakeError stays recorded).
  void Reset() { abort_.store(false); }
  // Starts a step on the `workers` threads in Serve and returns once every one of them has returned from its step.
  void Run(int32_t workers);
  // Records `message` unless the step already failed, and aborts the step.
  void Fail(const std::string& message);
  // The first failure recorded since the last TakeError, or an empty string.
  std::string error();
  // error(), which is then cleared.
  std::string TakeError();
  // Set by Fail; what ReadyQueue::Pop takes.
  const std::atomic<bool>& abort() const { return abort_; }
  // Makes Serve return; call before joining the worker threads.
  void Close();

 private:
  std::vector<ReadyQueue*> queues_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  int64_t generation_ = 0;
  int32_t running_ = 0;
  bool shutdown_ = false;
  std::atomic<bool> abort_{false};
  std::string error_;
};

// Sets result->median_step, min_step, max_step and spread from result->step_seconds (not empty).
void SummariseSteps(ExecResult* result);

}  // namespace devplace::exec
