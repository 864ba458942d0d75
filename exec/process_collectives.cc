#include "exec/process_collectives.h"

#include <algorithm>
#include <deque>
#include <set>

#include "core/check.h"
#include "exec/backend.h"
#include "exec/torch_errors.h"

namespace devplace::exec {

bool RunsOnProcessGroup(const std::string& kind, const std::vector<int32_t>& member_ranks, int32_t world) {
  if (world < 2 || (kind != "all-reduce" && kind != "reduce-scatter")) return false;
  const std::set<int32_t> ranks(member_ranks.begin(), member_ranks.end());
  return ranks.size() >= 2 && ranks.size() == member_ranks.size() && *ranks.rbegin() < world;
}

Expected<std::vector<int32_t>> OrderCollectives(const TaskProgram& program, const std::vector<int32_t>& collective_of,
                                                const std::vector<double>& task_cost,
                                                const std::vector<int32_t>& collectives) {
  const int32_t n = static_cast<int32_t>(program.tasks.size());
  const int32_t nodes = n + static_cast<int32_t>(program.collectives.size());
  // Node of a task: itself, or (for a step of an ordered collective) the collective as one unit.
  auto node = [&](int32_t t) { return collective_of[t] >= 0 ? n + collective_of[t] : t; };
  std::vector<double> cost(nodes, 0.0), start(nodes, 0.0);
  std::vector<int32_t> indegree(nodes, 0);
  std::vector<char> present(nodes, 0);
  for (int32_t t = 0; t < n; ++t) {
    cost[node(t)] += task_cost[t];
    present[node(t)] = 1;
    for (int32_t s : program.tasks[t].succ)
      if (node(s) != node(t)) ++indegree[node(s)];
  }
  std::vector<std::vector<int32_t>> members(program.collectives.size());
  for (int32_t t = 0; t < n; ++t)
    if (collective_of[t] >= 0) members[collective_of[t]].push_back(t);
  std::deque<int32_t> queue;
  for (int32_t v = 0; v < nodes; ++v)
    if (present[v] && indegree[v] == 0) queue.push_back(v);
  int32_t visited = 0, total = 0;
  for (int32_t v = 0; v < nodes; ++v) total += present[v];
  while (!queue.empty()) {
    const int32_t v = queue.front();
    queue.pop_front();
    ++visited;
    const std::vector<int32_t> one{v};
    for (int32_t t : v >= n ? members[v - n] : one)
      for (int32_t s : program.tasks[t].succ) {
        const int32_t w = node(s);
        if (w == v) continue;
        start[w] = std::max(start[w], start[v] + cost[v]);
        if (--indegree[w] == 0) queue.push_back(w);
      }
  }
  if (visited != total)
    return Error{"partitioned execution over processes: collectives depend on each other both ways, so they cannot "
                 "run as process-group collectives in one order"};
  std::vector<int32_t> order = collectives;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return start[n + a] != start[n + b] ? start[n + a] < start[n + b] : a < b;
  });
  return order;
}

CollectiveSequencer::CollectiveSequencer(const TaskProgram& program, std::vector<ProcessCollective> order,
                                         std::vector<ProcessGroup*> groups)
    : program_(program), order_(std::move(order)), groups_(std::move(groups)), index_of_task_(program.tasks.size(), -1) {
  DEVPLACE_CHECK(groups_.size() == order_.size(), "a group per collective");
  for (size_t k = 0; k < order_.size(); ++k) index_of_task_[order_[k].task] = static_cast<int32_t>(k);
  ready_.assign(order_.size(), 0);
}

CollectiveSequencer::~CollectiveSequencer() {
  Abort();
  EndStep();
}

void CollectiveSequencer::BeginStep(Complete complete, Fail fail) {
  EndStep();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.assign(order_.size(), 0);
    slots_ = nullptr;
    aborted_ = false;
    issued_all_ = false;
    in_flight_.clear();
    complete_ = std::move(complete);
    fail_ = std::move(fail);
  }
  if (order_.empty()) return;
  issuer_ = std::thread(&CollectiveSequencer::Issue, this);
  completer_ = std::thread(&CollectiveSequencer::Finish, this);
}

void CollectiveSequencer::Ready(int32_t task, std::vector<at::Tensor>& slots) {
  const int32_t k = index_of_task_[task];
  DEVPLACE_CHECK(k >= 0, "a collective task the sequencer runs");
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_[k] = 1;
    slots_ = &slots;
  }
  cv_.notify_all();
}

