#include "sim/pipeline_build.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "core/check.h"
#include "core/strategy.h"
#include "sim/collectives.h"
#include "sim/full_run.h"
#include "sim/partition.h"
#include "sim/pipeline_shard.h"
#include "sim/reshard.h"
#include "sim/reshard_carry.h"

namespace devplace::sim {
namespace {

class PipelineBuilder {
 public:
  PipelineBuilder(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                  const std::vector<int32_t>& stage_of, const CostModel& cost, const SimOptions& options,
                  PipelineTasks* out)
      : graph_(graph), topology_(topology), plan_(plan), stage_of_(stage_of), cost_(cost), options_(options),
        out_(*out), tg_(out->tg), S_(static_cast<int32_t>(plan.stages.size())), M_(plan.microbatches) {}

  Status Build() {
    Reset();
    spec_.clear();
    for (const PipelineStage& stage : plan_.stages) spec_.push_back(StageSpec(stage).value());
    if (Status st = LowerShardedStages(); !st) return st;
    offset_.assign(static_cast<size_t>(S_) + 1, 0);
    for (int32_t s = 0; s < S_; ++s) offset_[s + 1] = offset_[s] + width(s) * M_;
    Price();
    AddComputeTasks();
    if (Status st = AddStageTransfers(); !st) return st;
    for (int32_t s = 0; s < S_; ++s)
      if (!sharded_[s]) AddAllReduce(s);  // a sharded stage's gradient rings come with its lowering
    tg_.group_task_count = {tg_.num_tasks()};
    tg_.group_dep_count = {static_cast<int32_t>(tg_.dep_from.size())};
    BuildAdjacency(&tg_);
    out_.totals.Reset(tg_.num_resources);
    for (int32_t t = 0; t < tg_.num_tasks(); ++t) out_.totals.Add(tg_, t, +1);
    return Status::Ok();
  }

 private:
  int32_t width(int32_t s) const { return static_cast<int32_t>(plan_.stages[s].devices.size()); }
  DeviceId device(int32_t s, int32_t j) const { return plan_.stages[s].devices[j]; }
  size_t at(int32_t s, int32_t j, int32_t m) const { return static_cast<size_t>(offset_[s] + j * M_ + m); }

  void Reset() {
    out_.kind.clear();
    out_.peer.clear();
    out_.microbatch.clear();
    out_.stash_bytes.clear();
    ResetSingleGroup(topology_, &tg_);
  }

  int32_t Task(int32_t resource, Time duration, PipelineTaskKind kind, int32_t stage, int32_t peer, int32_t mb) {
    return AppendPipelineTask(&out_, resource, duration, kind, stage, peer, mb);
  }

  // The lowering of every stage with sharding annotations (ShardedStageGraph), checked as the simulator checks a
  // strategy; errors name the stage.
  Status LowerShardedStages() {
    sharded_.assign(static_cast<size_t>(S_), std::nullopt);
    for (int32_t s = 0; s < S_; ++s) {
      if (plan_.stages[s].sharding.empty()) continue;
      Expected<StageGraph> sg = ShardedStageGraph(plan_, s, graph_, stage_of_);
      if (!sg.ok()) return sg.error();
      if (Status st = CheckStrategy(sg->graph, topology_, sg->strategy); !st)
        return Error{"stage '" + plan_.stages[s].name + "': " + st.error().message};
      sharded_[s] = std::move(*sg);
    }
    return Status::Ok();
  }

  void Dep(int32_t from, int32_t to) {
    tg_.dep_from.push_back(from);
    tg_.dep_to.push_back(to);
  }

  void Hold(int32_t task, int64_t bytes, DeviceId on) {
    tg_.mem_bytes[task] = bytes;
    tg_.mem_device[task] = on;
  }

