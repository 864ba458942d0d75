// Internal to exec/: a step of a partitioned strategy as a graph of tasks over tensor slots, and the worker
// threads that run it. A task runs on one device's worker once its predecessors have ended: a compute task runs a
// part kernel, a copy task copies a box of a slot's tensor into a fresh tensor on its device (the consuming worker
// copies, as in the plain executor), and a receive task is one step of a collective (a chunk of another member's
// tensor copied to this device and stored into, or added to, this member's tensor). Slots are written once per step
// (receives update their member's tensor in place, in the order the collective's dependencies fix). On a rank of a
// multi-process execution (exec/part_rank.h) a send task hands a box of a slot to the transport and an arrival task
// stands for a tensor another rank sends: it ends once the tensor has been delivered and its predecessors ended;
// a collective task is this rank's part of a process-group collective (exec/process_collectives.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/topology.h"

namespace devplace::exec {

enum class TaskKind : uint8_t { kCompute, kCopy, kReceive, kSend, kArrive, kZero, kCollective };

struct Task {
  TaskKind kind = TaskKind::kCompute;
  DeviceId device = 0;
  int32_t unit = -1;  // compute: the unit the runner runs
  // copy: slots[dst] = a copy, on `device`, of the box [lo, lo + size) of slots[src].
  // receive: slots[dst].narrow(axis, begin, length) is set to (or, with `add`, incremented by) a copy on `device` of
  // slots[src].narrow(axis, src_begin, length); with `alloc`, slots[dst] is first made a fresh tensor of
  // slots[src]'s shape on `device`.
  int32_t src = -1, dst = -1;
  std::vector<int64_t> lo, size;
  int32_t axis = 0;
  int64_t begin = 0, src_begin = 0, length = 0;
  bool add = false, alloc = false;
  bool local = false;  // receive: slots[src] is on `device` already, so it is read in place (no copy)
  // zero: slots[dst].narrow(axis, begin, length) is set to zeros (a ZeRO-3 part frees the weight pieces it gathered).
  // send: message `message` is the box [lo, lo + size) of slots[src], or with `chunk` slots[src].narrow(axis,
  // src_begin, length). arrive: message `message`, delivered from another rank, becomes slots[dst].
  // collective: this rank's member of a collective between processes on slots[dst] (axis, extent `length`), run by
  // the process group when its predecessors have ended (TaskHooks::collective; TaskRuntime::Complete ends it).
  int32_t message = -1;
  bool chunk = false;
  int32_t collective = -1;  // receive (and the send and arrival serving it): index into TaskProgram::collectives
  int64_t bytes = 0;        // copy, receive, send and arrive: bytes moved
  std::vector<int32_t> succ;
  int32_t preds = 0;
};

// One collective of a program, for reporting its time.
struct CollectiveInfo {
  std::string kind;  // "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast"
  std::string label; // what it serves, e.g. the op whose gradient it all-reduces
  std::vector<DeviceId> devices;
  int64_t bytes = 0;  // the collective's size as sim/collectives.h counts it
};

// A slot that holds a tensor living across steps (a ZeRO-3 part's weights, which its all-gathers fill in place).
struct BoundSlot {
  int32_t slot = -1;
  DeviceId device = 0;
  at::Tensor tensor;
};

struct TaskProgram {
  std::vector<Task> tasks;
  int32_t num_slots = 0;
  std::vector<CollectiveInfo> collectives;
  std::vector<BoundSlot> bound;  // set into their slots at the start of every step

  int32_t AddSlot() { return num_slots++; }
  // Adds a task and returns its id.
  int32_t Add(Task task);
  // `to` runs after `from` ends (ignored when from < 0).
  void Dep(int32_t from, int32_t to);
};

// Runs compute tasks: `unit` on `slots` (reads its input slots, writes its output slots).
using UnitRunner = std::function<void(int32_t unit, std::vector<at::Tensor>& slots)>;

// Per-task times of one step.
struct TaskTimes {
  std::vector<double> start, end;  // by task, seconds on exec::NowSeconds' clock
};

// What a rank's runtime does with send tasks and how it reports progress (exec/part_rank.h).
struct TaskHooks {
  std::function<void(const Task& send, at::Tensor data)> send;  // posts the message (data: a fresh tensor)
  std::function<void()> progress;                                // a task ended
  // A collective task's predecessors have ended (it runs off the workers; Complete ends it).
  std::function<void(int32_t task, std::vector<at::Tensor>& slots)> collective;
};

// Worker threads, one per device that has compute, copy, receive or send tasks, each pinned like the plain
// executor's. Arrival and collective tasks run on no worker: Deliver and Complete end them.
class TaskRuntime {
 public:
  // `program` must outlive the runtime; `torch_device` and `core` give each device's LibTorch device and core
  // (-1: unpinned).
  TaskRuntime(const TaskProgram& program, std::vector<at::Device> torch_device, std::vector<int> core);
  ~TaskRuntime();

  // Runs every task once with `run` for the compute tasks, on fresh slots. Returns an empty string, or the first
  // failure (the step is abandoned).
  // `started`, when set, is called once the step's state is ready for Deliver and before any task runs.
  std::string Step(const UnitRunner& run, std::vector<at::Tensor>* slots, TaskTimes* times,
                   const std::function<void()>& started = {});
  // Sends and progress reports (set before the first Step).
  void SetHooks(TaskHooks hooks);
  // During a Step: the message of arrival task `task` arrived as `data` (already on the task's device).
  void Deliver(int32_t task, at::Tensor data);
  // During a Step: collective task `task`, handed to TaskHooks::collective, ended (it started at `start`, on
  // exec::NowSeconds' clock).
  void Complete(int32_t task, double start);
  // During a Step: abandons it with `message` (the first failure wins).
  void Abort(const std::string& message);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace devplace::exec
