#include "exec/part_rank.h"

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

}  // namespace

Expected<RankProgram> BuildRankProgram(const Graph& graph, const PartPlan& plan,
                                       const std::vector<int32_t>& rank_of_device, int32_t me,
                                       const std::vector<at::Device>& device_of) {
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
  // Per task of the full program: the rank of the slot it reads when that is another rank's (else -1), its id
  // in this rank's program, and the send task serving it on this rank.
  std::vector<int32_t> reads_from(n, -1), id(n, -1), sender(n, -1);
  for (int32_t t = 0; t < n; ++t) {
    const Task& task = full.tasks[t];
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
      if (rx == me && ry == me) {
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
  for (const Task& t : local.tasks)
    DEVPLACE_CHECK(t.kind != TaskKind::kSend || t.preds > 0, "a send waits for what it sends to be written");
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
      const OpId owner = graph.find(o.forward_op);
      if (owner >= 0 && plan.full_weights[owner].defined()) v = plan.full_weights[owner].reshape({-1});
    }
    if (!v.defined()) continue;
    v = v.contiguous();
    values[op].assign(v.data_ptr<float>(), v.data_ptr<float>() + v.numel());
  }
  return values;
}

}  // namespace devplace::exec
