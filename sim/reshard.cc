#include "sim/reshard.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>

#include "sim/collectives.h"
#include "sim/reshard_carry.h"

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

// What a unit task costs the sender that carries it: the bytes it sends to other hosts through the sender host's
// network link (`cross`) and the bytes it sends in all (`total`). Balancers compare loads as (host's cross bytes,
// device's total bytes), lexicographically: the host's NIC is usually the scarcer resource.
struct Load {
  int64_t cross = 0, total = 0;
  Load& operator+=(const Load& o) {
    cross += o.cross;
    total += o.total;
    return *this;
  }
  Load& operator-=(const Load& o) {
    cross -= o.cross;
    total -= o.total;
    return *this;
  }
};

class LoadModel {
 public:
  LoadModel(const Topology& topology, ReshardMethod method) : topology_(topology), method_(method) {
    std::map<std::string, int32_t> index;
    for (DeviceId d = 0; d < topology.num_devices(); ++d)
      host_.push_back(index.emplace(topology.device(d).host, static_cast<int32_t>(index.size())).first->second);
  }
  int32_t host(DeviceId d) const { return host_[d]; }
  Load Of(const UnitTask& task, DeviceId sender) const {
    const int64_t n = static_cast<int64_t>(task.receivers.size());
    int64_t off_host = 0;
    for (DeviceId r : task.receivers) off_host += host_[r] != host_[sender] ? 1 : 0;
    const int64_t hosts = static_cast<int64_t>(ByHost(topology_, sender, task.receivers).size());
    const bool own_host = off_host < n;  // some receivers share the sender's host
    switch (method_) {
      case ReshardMethod::kSendRecv: return {task.bytes * off_host, task.bytes * n};
      case ReshardMethod::kAlpa: return {task.bytes * (hosts - (own_host ? 1 : 0)), task.bytes * hosts};
      case ReshardMethod::kGlobalAllGather: return {task.bytes * off_host / n, task.bytes};
      case ReshardMethod::kBroadcast: return {off_host > 0 ? task.bytes : 0, task.bytes};
    }
    return {};
  }

 private:
  const Topology& topology_;
  ReshardMethod method_;
  std::vector<int32_t> host_;  // per device: its host's index
};

// Per-host cross bytes and per-device total bytes assigned so far.
struct Loads {
  std::vector<int64_t> host, device;
  explicit Loads(const Topology& t) : host(static_cast<size_t>(t.num_devices()), 0), device(host) {}
  // The (host, device) load `sender` would have with `add` on top, for lexicographic comparison.
  std::pair<int64_t, int64_t> With(const LoadModel& m, DeviceId sender, const Load& add) const {
    return {host[m.host(sender)] + add.cross, device[sender] + add.total};
  }
  void Add(const LoadModel& m, DeviceId sender, const Load& l, int sign) {
    host[m.host(sender)] += sign * l.cross;
    device[sender] += sign * l.total;
  }
};

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

// The issue order in rounds: each round takes, in `order`, the tasks that share no sending device, no sending host
// (between tasks that leave it) and no receiving host with a task already in the round, so that the tasks issued
// together use disjoint NICs where they can (the order Alpa's scheduler aims for).
std::vector<int32_t> Rounds(const std::vector<int32_t>& order, const std::vector<DeviceId>& sender,
                            const std::vector<UnitTask>& tasks, const LoadModel& model, const Topology& topology) {
  std::vector<int32_t> out, remaining = order, next;
  const size_t n = static_cast<size_t>(topology.num_devices());
  while (!remaining.empty()) {
    std::vector<char> device_used(n, 0), send_host_used(n, 0), recv_host_used(n, 0);
    next.clear();
    for (int32_t t : remaining) {
      const DeviceId s = sender[t];
      const bool cross = model.Of(tasks[t], s).cross > 0;
      bool free = !device_used[s] && !(cross && send_host_used[model.host(s)]);
      for (DeviceId r : tasks[t].receivers) free = free && !recv_host_used[model.host(r)];
      if (!free) {
        next.push_back(t);
        continue;
      }
      out.push_back(t);
      device_used[s] = 1;
      if (cross) send_host_used[model.host(s)] = 1;
      for (DeviceId r : tasks[t].receivers) recv_host_used[model.host(r)] = 1;
    }
    std::swap(remaining, next);
  }
  return out;
}

// Greedy: in `order`, each task takes the holder whose (host, device) load would be least (ties: the lowest id, or
// with `rng` a random one of them).
std::vector<DeviceId> Greedy(const std::vector<UnitTask>& tasks, const LoadModel& model, const Topology& topology,
                             const std::vector<int32_t>& order, std::mt19937_64* rng) {
  Loads loads(topology);
  std::vector<DeviceId> sender(tasks.size(), -1);
  for (int32_t t : order) {
    std::vector<DeviceId> best;
    std::pair<int64_t, int64_t> least;
    for (DeviceId s : tasks[t].senders) {
      const std::pair<int64_t, int64_t> l = loads.With(model, s, model.Of(tasks[t], s));
      if (best.empty() || l < least) best = {s}, least = l;
      else if (l == least) best.push_back(s);
    }
    sender[t] = rng ? best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(*rng)] : best[0];
    loads.Add(model, sender[t], model.Of(tasks[t], sender[t]), +1);
  }
  return sender;
}

// Depth-first search over sender choices (tasks by decreasing size) minimising (the largest host load, the largest
// device load) lexicographically, pruning a branch once it reaches the best found; starts from a given assignment's
// bound and stops after `node_limit` nodes with the best so far.
class SenderSearch {
 public:
  SenderSearch(const std::vector<UnitTask>& tasks, const LoadModel& model, const Topology& topology,
               int64_t node_limit)
      : tasks_(tasks), model_(model), loads_(topology), limit_(node_limit) {}