void CollectiveSequencer::Abort() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    for (InFlight& f : in_flight_) f.pending.Abort();
  }
  cv_.notify_all();
}

void CollectiveSequencer::EndStep() {
  if (issuer_.joinable()) issuer_.join();
  if (completer_.joinable()) completer_.join();
}

void CollectiveSequencer::Stop(const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return;  // the first failure is reported (an abort after another failure is its echo)
    aborted_ = true;
    for (InFlight& f : in_flight_) f.pending.Abort();
  }
  cv_.notify_all();
  fail_(message);
}

void CollectiveSequencer::Issue() {
  for (size_t k = 0; k < order_.size(); ++k) {
    std::vector<at::Tensor>* slots = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return aborted_ || ready_[k]; });
      if (aborted_) break;
      slots = slots_;
    }
    InFlight f;
    f.k = k;
    f.start = NowSeconds();
    Status s = Status::Ok();
    try {
      s = Start(order_[k], *groups_[k], (*slots)[program_.tasks[order_[k].task].dst], &f);
    } catch (const std::exception& e) {
      s = Error{groups_[k]->Who() + ": " + order_[k].what + ": " + DescribeTorchFailure(e, "cpu")};
    }
    if (!s) {
      Stop(s.error().message);
      break;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.push_back(std::move(f));
    }
    cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    issued_all_ = true;
  }
  cv_.notify_all();
}

void CollectiveSequencer::Finish() {
  for (;;) {
    InFlight f;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !in_flight_.empty() || issued_all_; });
      if (in_flight_.empty()) return;  // everything issued has completed (or the step was abandoned)
      f = in_flight_.front();  // a handle: Abort still reaches it while this thread waits
    }
    Status s = f.pending.Wait();
    if (s) {
      try {
        f.done();
      } catch (const std::exception& e) {
        s = Error{groups_[f.k]->Who() + ": " + order_[f.k].what + ": " + DescribeTorchFailure(e, "cpu")};
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_flight_.pop_front();
    }
    if (!s) {
      Stop(s.error().message);
      continue;  // the rest were aborted: wait for them to end
    }
    bool aborted = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      aborted = aborted_;
    }
    if (!aborted) complete_(order_[f.k].task, f.start);
  }
}

Status CollectiveSequencer::Start(const ProcessCollective& c, ProcessGroup& group, at::Tensor& slot, InFlight* f) {
  const Task& t = program_.tasks[c.task];
  at::Tensor view = slot.narrow(t.axis, 0, t.length);
  if (!c.scatter) {
    at::Tensor flat = view.is_contiguous() ? view : view.contiguous();
    Expected<PendingTransfer> p = group.StartAllReduceSum(flat, c.what);
    if (!p) return p.error();
    f->pending = *p;
    f->done = [view, flat]() mutable {
      if (!view.is_same(flat)) view.copy_(flat);
    };
    return Status::Ok();
  }
  // Reduce-scatter: rank r receives every rank's chunk of its member, and adds them up in rank order.
  const int64_t n = static_cast<int64_t>(c.member_of_rank.size());
  auto chunk = [&](int64_t i) {
    return view.narrow(t.axis, t.length * i / n, t.length * (i + 1) / n - t.length * i / n);
  };
  std::vector<at::Tensor> pieces;
  std::vector<int64_t> in_splits, out_splits;
  at::Tensor mine = chunk(c.member_of_rank[group.rank()]);
  for (int32_t r = 0; r < group.size(); ++r) {
    pieces.push_back(chunk(c.member_of_rank[r]).contiguous().reshape({-1}));
    in_splits.push_back(pieces.back().numel());
    out_splits.push_back(mine.numel());
  }
  at::Tensor input = at::cat(pieces);
  at::Tensor output = at::empty({mine.numel() * group.size()}, input.options());
  Expected<PendingTransfer> p = group.StartAllToAll(output, input, out_splits, in_splits, c.what);
  if (!p) return p.error();
  f->pending = *p;
  const int32_t size = group.size();
  f->done = [mine, input, output, size]() mutable {
    const int64_t len = mine.numel();
    at::Tensor sum = output.narrow(0, 0, len).clone();
    for (int32_t r = 1; r < size; ++r) sum.add_(output.narrow(0, r * len, len));
    mine.copy_(sum.view(mine.sizes()));
  };
  return Status::Ok();
}

}  // namespace devplace::exec
