#include "sim/task_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "sim/partition.h"

namespace devplace::sim {

PlainCostCache::PlainCostCache(int32_t num_ops, int32_t num_devices)
    : num_devices_(num_devices), entries_(static_cast<size_t>(num_ops) * num_devices) {}

void PlainCostCache::Fill(const Graph& graph, const Topology& topology, const CostModel& cost, OpId op,
                          DeviceId device, Entry* entry) {
  fill_config_.devices.assign(1, device);
  const PartCost c = cost.Cost(PartWorkOf(graph, op, fill_config_, 0, &fill_shape_), topology.device(device));
  DEVPLACE_CHECK(c.seconds > 0 && std::isfinite(c.seconds), "cost model returned a non-positive time");
  entry->ticks = ToTicks(c.seconds);
  entry->fallback = c.fallback;
}

TaskBuilder::TaskBuilder(const Graph& graph, const Topology& topology, const CostModel& cost,
                         const SimOptions& options, PlainCostCache* cache)
    : graph_(graph), topology_(topology), cost_(cost), options_(options), cache_(cache) {
  const size_t n = static_cast<size_t>(graph.num_ops());
  param_bytes_.resize(n);
  output_bytes_.resize(n);
  plain_static_.resize(n);
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    const int64_t param = param_bytes_[o] = ParamBytesOf(graph, o);
    output_bytes_[o] = OutputBytes(graph.op(o));
    plain_static_[o] = graph.op(o).role == OpRole::kUpdate
                           ? static_cast<int64_t>(static_cast<double>(param) * options_.optimizer_state_factor)
                           : param;
  }
  resource_delay_.assign(static_cast<size_t>(topology.num_devices() + topology.num_links()), 0);
  for (LinkId l = 0; l < topology.num_links(); ++l)
    resource_delay_[topology.num_devices() + l] = LatencyTicks(topology.link(l).latency);
}

int64_t TaskBuilder::Segments(int64_t bytes, int64_t hops, bool segmented) const {
  return segmented ? SegmentCount(bytes, hops, options_) : 1;
}

int32_t TaskBuilder::NewTask(TaskGraph* tg, int32_t group, int32_t resource, Time duration, TaskKind kind,
                             int32_t op, int32_t part) const {
  const int32_t id = tg->num_tasks();
  const uint32_t local = static_cast<uint32_t>(tg->group_task_count[group]++);
  tg->resource.push_back(resource);
  tg->duration.push_back(duration);
  tg->key.push_back((static_cast<uint64_t>(group) << 32) | local);
  tg->kind.push_back(kind);
  tg->first_hop.push_back(0);
  tg->alive.push_back(1);
  tg->op.push_back(op);
  tg->part.push_back(part);
  tg->consumer.push_back(-1);
  tg->bytes.push_back(0);
  tg->mem_bytes.push_back(0);
  tg->mem_device.push_back(-1);
  tg->fallback.push_back(0);
  tg->succ_off.push_back(0);
  tg->succ_cnt.push_back(0);
  tg->pred_off.push_back(0);
  tg->pred_cnt.push_back(0);
  return id;
}

void TaskBuilder::AddDep(TaskGraph* tg, int32_t from, int32_t to) {
  tg->dep_from.push_back(from);
  tg->dep_to.push_back(to);
}

void TaskBuilder::AppendRoute(TaskGraph* tg, int32_t group, DeviceId src, DeviceId dst, int64_t bytes,
                              bool segmented, TaskKind kind, int32_t op, int32_t part, int32_t consumer,
                              std::vector<int32_t>* firsts, std::vector<int32_t>* lasts) const {
  firsts->clear();
  lasts->clear();
  const std::span<const LinkId> links = topology_.route(src, dst);
  DEVPLACE_CHECK(!links.empty(), "transfer between a device and itself");
  const int64_t hops = static_cast<int64_t>(links.size());
  const int64_t segments = Segments(bytes, hops, segmented);
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t seg_bytes = ScaleBytes(bytes, s + 1, segments) - ScaleBytes(bytes, s, segments);
    int32_t prev = -1;
    for (int64_t h = 0; h < hops; ++h) {
      const HopCost hop =
          HopOf(topology_, links[h], dst, static_cast<double>(seg_bytes), kind == TaskKind::kCollective);
      const int32_t t = NewTask(tg, group, hop.resource, ToTicks(hop.seconds), kind, op, part);
      tg->bytes[t] = seg_bytes;
      tg->consumer[t] = consumer;
      if (h == 0) {
        tg->first_hop[t] = 1;
        firsts->push_back(t);
      } else {
        AddDep(tg, prev, t);
      }
      prev = t;
    }
    lasts->push_back(prev);
  }
}