  // The price of op `op`'s share `chunk` (of k * M) on `device`, and the bytes of its output share.
  std::pair<PartCost, int64_t> Share(OpId op, int32_t parts, int32_t chunk, const Device& device) {
    const Op& o = graph_.op(op);
    places_.resize(static_cast<size_t>(parts));
    std::iota(places_.begin(), places_.end(), 0);
    const std::optional<OpConfig> split = SplitConfig(o, places_);
    bool by_sample = false;
    if (split)
      for (size_t k = 0; k < split->degrees.size(); ++k)
        by_sample = by_sample || (split->degrees[k] > 1 && o.dims[k].kind == DimKind::kSample);
    PartWork work;
    work.op = &o;
    work.flops = by_sample ? o.flops / parts : o.flops;
    work.bytes_accessed = PartBytesAccessed(graph_, op, by_sample ? *split : OpConfig{{0}, {}},
                                            by_sample ? chunk : 0, &shape_);
    int64_t volume = 1;
    for (int64_t extent : shape_) volume *= extent;
    const int64_t output = ScaleBytes(OutputBytes(o), volume, std::max<int64_t>(1, NumElements(o)));
    work.shape = shape_;
    const PartCost c = cost_.Cost(work, device);
    DEVPLACE_CHECK(c.seconds > 0 && std::isfinite(c.seconds), "cost model returned a non-positive time");
    return {c, output};
  }

  // Per stage, device and micro-batch: forward, backward and weight-gradient ticks and kept activations; per
  // stage and device: update ticks; per device: static bytes.
  void Price() {
    const size_t n = static_cast<size_t>(offset_[S_]);
    std::vector<double> fwd(n, 0.0), bwd(n, 0.0), wgt(n, 0.0), upd(static_cast<size_t>(offset_[S_] / M_), 0.0);
    stash_.assign(n, 0);
    fallback_.assign(n + n / M_, 0);
    out_.static_bytes.assign(static_cast<size_t>(topology_.num_devices()), 0);
    for (OpId op = 0; op < graph_.num_ops(); ++op) {
      const Op& o = graph_.op(op);
      const int32_t s = stage_of_[op], k = width(s);
      if (sharded_[s]) continue;  // priced by its lowering (AppendShardedStage)
      const int64_t params = ParamBytesOf(graph_, op);
      const int64_t held = o.role == OpRole::kUpdate
                               ? static_cast<int64_t>(static_cast<double>(params) * options_.optimizer_state_factor)
                               : params;
      bool kept = false;  // a forward op whose output a backward op reads is kept until the backward
      for (int32_t e : graph_.out_edges(op)) kept = kept || graph_.op(graph_.edge(e).dst).role == OpRole::kBackward;
      for (int32_t j = 0; j < k; ++j) {
        const Device& dev = topology_.device(device(s, j));
        out_.static_bytes[device(s, j)] += held / ModelDegree(s);
        if (o.role == OpRole::kUpdate) {
          const auto [price, output] = Share(op, 1, 0, dev);
          upd[static_cast<size_t>(offset_[s] / M_ + j)] += price.seconds;
          fallback_[n + offset_[s] / M_ + j] |= price.fallback;
          continue;
        }
        for (int32_t m = 0; m < M_; ++m) {
          const auto [price, output] = Share(op, k * M_, m * k + j, dev);
          const double seconds = price.seconds;
          const size_t x = at(s, j, m);
          fallback_[x] |= price.fallback;
          if (o.role == OpRole::kForward) {
            fwd[x] += seconds;
            if (kept) stash_[x] += output;
          } else if (plan_.delay_weight_gradients && params > 0) {
            bwd[x] += seconds / 2;  // the input gradient and the weight gradient: half the FLOPs each
            wgt[x] += seconds / 2 + Accumulation(m, params / ModelDegree(s), dev);
          } else {
            bwd[x] += seconds + Accumulation(m, params / ModelDegree(s), dev);
          }
        }
      }
    }
    auto ticks = [](const std::vector<double>& seconds) {
      std::vector<Time> t(seconds.size());
      for (size_t i = 0; i < seconds.size(); ++i) t[i] = seconds[i] > 0 ? ToTicks(seconds[i]) : 0;
      return t;
    };
    fwd_ = ticks(fwd);
    bwd_ = ticks(bwd);
    wgt_ = ticks(wgt);
    upd_ = ticks(upd);
  }

