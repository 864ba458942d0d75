#include "sim/reshard.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>

#include "sim/collectives.h"

namespace devplace {
namespace {

using sim::CommBuilder;
using sim::Ready;

// `receivers` grouped by host: the sender's host first, then the hosts in order of their lowest receiver; ids
// ascending inside a host. A chain or ring in this order crosses each pair of hosts once.
std::vector<std::vector<DeviceId>> ByHost(const Topology& topology, DeviceId sender,
                                          const std::vector<DeviceId>& receivers) {
  std::vector<std::vector<DeviceId>> hosts;
  std::map<std::string, size_t> index;
  index.emplace(topology.device(sender).host, 0);
  hosts.emplace_back();
  for (DeviceId r : receivers) {
    auto [it, added] = index.emplace(topology.device(r).host, hosts.size());
    if (added) hosts.emplace_back();
    hosts[it->second].push_back(r);
  }
  if (hosts[0].empty()) hosts.erase(hosts.begin());
  return hosts;
}

// Appends the sends and collectives carrying one unit task from `sender`.
void Carry(CommBuilder* b, const Topology& topology, const UnitTask& task, DeviceId sender, ReshardMethod method,
           int32_t chunks) {
  const std::vector<std::vector<DeviceId>> hosts = ByHost(topology, sender, task.receivers);
  std::vector<DeviceId> all;
  for (const auto& h : hosts) all.insert(all.end(), h.begin(), h.end());
  // A send of piece i of `members.size()` pieces of the slice to each member, then a ring all-gather among them.
  auto scatter_gather = [&](const std::vector<DeviceId>& members) {
    const int64_t n = static_cast<int64_t>(members.size());
    std::vector<Ready> pieces;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t bytes = std::max<int64_t>(1, task.bytes * (i + 1) / n - task.bytes * i / n);
      pieces.push_back(b->Send(sender, members[i], bytes, {}));
    }
    b->AllGather(members, task.bytes, pieces);
  };
  switch (method) {
    case ReshardMethod::kSendRecv:
      for (DeviceId r : all) b->Send(sender, r, task.bytes, {});
      break;
    case ReshardMethod::kAlpa:
      for (const auto& h : hosts) scatter_gather(h);
      break;
    case ReshardMethod::kGlobalAllGather:
      scatter_gather(all);
      break;
    case ReshardMethod::kBroadcast:
      b->Broadcast(sender, all, task.bytes, chunks, {});
      break;
  }
}

// Bytes `task` makes its sender inject under `method`.
int64_t SenderLoad(const Topology& topology, const UnitTask& task, ReshardMethod method) {
  if (method == ReshardMethod::kSendRecv) return task.bytes * static_cast<int64_t>(task.receivers.size());
  if (method == ReshardMethod::kAlpa)
    return task.bytes * static_cast<int64_t>(ByHost(topology, task.receivers[0], task.receivers).size());
  return task.bytes;
}

// The task order that issues each sender's tasks round-robin (senders by first appearance in `order`), so that the
// first tasks to start use different senders.
std::vector<int32_t> Interleave(const std::vector<int32_t>& order, const std::vector<DeviceId>& sender) {
  std::vector<std::vector<int32_t>> queues;
  std::map<DeviceId, size_t> index;
  for (int32_t t : order) {
    auto [it, added] = index.emplace(sender[t], queues.size());
    if (added) queues.emplace_back();
    queues[it->second].push_back(t);
  }
  std::vector<int32_t> out;
  for (size_t round = 0; out.size() < order.size(); ++round)
    for (const auto& q : queues)
      if (round < q.size()) out.push_back(q[round]);
  return out;
}

// Greedy: in `order`, each task takes the holder with the least load so far (ties: the lowest id, or with `rng` a
// random one of them).
std::vector<DeviceId> Greedy(const std::vector<UnitTask>& tasks, const std::vector<int64_t>& load_of,
                             const std::vector<int32_t>& order, std::mt19937_64* rng) {
  std::map<DeviceId, int64_t> load;
  std::vector<DeviceId> sender(tasks.size(), -1);
  for (int32_t t : order) {
    std::vector<DeviceId> best;
    int64_t least = 0;
    for (DeviceId s : tasks[t].senders) {
      const int64_t l = load[s];
      if (best.empty() || l < least) best = {s}, least = l;
      else if (l == least) best.push_back(s);
    }
    sender[t] = rng ? best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(*rng)] : best[0];
    load[sender[t]] += load_of[t];
  }
  return sender;
}

// Depth-first search over sender choices (tasks by decreasing load) minimising the largest sender load, pruning a
// branch once its largest load reaches the best found; starts from the greedy assignment's bound.
class SenderSearch {
 public:
  SenderSearch(const std::vector<UnitTask>& tasks, const std::vector<int64_t>& load_of, int64_t node_limit)
      : tasks_(tasks), load_of_(load_of), limit_(node_limit) {}