void TaskBuilder::AppendRing(TaskGraph* tg, int32_t group, OpId op, const OpConfig& config, int64_t bytes,
                             int32_t steps) {
  const std::vector<int32_t>& members = ring_members_;
  const int32_t r = static_cast<int32_t>(members.size());
  const int32_t base = tg->group_task_begin[group];
  std::vector<int32_t>& prev_last = ring_prev_;
  std::vector<int32_t>& cur_last = ring_cur_;
  prev_last.assign(static_cast<size_t>(r), -1);
  cur_last.assign(static_cast<size_t>(r), -1);
  for (int32_t k = 0; k < steps; ++k) {
    for (int32_t i = 0; i < r; ++i) {
      const int32_t from = members[i], to = members[(i + 1) % r];
      const DeviceId dst = config.devices[to];
      AppendRoute(tg, group, config.devices[from], dst, bytes, false, TaskKind::kCollective, op, from, -1, &firsts_,
                  &lasts_);
      // A reduce-scatter step adds the sender's own partial sum; every step forwards what the sender received.
      if (k < r - 1) AddDep(tg, base + from, firsts_[0]);
      if (k > 0) AddDep(tg, prev_last[(i + r - 1) % r], firsts_[0]);
      cur_last[i] = lasts_[0];
      tg->mem_bytes[lasts_[0]] = bytes;
      tg->mem_device[lasts_[0]] = dst;
    }
    std::swap(prev_last, cur_last);
  }
}