  // Each stage device's schedule as a chain of tasks, then its update.
  void AddComputeTasks() {
    const size_t n = static_cast<size_t>(offset_[S_]);
    for (auto* v : {&f_start_, &f_done_, &b_start_, &b_done_, &last_task_}) v->assign(n, -1);
    last_compute_.assign(n / M_, -1);
    update_.assign(n / M_, -1);
    out_.max_in_flight.assign(static_cast<size_t>(S_), 0);
    for (int32_t s = 0; s < S_; ++s) {
      const std::vector<StageStep> order = StageOrder(plan_.schedule, S_, s, M_);
      for (int32_t in_flight = 0; const StageStep& step : order)
        out_.max_in_flight[s] = std::max(out_.max_in_flight[s], in_flight += step.forward ? 1 : -1);
      if (sharded_[s]) {
        AddShardedStage(s, order);
        continue;
      }
      for (int32_t j = 0; j < width(s); ++j) {
        const DeviceId d = device(s, j);
        int32_t prev = -1;
        for (const StageStep& step : order) {
          const size_t x = at(s, j, step.microbatch);
          int32_t t;
          if (step.forward) {
            t = f_start_[x] = f_done_[x] = Task(d, fwd_[x], PipelineTaskKind::kForward, s, -1, step.microbatch);
            tg_.fallback[t] = fallback_[x];
            Hold(t, stash_[x], d);
            out_.stash_bytes[t] = stash_[x];
          } else {
            t = b_start_[x] = b_done_[x] = Task(d, bwd_[x], PipelineTaskKind::kBackward, s, -1, step.microbatch);
            tg_.fallback[t] = fallback_[x];
            Dep(f_done_[x], t);
            if (plan_.delay_weight_gradients) {
              if (prev >= 0) Dep(prev, t);
              prev = t;
              t = Task(d, wgt_[x], PipelineTaskKind::kWeightGradient, s, -1, step.microbatch);
              Dep(f_done_[x], t);  // the kept activations live until the weight gradient
            }
            last_task_[x] = t;
          }
          if (prev >= 0) Dep(prev, t);
          prev = t;
        }
        const size_t sj = static_cast<size_t>(offset_[s] / M_ + j);
        last_compute_[sj] = prev;
        if (upd_[sj] > 0) {
          update_[sj] = Task(d, upd_[sj], PipelineTaskKind::kUpdate, s, -1, -1);
          tg_.fallback[update_[sj]] = fallback_[n + sj];
          Dep(prev, update_[sj]);
        }
      }
    }
  }

  // Sharded stage s's tasks (AppendShardedStage); its markers stand for its per-device forward and backward.
  void AddShardedStage(int32_t s, const std::vector<StageStep>& order) {
    StageMarkers markers;
    AppendShardedStage(*sharded_[s], topology_, cost_, options_, order, s, plan_.stages[s].devices, M_, &out_,
                       &markers);
    for (int32_t j = 0; j < width(s); ++j)
      for (int32_t m = 0; m < M_; ++m) {
        const size_t x = at(s, j, m), y = static_cast<size_t>(j * M_ + m);
        f_start_[x] = markers.f_start[y];
        f_done_[x] = markers.f_done[y];
        b_start_[x] = markers.b_start[y];
        b_done_[x] = last_task_[x] = markers.b_done[y];
      }
  }

  // Bytes per step crossing each stage pair (a, b), sent by a: forward, a < b, activations; backward, a > b,
  // gradients. A forward op's output goes once to each later stage that reads it (the largest edge into that
  // stage); the gradient of a tensor is summed in the stage that computes it and sent once (the largest edge into
  // each backward op from each later stage). -1: nothing crosses.
  std::vector<int64_t> CrossingBytes() const {
    std::vector<int64_t> bytes(static_cast<size_t>(S_) * S_, -1), largest(static_cast<size_t>(S_));
    for (OpId op = 0; op < graph_.num_ops(); ++op) {
      const OpRole role = graph_.op(op).role;
      if (role == OpRole::kUpdate) continue;
      const bool forward = role == OpRole::kForward;
      std::fill(largest.begin(), largest.end(), -1);
      for (int32_t e : forward ? graph_.out_edges(op) : graph_.in_edges(op)) {
        const OpId other = forward ? graph_.edge(e).dst : graph_.edge(e).src;
        const OpRole other_role = graph_.op(other).role;  // a backward op's forward inputs are activations
        if (stage_of_[other] != stage_of_[op] && other_role != OpRole::kUpdate &&
            (forward || other_role == OpRole::kBackward))
          largest[stage_of_[other]] = std::max(largest[stage_of_[other]], graph_.edge(e).bytes);
      }
      for (int32_t b = 0; b < S_; ++b) {
        if (largest[b] < 0) continue;
        int64_t& total = bytes[static_cast<size_t>(forward ? stage_of_[op] : b) * S_ + (forward ? b : stage_of_[op])];
        total = std::max<int64_t>(total, 0) + largest[b];
      }
    }
    return bytes;
  }