  std::vector<DeviceId> Run(std::vector<DeviceId> start) {
    order_.resize(tasks_.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) { return load_of_[a] > load_of_[b]; });
    best_ = std::move(start);
    best_max_ = MaxLoad(best_);
    current_.assign(tasks_.size(), -1);
    Visit(0, 0);
    return best_;
  }

 private:
  int64_t MaxLoad(const std::vector<DeviceId>& sender) const {
    std::map<DeviceId, int64_t> load;
    int64_t most = 0;
    for (size_t t = 0; t < sender.size(); ++t) most = std::max(most, load[sender[t]] += load_of_[t]);
    return most;
  }
  void Visit(size_t depth, int64_t most) {
    if (most >= best_max_ || nodes_++ >= limit_) return;
    if (depth == order_.size()) {
      best_ = current_;
      best_max_ = most;
      return;
    }
    const int32_t t = order_[depth];
    for (DeviceId s : tasks_[t].senders) {
      int64_t& l = load_[s];
      l += load_of_[t];
      current_[t] = s;
      Visit(depth + 1, std::max(most, l));
      load_[s] -= load_of_[t];
    }
  }

  const std::vector<UnitTask>& tasks_;
  const std::vector<int64_t>& load_of_;
  const int64_t limit_;
  int64_t nodes_ = 0, best_max_ = 0;
  std::vector<int32_t> order_;
  std::vector<DeviceId> best_, current_;
  std::map<DeviceId, int64_t> load_;
};

}  // namespace

Expected<double> SimulateReshardPlan(const Topology& topology, const std::vector<UnitTask>& tasks,
                                     const ReshardPlan& plan, const ReshardOptions& options, int64_t* bytes_moved) {
  if (plan.sender.size() != tasks.size() || plan.order.size() != tasks.size())
    return Error{"resharding plan has " + std::to_string(plan.sender.size()) + " senders and " +
                 std::to_string(plan.order.size()) + " positions for " + std::to_string(tasks.size()) + " tasks"};
  std::vector<char> seen(tasks.size(), 0);
  for (int32_t t : plan.order) {
    if (t < 0 || t >= static_cast<int32_t>(tasks.size()) || seen[t]++)
      return Error{"resharding plan: the order is not a permutation of the tasks"};
    if (!std::binary_search(tasks[t].senders.begin(), tasks[t].senders.end(), plan.sender[t]))
      return Error{"resharding plan: task " + std::to_string(t) + "'s sender does not hold its slice"};
  }
  if (options.broadcast_chunks < 1) return Error{"broadcast_chunks must be >= 1"};
  sim::TaskGraph tg;
  CommBuilder builder(topology, options.sim, &tg);
  for (int32_t t : plan.order) Carry(&builder, topology, tasks[t], plan.sender[t], plan.method, options.broadcast_chunks);
  builder.Finish();
  if (bytes_moved) {
    *bytes_moved = 0;
    for (int32_t t = 0; t < tg.num_tasks(); ++t) *bytes_moved += tg.first_hop[t] ? tg.bytes[t] : 0;
  }
  sim::Engine engine;
  return builder.Run(&engine);
}

Expected<ReshardResult> PlanReshard(const Topology& topology, const std::vector<UnitTask>& tasks,
                                    const ReshardOptions& options) {
  if (options.random_trials < 1) return Error{"random_trials must be >= 1"};
  std::vector<int64_t> load_of;
  std::vector<int32_t> slice_order(tasks.size());
  std::iota(slice_order.begin(), slice_order.end(), 0);
  ReshardResult result;
  for (const UnitTask& t : tasks) {
    if (t.senders.empty() || t.receivers.empty()) return Error{"a unit task has no holder or no receiver"};
    load_of.push_back(SenderLoad(topology, t, options.method));
    result.slice_bytes += t.bytes;
    result.max_receivers = std::max(result.max_receivers, static_cast<int32_t>(t.receivers.size()));
  }
  // Candidate plans with the balancer each came from; the one with the least simulated time is kept (first on ties).
  std::vector<std::pair<ReshardPlan, ReshardBalance>> candidates;
  auto add = [&](std::vector<DeviceId> sender, std::vector<int32_t> order, ReshardBalance from) {
    candidates.push_back({ReshardPlan{options.method, std::move(sender), std::move(order)}, from});
  };
  const ReshardBalance b = options.balance;
  if (b == ReshardBalance::kNaive) {
    std::vector<DeviceId> sender;
    for (const UnitTask& t : tasks) sender.push_back(t.senders[0]);
    add(sender, slice_order, b);
  }
  const std::vector<DeviceId> greedy = Greedy(tasks, load_of, slice_order, nullptr);
  if (b == ReshardBalance::kLoadBalance) add(greedy, slice_order, b);
  if (b == ReshardBalance::kDfs || b == ReshardBalance::kOurs) {
    std::vector<DeviceId> sender = SenderSearch(tasks, load_of, options.dfs_node_limit).Run(greedy);
    add(sender, Interleave(slice_order, sender), ReshardBalance::kDfs);
  }
  if (b == ReshardBalance::kRandomGreedy || b == ReshardBalance::kOurs) {
    std::mt19937_64 rng(options.seed);
    for (int32_t trial = 0; trial < options.random_trials; ++trial) {
      std::vector<int32_t> order = slice_order;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<DeviceId> sender = Greedy(tasks, load_of, order, &rng);
      add(sender, Interleave(order, sender), ReshardBalance::kRandomGreedy);
    }
  }
  bool first = true;
  for (auto& [plan, from] : candidates) {
    int64_t moved = 0;
    Expected<double> seconds = SimulateReshardPlan(topology, tasks, plan, options, &moved);
    if (!seconds.ok()) return seconds.error();
    if (first || *seconds < result.seconds) {
      result.seconds = *seconds;
      result.plan = std::move(plan);
      result.chosen = from;
      result.bytes_moved = moved;
      first = false;
    }
  }
  return result;
}

}  // namespace devplace