void TaskBuilder::AppendOpGroup(OpId op, const OpConfig& config, TaskGraph* tg) {
  const int32_t group = op;
  const Op& o = graph_.op(op);
  const int32_t parts = config.num_parts();
  tg->group_task_begin[group] = tg->num_tasks();
  tg->group_task_count[group] = 0;
  tg->group_dep_begin[group] = static_cast<int32_t>(tg->dep_from.size());
  tg->out_begin[op] = static_cast<int32_t>(tg->out_tasks.size());
  if (parts == 1) {
    const PlainCostCache::Entry& c = cache_->Get(graph_, topology_, cost_, op, config.devices[0]);
    const int32_t t = NewTask(tg, group, config.devices[0], c.ticks, TaskKind::kCompute, op, 0);
    tg->fallback[t] = c.fallback;
    tg->mem_bytes[t] = output_bytes_[op];
    tg->mem_device[t] = config.devices[0];
    tg->out_tasks.insert(tg->out_tasks.end(), {t, -1, -1, -1});
    tg->group_dep_count[group] = 0;
    return;
  }
  const PartLayout layout = Layout(o, config);
  const int64_t volume = std::max<int64_t>(1, NumElements(o));
  const bool alike = PartsAlike(graph_, op, config);  // then every part reads and writes what part 0 does
  PartWork work;
  for (int32_t p = 0; p < parts; ++p) {
    if (p == 0 || !alike) work = PartWorkOf(graph_, op, config, p, &shape_scratch_);
    const DeviceId device = config.devices[p];
    const PartCost c = cost_.Cost(work, topology_.device(device));
    DEVPLACE_CHECK(c.seconds > 0 && std::isfinite(c.seconds), "cost model returned a non-positive time");
    const int32_t t = NewTask(tg, group, device, ToTicks(c.seconds), TaskKind::kCompute, op, p);
    tg->fallback[t] = c.fallback;
    int64_t computed = 1;  // the volume of the part's computed box, whose extents PartBytesAccessed wrote
    for (int64_t extent : work.shape) computed *= extent;
    tg->mem_bytes[t] = ScaleBytes(OutputBytes(o), computed, volume);
    tg->mem_device[t] = device;
    tg->out_tasks.insert(tg->out_tasks.end(), {t, -1, -1, -1});
  }
  const int32_t out = tg->out_begin[op];
  std::vector<int32_t>& members = ring_members_;
  if (layout.reduction > 1) {
    // One reduce-scatter ring per group of parts computing partial sums of the same box.
    const int32_t rings = parts / layout.reduction;
    for (int32_t ring = 0; ring < rings; ++ring) {
      members.assign(static_cast<size_t>(layout.reduction), -1);
      for (int32_t p = 0; p < parts; ++p)
        if (ReductionRing(o, config, p) == ring) members[ReductionIndex(o, config, p)] = p;
      const int64_t box_bytes = ScaleBytes(OutputBytes(o), Volume(ComputedBox(o, config, members[0])), volume);
      const int32_t r = layout.reduction;
      const int32_t first = tg->num_tasks();
      AppendRing(tg, group, op, config, std::max<int64_t>(1, box_bytes / r), r - 1);
      // Member i's last receive (step r-2) is the last-hop task received from member i-1.
      for (int32_t t = first; t < tg->num_tasks(); ++t) {
        if (tg->mem_bytes[t] == 0) continue;  // only last hops hold a receive buffer
        const int32_t sender = tg->part[t];
        int32_t i = 0;
        while (members[i] != sender) ++i;
        // Later steps overwrite earlier ones.
        tg->out_tasks[out + TaskGraph::kOutsPerPart * members[(i + 1) % r] + 1] = t;
      }
      // Each step is summed in place into the receiver's partial-sum buffer (its compute task's full box).
      for (int32_t t = first; t < tg->num_tasks(); ++t) tg->mem_bytes[t] = 0;
    }
  }
  const int64_t param = param_bytes_[op];
  const bool gathers = config.shard_weights && param > 0 && layout.replicas > 1;
  if (gathers) AppendWeightGather(op, config, tg);
  if (o.role == OpRole::kBackward && param > 0 && layout.replicas > 1) {
    // Gradient synchronisation: a ring all-reduce of each weight shard's gradient among its replicas, in every
    // copy (copies compute the same gradients, so they need no exchange between them); with shard_weights (ZeRO-3)
    // a ring reduce-scatter, each replica keeping the sum of its piece of the shard.
    for (int32_t ring = 0; ring < layout.copies * layout.shards; ++ring) {
      const int32_t copy = ring / layout.shards, shard = ring % layout.shards;
      members.assign(static_cast<size_t>(layout.replicas), -1);
      for (int32_t p = copy * layout.distinct; p < (copy + 1) * layout.distinct; ++p)
        if (ShardIndex(o, config, p) == shard) members[ReplicaIndex(o, config, p)] = p;
      const int32_t r = layout.replicas;
      const int64_t shard_bytes = ScaleBytes(param, shard + 1, layout.shards) - ScaleBytes(param, shard, layout.shards);
      const int32_t first = tg->num_tasks();
      AppendRing(tg, group, op, config, std::max<int64_t>(1, shard_bytes / r), (gathers ? 1 : 2) * (r - 1));
      for (int32_t t = first; t < tg->num_tasks(); ++t) {
        if (tg->mem_bytes[t] == 0) continue;
        const int32_t sender = tg->part[t];
        int32_t i = 0;
        while (members[i] != sender) ++i;
        tg->out_tasks[out + TaskGraph::kOutsPerPart * members[(i + 1) % r] + 2] = t;
      }
    }
  }
  tg->group_dep_count[group] = static_cast<int32_t>(tg->dep_from.size()) - tg->group_dep_begin[group];
}