  // The unit tasks from stage a's layout to stage b's over the 2-D view [samples, features] (extents the least
  // common multiples of the two layouts' shard counts, so every tile is exact), each slice's elements, and senders
  // and order planned by the plan's balancer for slices of `per_microbatch` bytes split by elements (1 byte each
  // when signal_only).
  Status PlanPair(int32_t a, int32_t b, int64_t per_microbatch, std::vector<UnitTask>* tasks,
                  std::vector<int64_t>* elements, ReshardPlan* plan) {
    const Mesh from = StageMesh(plan_.stages[a]), to = StageMesh(plan_.stages[b]);
    const ShardingSpec& sa = spec_[a];
    const ShardingSpec& sb = spec_[b];
    const std::vector<int64_t> shape = {std::lcm(ShardCount(sa, 0, from), ShardCount(sb, 0, to)),
                                        std::lcm(ShardCount(sa, 1, from), ShardCount(sb, 1, to))};
    Expected<std::vector<UnitTask>> units = UnitTasks(shape, 1, from, sa, to, sb);
    if (!units.ok()) return units.error();
    *tasks = std::move(*units);
    elements->clear();
    const int64_t all = shape[0] * shape[1];
    int64_t before = 0;
    for (UnitTask& t : *tasks) {
      elements->push_back(t.bytes);
      const int64_t after = before + t.bytes;
      const int64_t share = ScaleBytes(per_microbatch, after, all) - ScaleBytes(per_microbatch, before, all);
      t.bytes = plan_.reshard.signal_only ? 1 : std::max<int64_t>(1, share);
      before = after;
    }
    ReshardOptions options;
    options.method = plan_.reshard.method;
    options.balance = plan_.reshard.balance;
    options.broadcast_chunks = plan_.reshard.chunks;
    options.sim = options_;
    Expected<ReshardResult> planned = PlanReshard(topology_, *tasks, options);
    if (!planned.ok()) return planned.error();
    *plan = std::move(planned->plan);
    return Status::Ok();
  }

  // The position of device `d` in stage s.
  int32_t IndexIn(int32_t s, DeviceId d) const {
    const auto& devices = plan_.stages[s].devices;
    return static_cast<int32_t>(std::find(devices.begin(), devices.end(), d) - devices.begin());
  }

