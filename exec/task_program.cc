#include "exec/task_program.h"

#include <atomic>
#include <thread>

#include "core/check.h"
#include "exec/backend.h"
#include "exec/ready_queue.h"
#include "exec/tensor_util.h"
#include "exec/torch_errors.h"
#include "exec/worker_steps.h"

namespace devplace::exec {

int32_t TaskProgram::Add(Task task) {
  tasks.push_back(std::move(task));
  return static_cast<int32_t>(tasks.size()) - 1;
}

void TaskProgram::Dep(int32_t from, int32_t to) {
  if (from < 0) return;
  DEVPLACE_CHECK(from != to, "a task cannot wait for itself");
  tasks[from].succ.push_back(to);
  ++tasks[to].preds;
}

struct TaskRuntime::State {
  struct Worker {
    at::Device device{at::kCPU};
    int core = -1;
    int32_t num_tasks = 0;
    ReadyQueue queue;
    std::thread thread;
  };
  const TaskProgram& program;
  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<std::atomic<int32_t>[]> remaining;
  TaskHooks hooks;
  const UnitRunner* run = nullptr;
  std::vector<at::Tensor>* slots = nullptr;
  TaskTimes* times = nullptr;

  StepGate gate;

  explicit State(const TaskProgram& p) : program(p) {}

  void Execute(const Task& t, Worker* w) {
    std::vector<at::Tensor>& s = *slots;
    switch (t.kind) {
      case TaskKind::kCompute: (*run)(t.unit, s); break;
      case TaskKind::kCopy: s[t.dst] = CopyTo(NarrowBox(s[t.src], t.lo, t.size), w->device); break;
      case TaskKind::kReceive: {
        const at::Tensor from = s[t.src].narrow(t.axis, t.src_begin, t.length);
        const at::Tensor chunk = t.local ? from : CopyTo(from, w->device);
        if (t.alloc) s[t.dst] = at::zeros(s[t.src].sizes(), s[t.src].options().device(w->device));
        at::Tensor into = s[t.dst].narrow(t.axis, t.begin, t.length);
        if (t.add) into.add_(chunk);
        else into.copy_(chunk);
        break;
      }
      case TaskKind::kZero: s[t.dst].narrow(t.axis, t.begin, t.length).zero_(); break;
      case TaskKind::kSend: {  // a fresh tensor: the slot may change once the send task has ended
        const at::Tensor& src = s[t.src];
        hooks.send(t, (t.chunk ? src.narrow(t.axis, t.src_begin, t.length) : NarrowBox(src, t.lo, t.size)).clone());
        break;
      }
      case TaskKind::kArrive:
      case TaskKind::kCollective: break;  // not run by a worker
    }
    SyncDevice(w->device);
  }

  // `id` ended: its successors lose a predecessor; arrivals whose count reaches zero end at once.
  void Release(int32_t id) {
    for (int32_t next : program.tasks[id].succ)
      if (remaining[next].fetch_sub(1, std::memory_order_acq_rel) == 1) {
        if (program.tasks[next].kind == TaskKind::kArrive) {
          times->end[next] = NowSeconds();
          Release(next);
        } else if (program.tasks[next].kind == TaskKind::kCollective) {
          hooks.collective(next, *slots);
        } else {
          workers[program.tasks[next].device]->queue.Push(next);
        }
      }
    if (hooks.progress) hooks.progress();
  }

  void RunTasks(Worker* w) {
    for (int32_t done = 0; done < w->num_tasks; ++done) {
      const int32_t id = w->queue.Pop(gate.abort());
      if (id < 0) return;
      const Task& t = program.tasks[id];
      times->start[id] = NowSeconds();
      try {
        Execute(t, w);
      } catch (const std::exception& e) {
        gate.Fail(DescribeTorchFailure(e, w->device.str()));
        return;
      }
      times->end[id] = NowSeconds();
      Release(id);
    }
  }

  void WorkerMain(Worker* w) {
    SetUpWorkerThread(w->device, w->core);
    gate.Serve([&] { RunTasks(w); });
  }
};

TaskRuntime::TaskRuntime(const TaskProgram& program, std::vector<at::Device> torch_device, std::vector<int> core)
    : state_(std::make_unique<State>(program)) {
  State& s = *state_;
  s.workers.resize(torch_device.size());
  for (const Task& t : program.tasks) {
    if (t.kind == TaskKind::kArrive || t.kind == TaskKind::kCollective) continue;
    auto& w = s.workers[t.device];
    if (!w) {
      w = std::make_unique<State::Worker>();
      w->device = torch_device[t.device];
      w->core = core[t.device];
    }
    ++w->num_tasks;
  }
  s.remaining = std::make_unique<std::atomic<int32_t>[]>(program.tasks.size());
  for (auto& w : s.workers)
    if (w) s.gate.Watch(&w->queue);
  for (auto& w : s.workers)
    if (w) w->thread = std::thread(&State::WorkerMain, &s, w.get());
}

TaskRuntime::~TaskRuntime() {
  State& s = *state_;
  s.gate.Close();
  for (auto& w : s.workers)
    if (w && w->thread.joinable()) w->thread.join();
}

void TaskRuntime::SetHooks(TaskHooks hooks) { state_->hooks = std::move(hooks); }

void TaskRuntime::Abort(const std::string& message) { state_->gate.Fail(message); }

void TaskRuntime::Deliver(int32_t task, at::Tensor data) {
  State& s = *state_;
  if (s.gate.abort().load()) return;
  s.times->start[task] = NowSeconds();
  (*s.slots)[s.program.tasks[task].dst] = std::move(data);
  if (s.remaining[task].fetch_sub(1, std::memory_order_acq_rel) == 1) {
    s.times->end[task] = NowSeconds();
    s.Release(task);
  }
}

void TaskRuntime::Complete(int32_t task, double start) {
  State& s = *state_;
  if (s.gate.abort().load()) return;
  s.times->start[task] = start;
  s.times->end[task] = NowSeconds();
  s.Release(task);
}

std::string TaskRuntime::Step(const UnitRunner& run, std::vector<at::Tensor>* slots, TaskTimes* times,
                              const std::function<void()>& started) {
  State& s = *state_;
  const size_t n = s.program.tasks.size();
  slots->assign(static_cast<size_t>(s.program.num_slots), at::Tensor());
  for (const BoundSlot& b : s.program.bound) (*slots)[b.slot] = b.tensor;
  times->start.assign(n, 0.0);
  times->end.assign(n, 0.0);
  s.run = &run;
  s.slots = slots;
  s.times = times;
  s.gate.Reset();
  for (auto& w : s.workers)
    if (w) w->queue.Clear();
  for (size_t i = 0; i < n; ++i) {  // an arrival also waits for its delivery
    const Task& t = s.program.tasks[i];
    s.remaining[i].store(t.preds + (t.kind == TaskKind::kArrive ? 1 : 0), std::memory_order_relaxed);
  }
  for (size_t i = 0; i < n; ++i)
    if (s.program.tasks[i].preds == 0 && s.program.tasks[i].kind != TaskKind::kArrive &&
        s.program.tasks[i].kind != TaskKind::kCollective)
      s.workers[s.program.tasks[i].device]->queue.Push(static_cast<int32_t>(i));
  if (started) started();
  int32_t workers = 0;
  for (auto& w : s.workers) workers += w ? 1 : 0;
  s.gate.Run(workers);
  return s.gate.TakeError();
}

}  // namespace devplace::exec