void TaskBuilder::AddStaticMemory(OpId op, const OpConfig& config, std::vector<int64_t>* per_device) const {
  if (config.num_parts() == 1) {
    (*per_device)[config.devices[0]] += plain_static_[op];
    return;
  }
  const int64_t param = param_bytes_[op];
  if (param == 0) return;
  const Op& o = graph_.op(op);
  const int32_t pieces = WeightPieces(o, config);
  for (int32_t p = 0; p < config.num_parts(); ++p) {
    const int32_t piece = WeightPiece(o, config, p);
    int64_t bytes = ScaleBytes(param, piece + 1, pieces) - ScaleBytes(param, piece, pieces);
    if (o.role == OpRole::kUpdate)
      bytes = static_cast<int64_t>(static_cast<double>(bytes) * options_.optimizer_state_factor);
    (*per_device)[config.devices[p]] += bytes;
  }
}

int64_t TaskBuilder::memory_bytes() const {
  int64_t total = 0;
  for (const auto* v : {&firsts_, &lasts_, &share_sinks_})
    total += static_cast<int64_t>(v->capacity() * sizeof(int32_t));
  for (const auto* v : {&param_bytes_, &output_bytes_, &plain_static_, &shape_scratch_})
    total += static_cast<int64_t>(v->capacity() * sizeof(int64_t));
  return total + static_cast<int64_t>(resource_delay_.capacity() * sizeof(Time));
}

void TaskBuilder::StaticMemory(const Strategy& strategy, std::span<const DeviceId> plain,
                               std::vector<int64_t>* per_device) const {
  per_device->assign(static_cast<size_t>(topology_.num_devices()), 0);
  if (!plain.empty()) {
    for (OpId o = 0; o < graph_.num_ops(); ++o) (*per_device)[plain[o]] += plain_static_[o];
    return;
  }
  for (OpId o = 0; o < graph_.num_ops(); ++o) AddStaticMemory(o, strategy.configs[o], per_device);
}

void TaskGraph::Clear() {
  for (auto* v : {&resource, &op, &part, &consumer, &mem_device, &succ_off, &succ_cnt, &pred_off, &pred_cnt,
                  &succ_pool, &pred_pool, &group_task_begin, &group_task_count, &group_dep_begin, &group_dep_count,
                  &dep_from, &dep_to, &out_begin, &out_tasks})
    v->clear();
  for (auto* v : {&bytes, &mem_bytes}) v->clear();
  for (auto* v : {&first_hop, &alive, &fallback}) v->clear();
  duration.clear();
  key.clear();
  kind.clear();
}

void TaskGraph::TruncateTasks(int32_t n) {
  ForEachPerTaskField([k = static_cast<size_t>(n)](auto& v) { v.resize(k); });
}

void TaskGraph::ReserveGrowth(int32_t tasks, size_t pool_entries) {
  const size_t now = std::max<size_t>(1, static_cast<size_t>(num_tasks())), k = static_cast<size_t>(tasks);
  const auto grown = [now, k](const std::vector<int32_t>& v) { return v.size() * k / now + 64; };
  ForEachPerTaskField([k](auto& v) { ReserveRoom(&v, k); });
  for (auto* v : {&succ_pool, &pred_pool}) ReserveRoom(v, pool_entries);
  for (auto* v : {&dep_from, &dep_to, &out_tasks}) ReserveRoom(v, grown(*v));
}

void TaskBuilder::Reset(TaskGraph* tg) const {
  tg->Clear();
  tg->num_devices = topology_.num_devices();
  tg->num_resources = topology_.num_devices() + topology_.num_links();
  tg->resource_delay = resource_delay_;
}

void TaskBuilder::BuildAll(const Strategy& strategy, TaskGraph* tg, TaskTotals* totals) {
  BuildGroups(strategy, tg);
  totals->Reset(tg->num_resources);
  for (int32_t t = 0; t < tg->num_tasks(); ++t) totals->Add(*tg, t, +1);
}