  // Activations (stage a -> later stage b) and gradients (b -> a) of every micro-batch, resharded from the sender's
  // layout to the receiver's (PipelineResharding): each slice leaves after the sender's forward (backward) of the
  // micro-batch; the receiver's forward (backward) waits for all its slices, whose buffers live until its last
  // backward task of the micro-batch.
  Status AddStageTransfers() {
    const std::vector<int64_t> crossing = CrossingBytes();
    struct Pair {
      int32_t a, b;
      int64_t total;
      std::vector<UnitTask> tasks;
      std::vector<int64_t> start;  // per task: the elements of the slices before it (then the total)
      ReshardPlan plan;
    };
    std::vector<Pair> pairs;
    for (int32_t a = 0; a < S_; ++a)
      for (int32_t b = 0; b < S_; ++b) {
        const int64_t total = crossing[static_cast<size_t>(a) * S_ + b];
        if (total < 0) continue;
        Pair p{a, b, total, {}, {0}, {}};
        std::vector<int64_t> elements;
        if (Status st = PlanPair(a, b, ScaleBytes(total, 1, M_), &p.tasks, &elements, &p.plan); !st) return st;
        for (int64_t e : elements) p.start.push_back(p.start.back() + e);
        pairs.push_back(std::move(p));
      }
    CommBuilder builder(topology_, options_, &tg_, Labelled(true));
    for (int32_t m = 0; m < M_; ++m)
      for (const Pair& p : pairs) {
        const bool forward = p.a < p.b;
        const std::vector<int32_t>& sent = forward ? f_done_ : b_done_;
        const std::vector<int32_t>& work = forward ? f_start_ : b_start_;
        const int64_t chunk = ScaleBytes(p.total, m + 1, M_) - ScaleBytes(p.total, m, M_);
        label_ = {forward ? PipelineTaskKind::kActivation : PipelineTaskKind::kGradient, p.a, p.b, m};
        for (int32_t i : p.plan.order) {
          const UnitTask& unit = p.tasks[i];
          const int32_t from = sent[at(p.a, IndexIn(p.a, p.plan.sender[i]), m)];
          const int64_t all = p.start.back();
          const int64_t bytes = plan_.reshard.signal_only
                                    ? 1
                                    : ScaleBytes(chunk, p.start[i + 1], all) - ScaleBytes(chunk, p.start[i], all);
          if (bytes == 0) {
            for (DeviceId r : unit.receivers) Dep(from, work[at(p.b, IndexIn(p.b, r), m)]);
            continue;
          }
          for (const auto& [r, ready] :
               CarryUnitTask(&builder, topology_, unit, bytes, p.plan.sender[i], p.plan.method,
                             plan_.reshard.chunks, {from})) {
            const size_t x = at(p.b, IndexIn(p.b, r), m);
            for (int32_t t : ready) Dep(t, work[x]);
            Hold(ready[0], bytes, r);
            if (last_task_[x] != work[x]) Dep(ready[0], last_task_[x]);
          }
        }
      }
    return Status::Ok();
  }

  // Options for a CommBuilder appending to the step's graph: every task it adds gets the labels in label_.
  CommOptions Labelled(bool segmented) {
    CommOptions comm;
    comm.fresh = false;
    comm.segmented = segmented;
    comm.on_task = [this](int32_t t) {
      tg_.op[t] = label_.stage;
      tg_.part[t] = 0;
      out_.kind.push_back(label_.kind);
      out_.peer.push_back(label_.peer);
      out_.microbatch.push_back(label_.microbatch);
      out_.stash_bytes.push_back(0);
    };
    return comm;
  }

  // The ring all-reduce of a stage's weight gradients after its last backward, before its update (sim/collectives.h,
  // unsegmented like the placement's rings), among the devices holding the same weight shard: those whose
  // coordinates differ only on the layout's sample-split axes, each group reducing 1/t of the weights (t the product
  // of the other axes' extents).
  void AddAllReduce(int32_t s) {
    const Mesh mesh = StageMesh(plan_.stages[s]);
    int64_t params = 0;
    for (OpId op = 0; op < graph_.num_ops(); ++op)
      if (stage_of_[op] == s && graph_.op(op).role == OpRole::kBackward) params += ParamBytesOf(graph_, op);
    const int64_t t = ModelDegree(s);
    if (mesh.size() / t < 2 || params == 0) return;
    const size_t base = static_cast<size_t>(offset_[s] / M_);
    std::map<std::vector<int64_t>, std::vector<int32_t>> groups;  // coordinates on the other axes -> positions
    for (int32_t j = 0; j < width(s); ++j) {
      std::vector<int64_t> key = mesh.coords_of(j);
      for (int32_t a : spec_[s].dims[0]) key[a] = -1;
      groups[key].push_back(j);
    }
    label_ = {PipelineTaskKind::kAllReduce, s, s, -1};
    CommBuilder builder(topology_, options_, &tg_, Labelled(false));
    for (const auto& [key, group] : groups) {
      std::vector<DeviceId> members;
      std::vector<Ready> after;
      for (int32_t j : group) {
        members.push_back(device(s, j));
        after.push_back({last_compute_[base + j]});
      }
      const std::vector<Ready> done = builder.AllReduce(members, std::max<int64_t>(1, params / t), after);
      for (size_t i = 0; i < group.size(); ++i)
        if (update_[base + group[i]] >= 0)
          for (int32_t task : done[i]) Dep(task, update_[base + group[i]]);
    }
  }

