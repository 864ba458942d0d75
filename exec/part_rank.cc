#include "exec/part_rank.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>

#include "core/check.h"

namespace devplace::exec {

namespace {

// A name for slot `slot`'s tensor in errors: the op whose part writes it (or the copy of one).
std::vector<std::string> SlotNames(const Graph& graph, const PartPlan& plan) {
  std::vector<std::string> name(static_cast<size_t>(plan.program.num_slots));
  for (const Unit& u : plan.units)
    for (int32_t s : u.out_slots) name[s] = "'" + graph.op(u.op).name + "' part " + std::to_string(u.part);
  for (const Task& t : plan.program.tasks)
    if (t.kind == TaskKind::kCopy && t.src >= 0 && t.dst >= 0) name[t.dst] = name[t.src];
  return name;
}

// The collectives of `full` that run on the process group: by task, its collective when it is a step of one
// (else -1); `grouped` lists them.
std::vector<int32_t> GroupedCollectives(const TaskProgram& full, const std::vector<int32_t>& rank_of_device,
                                        int32_t world, std::vector<int32_t>* grouped) {
  std::vector<char> on_group(full.collectives.size(), 0);
  for (size_t c = 0; c < full.collectives.size(); ++c) {
    std::vector<int32_t> ranks;
    for (DeviceId d : full.collectives[c].devices) ranks.push_back(rank_of_device[d]);
    on_group[c] = RunsOnProcessGroup(full.collectives[c].kind, ranks, world);
    if (on_group[c]) grouped->push_back(static_cast<int32_t>(c));
  }
  std::vector<int32_t> collective_of(full.tasks.size(), -1);
  for (size_t t = 0; t < full.tasks.size(); ++t) {
    const Task& task = full.tasks[t];
    if (task.kind == TaskKind::kReceive && task.collective >= 0 && on_group[task.collective])
      collective_of[t] = task.collective;
  }
  return collective_of;
}

// Estimated durations for OrderCollectives: a part's FLOPs at 10 GFLOP/s, bytes moved at 1 GB/s, and 1 ns each.
std::vector<double> TaskCosts(const Graph& graph, const PartPlan& plan) {
  std::vector<double> cost;
  for (const Task& t : plan.program.tasks) {
    double c = 1e-9 + static_cast<double>(t.bytes) * 1e-9;
    if (t.kind == TaskKind::kCompute && t.unit >= 0) {
      const OpId op = plan.units[t.unit].op;
      c += graph.op(op).flops / static_cast<double>(plan.unit_of[op].size()) * 1e-10;
    }
    cost.push_back(c);
  }
  return cost;
}

// This rank's collective task for collective `c` of `full` (whose steps are `steps`), and its entry.
ProcessCollective LocalCollective(const TaskProgram& full, int32_t c, const std::vector<int32_t>& steps,
                                  const std::vector<int32_t>& rank_of_device, int32_t me, TaskProgram* local) {
  const CollectiveInfo& info = full.collectives[c];
  ProcessCollective out;
  out.collective = c;
  out.scatter = info.kind == "reduce-scatter";
  out.what = "the " + info.kind + " of '" + info.label + "'";
  for (DeviceId d : info.devices) out.ranks.push_back(rank_of_device[d]);
  std::sort(out.ranks.begin(), out.ranks.end());
  out.member_of_rank.assign(out.ranks.size(), -1);
  for (size_t i = 0; i < info.devices.size(); ++i) {
    const auto pos = std::lower_bound(out.ranks.begin(), out.ranks.end(), rank_of_device[info.devices[i]]);
    out.member_of_rank[pos - out.ranks.begin()] = static_cast<int32_t>(i);
  }
  const auto pos = std::lower_bound(out.ranks.begin(), out.ranks.end(), me);
  DEVPLACE_CHECK(pos != out.ranks.end() && *pos == me, "a collective this rank takes part in");
  const DeviceId mine = info.devices[out.member_of_rank[pos - out.ranks.begin()]];
  Task task;
  task.kind = TaskKind::kCollective;
  task.device = mine;
  task.collective = c;
  task.bytes = info.bytes;
  for (int32_t t : steps) {  // the member's slot, the axis, and the extent all chunks cover
    const Task& step = full.tasks[t];
    if (step.device == mine) task.dst = step.dst;
    task.axis = step.axis;
    task.length = std::max(task.length, step.begin + step.length);
  }
  DEVPLACE_CHECK(task.dst >= 0, "a member of a collective receives a step");
  out.task = local->Add(std::move(task));
  return out;
}

}  // namespace

Expected<RankProgram> BuildRankProgram(const Graph& graph, const PartPlan& plan,
                                       const std::vector<int32_t>& rank_of_device, int32_t me, int32_t world,
                                       const std::vector<at::Device>& device_of, bool group_collectives) {
  const TaskProgram& full = plan.program;
  if (!full.bound.empty())
    return Error{"partitioned execution over processes: ZeRO-3 configs (shard_weights) run in one process only"};
  const int32_t n = static_cast<int32_t>(full.tasks.size());
  std::vector<DeviceId> slot_device(static_cast<size_t>(full.num_slots), -1);
  for (const Unit& u : plan.units)
    for (int32_t s : u.out_slots) slot_device[s] = u.device;
  for (const Task& t : full.tasks)
    if (t.kind == TaskKind::kCopy || t.kind == TaskKind::kReceive) slot_device[t.dst] = t.device;
  const std::vector<std::string> slot_name = SlotNames(graph, plan);
  auto rank = [&](int32_t task) { return rank_of_device[full.tasks[task].device]; };

  RankProgram out;
  TaskProgram& local = out.program;
  local.num_slots = full.num_slots;
  local.collectives = full.collectives;
  out.local_unit.assign(plan.units.size(), 0);
  for (const Unit& u : plan.units) out.local_unit[&u - plan.units.data()] = rank_of_device[u.device] == me;
  // The collectives the process group runs: one collective task each on this rank, in an order all ranks share.
  std::vector<int32_t> grouped;
  const std::vector<int32_t> collective_of =
      group_collectives ? GroupedCollectives(full, rank_of_device, world, &grouped) : std::vector<int32_t>(n, -1);
  std::vector<int32_t> collective_task(full.collectives.size(), -1);
  if (!grouped.empty()) {
    Expected<std::vector<int32_t>> order = OrderCollectives(full, collective_of, TaskCosts(graph, plan), grouped);
    if (!order) return order.error();
    std::vector<std::vector<int32_t>> steps(full.collectives.size());
    for (int32_t t = 0; t < n; ++t)
      if (collective_of[t] >= 0) steps[collective_of[t]].push_back(t);
    for (int32_t c : *order) {
      bool member = false;
      for (DeviceId d : full.collectives[c].devices) member = member || rank_of_device[d] == me;
      if (!member) continue;  // a subgroup's without this rank
      out.collectives.push_back(LocalCollective(full, c, steps[c], rank_of_device, me, &local));
      collective_task[c] = out.collectives.back().task;
    }
  }
  // Per task of the full program: the rank of the slot it reads when that is another rank's (else -1), its id
  // in this rank's program (a grouped collective's steps: its collective task), and the send task serving it here.
  std::vector<int32_t> reads_from(n, -1), id(n, -1), sender(n, -1);
  for (int32_t t = 0; t < n; ++t) {
    const Task& task = full.tasks[t];
    if (collective_of[t] >= 0) {
      if (rank(t) == me) id[t] = collective_task[collective_of[t]];
      continue;
    }
    const bool reads = task.kind == TaskKind::kCopy || task.kind == TaskKind::kReceive;
    DEVPLACE_CHECK(!reads || slot_device[task.src] >= 0, "a copy or collective step reads a slot some task writes");
    if (reads && rank_of_device[slot_device[task.src]] != rank(t)) reads_from[t] = rank_of_device[slot_device[task.src]];
    if (reads_from[t] < 0) {
      if (rank(t) != me) continue;
      Task copy = task;
      copy.succ.clear();
      copy.preds = 0;
      id[t] = local.Add(std::move(copy));
      continue;
    }
    const int32_t message = static_cast<int32_t>(out.messages.size());
    const bool chunk = task.kind == TaskKind::kReceive;
    std::string name = "a box of " + slot_name[task.src];
    if (chunk) name = "a chunk of the " + full.collectives[task.collective].kind + " of '" +
                      full.collectives[task.collective].label + "'";
    out.messages.push_back({reads_from[t], rank(t), device_of[task.device], chunk ? std::vector<int64_t>{} : task.size,
                            name});
    out.arrival_of.push_back(-1);
    if (reads_from[t] == me) {  // this rank sends the box the reader needs
      Task send = task;  // the reader's box (lo, size) or chunk (axis, src_begin, length) of the same slot
      send.kind = TaskKind::kSend;
      send.device = slot_device[task.src];
      send.message = message;
      send.chunk = chunk;
      send.dst = -1;
      send.add = send.alloc = false;
      send.succ.clear();
      send.preds = 0;
      sender[t] = local.Add(std::move(send));
    }
    if (rank(t) != me) continue;
    Task arrive;  // a copy's arrival is the copy; a collective step reads the arrived chunk
    arrive.kind = TaskKind::kArrive;
    arrive.device = task.device;
    arrive.message = message;
    arrive.dst = chunk ? local.AddSlot() : task.dst;
    arrive.bytes = task.bytes;
    arrive.collective = task.collective;
    if (task.kind == TaskKind::kCopy) arrive.size = task.size;
    const int32_t a = local.Add(std::move(arrive));
    out.arrival_of.back() = a;
    if (!chunk) {
      id[t] = a;
      continue;
    }
    Task step = task;
    step.succ.clear();
    step.preds = 0;
    step.src = local.tasks[a].dst;
    step.src_begin = 0;
    id[t] = local.Add(std::move(step));
    local.Dep(a, id[t]);
  }
  for (int32_t x = 0; x < n; ++x)
    for (int32_t y : full.tasks[x].succ) {
      const int32_t rx = rank(x), ry = rank(y);
      if (collective_of[y] >= 0 && (rx != ry || collective_of[x] == collective_of[y])) {
        continue;  // a member's input on another rank, or a step of the same collective: the group's call has them
      } else if (rx == me && ry == me) {
        local.Dep(id[x], id[y]);
      } else if (rx == ry) {
        continue;
      } else if (reads_from[y] == rx) {  // y reads what x (or a task after x) wrote: the send waits for x
        if (rx == me) local.Dep(id[x], sender[y]);
      } else if (reads_from[x] == ry) {  // y overwrites what x read: it waits until the send has taken it
        if (ry == me) local.Dep(sender[x], id[y]);
      } else {
        return Error{"partitioned execution over processes: a dependency between ranks " + std::to_string(rx) +
                     " and " + std::to_string(ry) + " that carries no data (task " + std::to_string(x) + " -> " +
                     std::to_string(y) + ") is not supported"};
      }
    }
  for (const Task& t : local.tasks) {
    DEVPLACE_CHECK(t.kind != TaskKind::kSend || t.preds > 0, "a send waits for what it sends to be written");
    DEVPLACE_CHECK(t.kind != TaskKind::kCollective || t.preds > 0, "a collective waits for its member's input");
  }
  return out;
}

Status CommitUpdatesAcrossRanks(PartPlan& plan, ProcessGroup& group) {
  std::vector<char> ran;  // the update parts this rank ran (their new weights are not committed yet)
  for (const auto& r : plan.updates) ran.push_back(r->next_w.defined() ? 1 : 0);
  plan.CommitUpdates();
  // Each range once (copies of an update part compute the same range), from the rank whose part it is.
  std::map<std::tuple<OpId, int64_t, int64_t>, size_t> first;
  std::vector<size_t> chosen;
  int64_t total = 0;
  for (size_t i = 0; i < plan.updates.size(); ++i) {
    const UpdateRange& r = *plan.updates[i];
    if (r.len > 0 && first.emplace(std::make_tuple(r.owner, r.lo, r.len), i).second) {
      chosen.push_back(i);
      total += r.len;
    }
  }
  if (chosen.empty()) return Status::Ok();
  at::Tensor flat = at::zeros({total}, at::kFloat);
  int64_t offset = 0;
  for (size_t i : chosen) {
    const UpdateRange& r = *plan.updates[i];
    if (ran[i]) flat.narrow(0, offset, r.len).copy_(r.w.to(at::kCPU));
    offset += r.len;
  }
  if (Status s = group.AllReduce(flat, ProcessGroup::Reduce::kSum, "exchanging the updated weights"); !s) return s;
  offset = 0;
  for (size_t i : chosen) {
    const UpdateRange& r = *plan.updates[i];
    plan.full_weights[r.owner].narrow(0, r.lo, r.len).copy_(flat.narrow(0, offset, r.len));
    offset += r.len;
  }
  for (auto& p : plan.weights) {
    const at::Tensor& w = plan.full_weights[p->owner];
    p->w.copy_(p->index.defined() ? w.index_select(0, p->index) : w);
  }
  return Status::Ok();
}

Expected<std::vector<std::vector<float>>> RankValues(const Graph& graph, const Strategy& strategy,
                                                     const PartPlan& plan, const std::vector<char>& local_unit,
                                                     const std::vector<at::Tensor>& slots, ProcessGroup& group) {
  const int32_t n = graph.num_ops();
  // The length of every weight gradient (the longest any rank's parts write).
  at::Tensor lengths = at::zeros({n}, at::kDouble);
  for (OpId op = 0; op < n; ++op) {
    if (graph.op(op).role != OpRole::kBackward) continue;
    for (int32_t unit : plan.unit_of[op]) {
      const Unit& u = plan.units[unit];
      if (u.weight_port < 0 || !local_unit[unit]) continue;
      const int64_t len = u.grad_index.defined() ? u.grad_index.max().item<int64_t>() + 1
                                                 : slots[u.out_slots[u.weight_port]].numel();
      lengths[op] = std::max(lengths[op].item<double>(), static_cast<double>(len));
    }
  }
  if (Status s = group.AllReduce(lengths, ProcessGroup::Reduce::kMax, "merging the weight gradients' sizes"); !s)
    return s.error();
  // This rank's part of every forward output and weight gradient, and where it wrote (summed over the ranks:
  // copies of a part hold the same values, so the sum divided by the count is the value).
  std::vector<at::Tensor> value(n), cover(n);
  for (OpId op = 0; op < n; ++op) {
    const Op& o = graph.op(op);
    const int32_t parts = strategy.configs[op].num_parts();
    if (o.role == OpRole::kForward) {
      value[op] = at::zeros(o.shape, at::kFloat);
      cover[op] = at::zeros(o.shape, at::kFloat);
      for (int32_t p = 0; p < parts; ++p) {
        const Unit& u = plan.units[plan.unit_of[op][p]];
        if (!local_unit[plan.unit_of[op][p]]) continue;
        at::Tensor from = slots[u.out_slots[0]].to(at::kCPU).to(at::kFloat), into = value[op], mark = cover[op];
        for (int32_t a = 0; a < u.owned.rank; ++a) {
          const int64_t len = u.owned.hi[a] - u.owned.lo[a];
          from = from.narrow(a, u.owned.lo[a] - u.out_box.lo[a], len);
          into = into.narrow(a, u.owned.lo[a], len);
          mark = mark.narrow(a, u.owned.lo[a], len);
        }
        into.copy_(from);
        mark.fill_(1.0);
      }
    } else if (o.role == OpRole::kBackward && plan.units[plan.unit_of[op][0]].weight_port >= 0 &&
               UpdateReads(graph, op)) {
      const int64_t len = static_cast<int64_t>(lengths[op].item<double>());
      value[op] = at::zeros({len}, at::kFloat);
      cover[op] = at::zeros({len}, at::kFloat);
      for (int32_t p = 0; p < parts; ++p) {
        const Unit& u = plan.units[plan.unit_of[op][p]];
        if (!local_unit[plan.unit_of[op][p]]) continue;
        const at::Tensor g = slots[u.out_slots[u.weight_port]].to(at::kCPU).reshape({-1});
        if (u.grad_index.defined()) {
          value[op].index_copy_(0, u.grad_index.to(at::kCPU), g);
          cover[op].index_fill_(0, u.grad_index.to(at::kCPU), 1.0);
        } else {
          value[op].copy_(g);
          cover[op].fill_(1.0);
        }
      }
    }
  }
  std::vector<at::Tensor> flat;
  for (OpId op = 0; op < n; ++op)
    if (value[op].defined()) {
      flat.push_back(value[op].reshape({-1}));
      flat.push_back(cover[op].reshape({-1}));
    }
  at::Tensor sum = flat.empty() ? at::zeros({1}, at::kFloat) : at::cat(flat);
  if (Status s = group.AllReduce(sum, ProcessGroup::Reduce::kSum, "merging the ranks' values"); !s) return s.error();
  std::vector<std::vector<float>> values(n);
  int64_t offset = 0;
  for (OpId op = 0; op < n; ++op) {
    const Op& o = graph.op(op);
    at::Tensor v;
    if (value[op].defined()) {
      const int64_t k = value[op].numel();
      v = sum.narrow(0, offset, k) / sum.narrow(0, offset + k, k).clamp_min(1.0);
      offset += 2 * k;
    } else if (o.role == OpRole::kUpdate) {
      const OpId owner = graph.forward_op_of(op);
      if (owner >= 0 && plan.full_weights[owner].defined()) v = plan.full_weights[owner].reshape({-1});
    }
    if (!v.defined()) continue;
    v = v.contiguous();
    values[op].assign(v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  }
  return values;
}

}  // namespace devplace::exec