void TaskBuilder::BuildGroups(const Strategy& strategy, TaskGraph* tg) {
  const int32_t n = graph_.num_ops();
  const int32_t groups = n + graph_.num_edges();
  Reset(tg);
  tg->group_task_begin.assign(static_cast<size_t>(groups), 0);
  tg->group_task_count.assign(static_cast<size_t>(groups), 0);
  tg->group_dep_begin.assign(static_cast<size_t>(groups), 0);
  tg->group_dep_count.assign(static_cast<size_t>(groups), 0);
  tg->out_begin.assign(static_cast<size_t>(n), 0);
  for (OpId o = 0; o < n; ++o) AppendOpGroup(o, strategy.configs[o], tg);
  for (int32_t e = 0; e < graph_.num_edges(); ++e) AppendEdgeGroup(e, strategy, tg);
  BuildAdjacency(tg);
}

void TaskTotals::Reset(int32_t num_resources) {
  busy.assign(static_cast<size_t>(num_resources), 0);
  bytes.assign(static_cast<size_t>(num_resources), 0);
  count.assign(static_cast<size_t>(num_resources), 0);
  held.assign(static_cast<size_t>(num_resources), 0);
  bytes_moved = 0;
  num_tasks = num_compute = fallbacks = 0;
  horizon = 0;
}

void TaskTotals::Add(const TaskGraph& tg, int32_t t, int sign) {
  const int32_t r = tg.resource[t];
  busy[r] += sign * tg.duration[t];
  const Time ticks = tg.duration[t] + tg.resource_delay[r];
  if (sign > 0) horizon = ticks >= kHorizonCap - horizon ? kHorizonCap : horizon + ticks;
  else horizon -= ticks;
  bytes[r] += sign * tg.bytes[t];
  count[r] += sign;
  if (tg.mem_device[t] >= 0) held[tg.mem_device[t]] += sign * tg.mem_bytes[t];
  if (tg.first_hop[t]) bytes_moved += sign * tg.bytes[t];
  num_tasks += sign;
  if (tg.kind[t] == TaskKind::kCompute) {
    num_compute += sign;
    fallbacks += sign * tg.fallback[t];
  }
}

void ResetSingleGroup(const Topology& topology, TaskGraph* tg) {
  tg->Clear();
  tg->num_devices = topology.num_devices();
  tg->num_resources = topology.num_devices() + topology.num_links();
  tg->resource_delay.assign(static_cast<size_t>(tg->num_resources), 0);
  for (LinkId l = 0; l < topology.num_links(); ++l)
    tg->resource_delay[tg->num_devices + l] = LatencyTicks(topology.link(l).latency);
  tg->group_task_begin = {0};
  tg->group_dep_begin = {0};
}

void BuildAdjacency(TaskGraph* tg) {
  const int32_t n = tg->num_tasks();
  std::fill(tg->succ_cnt.begin(), tg->succ_cnt.end(), 0);
  std::fill(tg->pred_cnt.begin(), tg->pred_cnt.end(), 0);
  const size_t groups = tg->group_dep_begin.size();
  size_t total = 0;
  for (size_t g = 0; g < groups; ++g) {
    const int32_t b = tg->group_dep_begin[g], c = tg->group_dep_count[g];
    for (int32_t k = b; k < b + c; ++k) {
      ++tg->succ_cnt[tg->dep_from[k]];
      ++tg->pred_cnt[tg->dep_to[k]];
    }
    total += static_cast<size_t>(c);
  }
  tg->succ_pool.resize(total);
  tg->pred_pool.resize(total);
  int32_t so = 0, po = 0;
  for (int32_t t = 0; t < n; ++t) {
    tg->succ_off[t] = so;
    tg->pred_off[t] = po;
    so += tg->succ_cnt[t];
    po += tg->pred_cnt[t];
    tg->succ_cnt[t] = 0;
    tg->pred_cnt[t] = 0;
  }
  for (size_t g = 0; g < groups; ++g) {
    const int32_t b = tg->group_dep_begin[g], c = tg->group_dep_count[g];
    for (int32_t k = b; k < b + c; ++k) {
      const int32_t f = tg->dep_from[k], t = tg->dep_to[k];
      tg->succ_pool[tg->succ_off[f] + tg->succ_cnt[f]++] = t;
      tg->pred_pool[tg->pred_off[t] + tg->pred_cnt[t]++] = f;
    }
  }
}

