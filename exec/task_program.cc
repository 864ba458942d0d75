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

namespace {

at::Tensor Box(const at::Tensor& t, const std::vector<int64_t>& lo, const std::vector<int64_t>& size) {
  at::Tensor v = t;
  for (size_t a = 0; a < lo.size(); ++a)
    if (lo[a] != 0 || size[a] != t.size(static_cast<int64_t>(a))) v = v.narrow(static_cast<int64_t>(a), lo[a], size[a]);
  return v;
}

}  // namespace

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
  const UnitRunner* run = nullptr;
  std::vector<at::Tensor>* slots = nullptr;
  TaskTimes* times = nullptr;

  StepGate gate;

  explicit State(const TaskProgram& p) : program(p) {}

  void Execute(const Task& t, Worker* w) {
    std::vector<at::Tensor>& s = *slots;
    switch (t.kind) {
      case TaskKind::kCompute: (*run)(t.unit, s); break;
      case TaskKind::kCopy: s[t.dst] = CopyTo(Box(s[t.src], t.lo, t.size), w->device); break;
      case TaskKind::kReceive: {
        at::Tensor chunk = CopyTo(s[t.src].narrow(t.axis, t.src_begin, t.length), w->device);
        if (t.alloc) s[t.dst] = at::zeros(s[t.src].sizes(), s[t.src].options().device(w->device));
        at::Tensor into = s[t.dst].narrow(t.axis, t.begin, t.length);
        if (t.add) into.add_(chunk);
        else into.copy_(chunk);
        break;
      }
    }
    SyncDevice(w->device);
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
      for (int32_t next : t.succ)
        if (remaining[next].fetch_sub(1, std::memory_order_acq_rel) == 1)
          workers[program.tasks[next].device]->queue.Push(next);
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

std::string TaskRuntime::Step(const UnitRunner& run, std::vector<at::Tensor>* slots, TaskTimes* times) {
  State& s = *state_;
  const size_t n = s.program.tasks.size();
  slots->assign(static_cast<size_t>(s.program.num_slots), at::Tensor());
  times->start.assign(n, 0.0);
  times->end.assign(n, 0.0);
  s.run = &run;
  s.slots = slots;
  s.times = times;
  s.gate.Reset();
  for (auto& w : s.workers)
    if (w) w->queue.Clear();
  for (size_t i = 0; i < n; ++i) s.remaining[i].store(s.program.tasks[i].preds, std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i)
    if (s.program.tasks[i].preds == 0) s.workers[s.program.tasks[i].device]->queue.Push(static_cast<int32_t>(i));
  int32_t workers = 0;
  for (auto& w : s.workers) workers += w ? 1 : 0;
  s.gate.Run(workers);
  return s.gate.TakeError();
}

}  // namespace devplace::exec