  std::vector<DeviceId> Run(const std::vector<DeviceId>& start) {
    order_.resize(tasks_.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(),
                     [&](int32_t a, int32_t b) { return tasks_[a].bytes > tasks_[b].bytes; });
    best_ = start;
    for (size_t t = 0; t < start.size(); ++t) loads_.Add(model_, start[t], model_.Of(tasks_[t], start[t]), +1);
    best_max_ = Max();
    for (size_t t = 0; t < start.size(); ++t) loads_.Add(model_, start[t], model_.Of(tasks_[t], start[t]), -1);
    current_.assign(tasks_.size(), -1);
    Visit(0, {0, 0});
    return best_;
  }

 private:
  using Key = std::pair<int64_t, int64_t>;
  Key Max() const {
    return {*std::max_element(loads_.host.begin(), loads_.host.end()),
            *std::max_element(loads_.device.begin(), loads_.device.end())};
  }
  void Visit(size_t depth, Key most) {
    if (!(most < best_max_) || nodes_++ >= limit_) return;
    if (depth == order_.size()) {
      best_ = current_;
      best_max_ = most;
      return;
    }
    const int32_t t = order_[depth];
    for (DeviceId s : tasks_[t].senders) {
      const Load l = model_.Of(tasks_[t], s);
      loads_.Add(model_, s, l, +1);
      current_[t] = s;
      Visit(depth + 1, {std::max(most.first, loads_.host[model_.host(s)]), std::max(most.second, loads_.device[s])});
      loads_.Add(model_, s, l, -1);
    }
  }

  const std::vector<UnitTask>& tasks_;
  const LoadModel& model_;
  Loads loads_;
  const int64_t limit_;
  int64_t nodes_ = 0;
  Key best_max_;
  std::vector<int32_t> order_;
  std::vector<DeviceId> best_, current_;
};

}  // namespace

namespace sim {

std::vector<std::pair<DeviceId, Ready>> CarryUnitTask(CommBuilder* b, const Topology& topology, const UnitTask& task,
                                                      int64_t bytes, DeviceId sender, ReshardMethod method,
                                                      int32_t chunks, const Ready& after) {
  const std::vector<std::vector<DeviceId>> hosts = ByHost(topology, sender, task.receivers);
  std::vector<std::pair<DeviceId, Ready>> done;
  // A send of piece i of `members.size()` pieces of the slice to each member, then a ring all-gather among them.
  auto scatter_gather = [&](const std::vector<DeviceId>& members) {
    const int64_t n = static_cast<int64_t>(members.size());
    std::vector<Ready> pieces;
    for (int64_t i = 0; i < n; ++i)
      pieces.push_back(b->Send(sender, members[i], std::max<int64_t>(1, bytes * (i + 1) / n - bytes * i / n), after));
    std::vector<Ready> gathered = b->AllGather(members, bytes, pieces);
    for (size_t i = 0; i < members.size(); ++i) {  // the member's own piece, then what the ring brought it
      if (members.size() > 1) gathered[i].insert(gathered[i].begin(), pieces[i].begin(), pieces[i].end());
      done.emplace_back(members[i], std::move(gathered[i]));
    }
  };
  std::vector<DeviceId> all;
  for (const auto& h : hosts) all.insert(all.end(), h.begin(), h.end());
  switch (method) {
    case ReshardMethod::kSendRecv:
      for (DeviceId r : all) done.emplace_back(r, b->Send(sender, r, bytes, after));
      break;
    case ReshardMethod::kAlpa:
      for (const auto& h : hosts) scatter_gather(h);
      break;
    case ReshardMethod::kGlobalAllGather:
      scatter_gather(all);
      break;
    case ReshardMethod::kBroadcast: {
      const std::vector<Ready> arrived = b->Broadcast(sender, all, bytes, chunks, after);
      for (size_t i = 0; i < all.size(); ++i) done.emplace_back(all[i], arrived[i]);
      break;
    }
  }
  return done;
}

}  // namespace sim

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
  for (int32_t t : plan.order)
    sim::CarryUnitTask(&builder, topology, tasks[t], tasks[t].bytes, plan.sender[t], plan.method,
                       options.broadcast_chunks, {});
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
  const LoadModel model(topology, options.method);
  std::vector<int32_t> slice_order(tasks.size());
  std::iota(slice_order.begin(), slice_order.end(), 0);
  ReshardResult result;
  for (const UnitTask& t : tasks) {
    if (t.senders.empty() || t.receivers.empty()) return Error{"a unit task has no holder or no receiver"};
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
  const std::vector<DeviceId> greedy = Greedy(tasks, model, topology, slice_order, nullptr);
  if (b == ReshardBalance::kLoadBalance) add(greedy, slice_order, b);
  if (b == ReshardBalance::kDfs || b == ReshardBalance::kOurs) {
    std::vector<DeviceId> sender = SenderSearch(tasks, model, topology, options.dfs_node_limit).Run(greedy);
    add(sender, Rounds(slice_order, sender, tasks, model, topology), ReshardBalance::kDfs);
  }
  if (b == ReshardBalance::kRandomGreedy || b == ReshardBalance::kOurs) {
    std::mt19937_64 rng(options.seed);
    for (int32_t trial = 0; trial < options.random_trials; ++trial) {
      std::vector<int32_t> order = slice_order;
      std::shuffle(order.begin(), order.end(), rng);
      std::vector<DeviceId> sender = Greedy(tasks, model, topology, order, &rng);
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