namespace {
// v[new_id[t]] = old v[t] for every task t that has a new id; v then holds `kept` entries.
template <class T>
void PermuteByTask(const std::vector<int32_t>& new_id, int32_t kept, std::vector<T>* v, std::vector<T>* scratch) {
  ReserveLike(scratch, *v);
  scratch->resize(static_cast<size_t>(kept));
  for (size_t t = 0; t < v->size(); ++t)
    if (new_id[t] >= 0) (*scratch)[static_cast<size_t>(new_id[t])] = (*v)[t];
  v->swap(*scratch);
}
}  // namespace

void ReorderGroups(std::span<const int32_t> groups, TaskGraph* tg, std::vector<int32_t>* new_id,
                   PermuteScratch* scratch) {
  const int32_t n = tg->num_tasks();
  DEVPLACE_CHECK(groups.size() == tg->group_task_begin.size(), "every group once");
  ReserveLike(new_id, tg->resource);  // room for as many tasks as the graph has room for
  new_id->assign(static_cast<size_t>(n), -1);
  int32_t next = 0;
  for (int32_t g : groups) {
    const int32_t begin = tg->group_task_begin[g], count = tg->group_task_count[g];
    for (int32_t k = 0; k < count; ++k) {
      DEVPLACE_CHECK((*new_id)[begin + k] < 0, "groups must not share tasks");
      (*new_id)[begin + k] = next + k;
    }
    tg->group_task_begin[g] = next;
    next += count;
  }
  const std::vector<int32_t>& id = *new_id;
  PermuteScratch& s = *scratch;
  for (auto* v : {&tg->resource, &tg->op, &tg->part, &tg->consumer, &tg->mem_device})
    PermuteByTask(id, next, v, &s.s32);
  for (auto* v : {&tg->duration, &tg->bytes, &tg->mem_bytes}) PermuteByTask(id, next, v, &s.s64);
  PermuteByTask(id, next, &tg->key, &s.u64);
  for (auto* v : {&tg->first_hop, &tg->alive, &tg->fallback}) PermuteByTask(id, next, v, &s.s8);
  PermuteByTask(id, next, &tg->kind, &s.kinds);
  for (auto* v : {&tg->succ_off, &tg->succ_cnt, &tg->pred_off, &tg->pred_cnt}) v->resize(static_cast<size_t>(next));
  // Dependencies group by group, output entries op by op (an op's are kOutsPerPart per compute task of its
  // group), each list through the scratch.
  const int32_t num_groups = static_cast<int32_t>(tg->group_dep_begin.size());
  for (std::vector<int32_t>* deps : {&tg->dep_from, &tg->dep_to}) {
    std::vector<int32_t>& out = s.deps;
    ReserveLike(&out, *deps);
    out.clear();
    for (int32_t g = 0; g < num_groups; ++g) {
      const int32_t b = tg->group_dep_begin[g], c = tg->group_dep_count[g];
      for (int32_t k = b; k < b + c; ++k) out.push_back(id[(*deps)[k]]);
    }
    deps->swap(out);
  }
  for (int32_t g = 0, at = 0; g < num_groups; ++g) {
    tg->group_dep_begin[g] = at;
    at += tg->group_dep_count[g];
  }
  std::vector<int32_t>& outs = s.outs;
  ReserveLike(&outs, tg->out_tasks);
  outs.clear();
  for (int32_t op = 0; op < static_cast<int32_t>(tg->out_begin.size()); ++op) {
    const int32_t begin = tg->group_task_begin[op], count = tg->group_task_count[op];
    int32_t parts = 0;
    for (int32_t t = begin; t < begin + count; ++t) parts += tg->kind[t] == TaskKind::kCompute;
    const int32_t from = tg->out_begin[op];
    tg->out_begin[op] = static_cast<int32_t>(outs.size());
    for (int32_t k = from; k < from + TaskGraph::kOutsPerPart * parts; ++k) {
      const int32_t t = tg->out_tasks[k];
      outs.push_back(t < 0 ? t : id[t]);
    }
  }
  tg->out_tasks.swap(outs);
  BuildAdjacency(tg);
}

}  // namespace devplace::sim
