// Internal to exec/: collectives between processes run as c10d process-group collectives (docs/executor.md,
// "Multi-process runs"). A collective of a partitioned plan whose members live one per rank of the group (a
// data-parallel gradient all-reduce over two processes, a reduction split's reduce-scatter) is not sent as ring steps
// of point-to-point messages: each rank's member becomes one collective task (TaskKind::kCollective) that the
// process group runs once the member's input is ready - an all-reduce, or a reduce-scatter as an all-to-all of the
// chunks and a local sum. c10d requires every rank to issue its collectives in the same order, so each rank runs them
// on one thread in an order every rank computes alike from the whole plan (OrderCollectives): by the earliest time
// each can start when every task takes its cost, which respects every dependency between them, so none waits for
// one issued after it (no deadlock), and follows the order in which the simulator's schedule makes them ready.
#pragma once

#include <ATen/ATen.h>

#include <condition_variable>
#include <deque>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "distributed/process_group.h"
#include "exec/task_program.h"

namespace devplace::exec {

// One collective between processes as this rank runs it.
struct ProcessCollective {
  int32_t collective = -1;  // index into TaskProgram::collectives
  bool scatter = false;     // reduce-scatter (member i keeps chunk i summed); else all-reduce
  int32_t task = -1;        // this rank's collective task (it holds the member's slot, axis and extent)
  std::vector<int32_t> ranks;           // the ranks taking part, sorted (all of the group, or a subgroup's)
  std::vector<int32_t> member_of_rank;  // by position in `ranks`: the member that rank holds (chunk i is member i's)
  std::string what;         // for errors, e.g. "the all-reduce of 'fc1/grad'"
};

// Whether a collective of `kind` over members on ranks `member_ranks` runs as one process-group collective of a
// `world`-rank group (or of a subgroup of it, when not every rank takes part): an all-reduce or reduce-scatter with
// its members on distinct ranks.
bool RunsOnProcessGroup(const std::string& kind, const std::vector<int32_t>& member_ranks, int32_t world);

// The order to issue `collectives` (indices into program.collectives) in: collective_of[t] is task t's collective
// when t is a step of one of them (else -1), task_cost[t] > 0 its estimated duration. Each collective taken as one
// unit (all its steps at once), sorted by the earliest time it can start, ties by index; a collective that depends
// on another thus comes after it. Errors when two of them depend on each other (the plan cannot run them as units).
Expected<std::vector<int32_t>> OrderCollectives(const TaskProgram& program, const std::vector<int32_t>& collective_of,
                                                const std::vector<double>& task_cost,
                                                const std::vector<int32_t>& collectives);

// Runs a rank's process-group collectives on two threads of its own: one starts collective k of `order` once it is
// ready (its task's predecessors ended: Ready) and every collective before it has been started, on the group of its
// ranks, without waiting for it (several run at once, as c10d allows); the other waits for them in order and ends
// their tasks. Subgroups pair their collectives in the order of each member's sequence too, and every
// member's sequence is the shared order restricted to its collectives, so the same argument holds.
class CollectiveSequencer {
 public:
  using Complete = std::function<void(int32_t task, double start)>;
  using Fail = std::function<void(const std::string&)>;

  // `order`: this rank's collectives in the order every rank issues them; groups[k]: the group of order[k]'s ranks
  // (this rank's rank there indexes member_of_rank). The groups must outlive the sequencer.
  CollectiveSequencer(const TaskProgram& program, std::vector<ProcessCollective> order,
                      std::vector<ProcessGroup*> groups);
  ~CollectiveSequencer();
  CollectiveSequencer(const CollectiveSequencer&) = delete;
  CollectiveSequencer& operator=(const CollectiveSequencer&) = delete;

  // Starts a step (after the step's start barrier): `complete` ends a collective task, `fail` reports a failure.
  void BeginStep(Complete complete, Fail fail);
  // Collective task `task`'s input is in `slots` (TaskHooks::collective; any thread).
  void Ready(int32_t task, std::vector<at::Tensor>& slots);
  // Stops issuing (a failure elsewhere); a collective under way ends when the group's call returns.
  void Abort();
  // Waits until the step's collectives are done or abandoned.
  void EndStep();

 private:
  struct InFlight {  // a collective started and not yet waited for
    size_t k = 0;
    double start = 0.0;
    PendingTransfer pending;
    std::function<void()> done;  // after the wait: what lands in the member's slot
  };
  void Issue();   // starts the collectives in order, each once it is ready
  void Finish();  // waits for them in order and ends their tasks
  void Stop(const std::string& message);
  Status Start(const ProcessCollective& c, ProcessGroup& group, at::Tensor& slot, InFlight* f);

  const TaskProgram& program_;
  std::vector<ProcessCollective> order_;
  std::vector<ProcessGroup*> groups_;
  std::vector<int32_t> index_of_task_;  // by task: its position in order_, or -1
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<char> ready_;
  std::vector<at::Tensor>* slots_ = nullptr;
  bool aborted_ = false;
  bool issued_all_ = false;
  std::deque<InFlight> in_flight_;
  Complete complete_;
  Fail fail_;
  std::thread issuer_, completer_;
};

}  // namespace devplace::exec