  // The time micro-batch m's weight gradient of `bytes` (0 for an op without weights) takes to be added into the
  // sum on `device`, in place, as the executor does after each micro-batch but the first: a pass reading both and
  // writing one, 3 x bytes over the device's memory bandwidth (which counts bytes read plus written).
  static double Accumulation(int32_t m, int64_t bytes, const Device& device) {
    return m > 0 ? 3.0 * static_cast<double>(bytes) / device.memory_bandwidth : 0.0;
  }

  // The product of the extents of the mesh axes stage s's layout does not split the samples over (1 for a
  // data-parallel stage): the ways its weights are sharded.
  int64_t ModelDegree(int32_t s) const {
    const Mesh mesh = StageMesh(plan_.stages[s]);
    int64_t t = mesh.size();
    for (int32_t a : spec_[s].dims[0]) t /= mesh.shape[a];
    return t;
  }

  const Graph& graph_;
  const Topology& topology_;
  const PipelinePlan& plan_;
  const std::vector<int32_t>& stage_of_;
  const CostModel& cost_;
  const SimOptions& options_;
  PipelineTasks& out_;
  TaskGraph& tg_;
  const int32_t S_, M_;
  std::vector<int32_t> offset_;                   // per stage: first (device, micro-batch) slot
  std::vector<Time> fwd_, bwd_, wgt_, upd_;       // per slot (upd_: per stage device)
  std::vector<int64_t> stash_;                    // per slot
  std::vector<uint8_t> fallback_;                 // per slot, then per stage device (update): a share fell back
  // Per slot: the tasks opening and closing its forward and backward (the same task unless the stage is sharded),
  // and its last backward task.
  std::vector<int32_t> f_start_, f_done_, b_start_, b_done_, last_task_;
  std::vector<std::optional<StageGraph>> sharded_;  // per stage: its lowering when it has sharding annotations
  std::vector<int32_t> last_compute_, update_;    // per stage device
  std::vector<ShardingSpec> spec_;                // per stage: its layout (StageSpec)
  struct {
    PipelineTaskKind kind;
    int32_t stage, peer, microbatch;
  } label_{};                                     // labels of the tasks a CommBuilder adds (Labelled)
  std::vector<DeviceId> places_;
  std::vector<int64_t> shape_;
};

}  // namespace

int32_t AppendPipelineTask(PipelineTasks* out, int32_t resource, Time duration, PipelineTaskKind kind, int32_t stage,
                           int32_t peer, int32_t microbatch) {
  TaskGraph& tg = out->tg;
  const int32_t id = tg.num_tasks();
  tg.resource.push_back(resource);
  tg.duration.push_back(std::max<Time>(1, duration));
  tg.key.push_back(static_cast<uint64_t>(id));
  tg.kind.push_back(TaskKind::kCompute);
  for (auto* v : {&tg.first_hop, &tg.fallback}) v->push_back(0);
  tg.alive.push_back(1);
  tg.op.push_back(stage);
  for (auto* v : {&tg.part, &tg.succ_off, &tg.succ_cnt, &tg.pred_off, &tg.pred_cnt}) v->push_back(0);
  for (auto* v : {&tg.consumer, &tg.mem_device}) v->push_back(-1);
  for (auto* v : {&tg.bytes, &tg.mem_bytes}) v->push_back(0);
  out->kind.push_back(kind);
  out->peer.push_back(peer);
  out->microbatch.push_back(microbatch);
  out->stash_bytes.push_back(0);
  return id;
}

Status BuildPipelineTasks(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                          const std::vector<int32_t>& stage_of, const CostModel& cost, const SimOptions& options,
                          PipelineTasks* out) {
  return PipelineBuilder(graph, topology, plan, stage_of, cost, options, out).Build();
}

}  // namespace devplace::sim
