#include "sim/pipeline_build.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"
#include "core/strategy.h"
#include "sim/collectives.h"
#include "sim/partition.h"

namespace devplace::sim {
namespace {

// floor(total * part / whole) without overflow.
int64_t ScaleBytes(int64_t total, int64_t part, int64_t whole) {
  return static_cast<int64_t>(static_cast<__int128>(total) * part / whole);
}

class PipelineBuilder {
 public:
  PipelineBuilder(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                  const std::vector<int32_t>& stage_of, const CostModel& cost, const SimOptions& options,
                  PipelineTasks* out)
      : graph_(graph), topology_(topology), plan_(plan), stage_of_(stage_of), cost_(cost), options_(options),
        out_(*out), tg_(out->tg), S_(static_cast<int32_t>(plan.stages.size())), M_(plan.microbatches) {}

  void Build() {
    Reset();
    offset_.assign(static_cast<size_t>(S_) + 1, 0);
    for (int32_t s = 0; s < S_; ++s) offset_[s + 1] = offset_[s] + width(s) * M_;
    Price();
    AddComputeTasks();
    AddStageTransfers();
    for (int32_t s = 0; s < S_; ++s) AddAllReduce(s);
    tg_.group_task_count = {tg_.num_tasks()};
    tg_.group_dep_count = {static_cast<int32_t>(tg_.dep_from.size())};
    BuildAdjacency(&tg_);
    out_.totals.Reset(tg_.num_resources);
    for (int32_t t = 0; t < tg_.num_tasks(); ++t) out_.totals.Add(tg_, t, +1);
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
    const int32_t id = tg_.num_tasks();
    const bool compute = resource < tg_.num_devices;
    tg_.resource.push_back(resource);
    tg_.duration.push_back(std::max<Time>(1, duration));
    tg_.key.push_back(static_cast<uint64_t>(id));
    tg_.kind.push_back(compute ? TaskKind::kCompute : TaskKind::kTransfer);  // all-reduce steps: AddAllReduce
    for (auto* v : {&tg_.first_hop, &tg_.fallback}) v->push_back(0);
    tg_.alive.push_back(1);
    tg_.op.push_back(stage);
    for (auto* v : {&tg_.part, &tg_.succ_off, &tg_.succ_cnt, &tg_.pred_off, &tg_.pred_cnt}) v->push_back(0);
    for (auto* v : {&tg_.consumer, &tg_.mem_device}) v->push_back(-1);
    for (auto* v : {&tg_.bytes, &tg_.mem_bytes}) v->push_back(0);
    out_.kind.push_back(kind);
    out_.peer.push_back(peer);
    out_.microbatch.push_back(mb);
    out_.stash_bytes.push_back(0);
    return id;
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
      const int64_t params = ParamBytesOf(graph_, op);
      const int64_t held = o.role == OpRole::kUpdate
                               ? static_cast<int64_t>(static_cast<double>(params) * options_.optimizer_state_factor)
                               : params;
      bool kept = false;  // a forward op whose output a backward op reads is kept until the backward
      for (int32_t e : graph_.out_edges(op)) kept = kept || graph_.op(graph_.edge(e).dst).role == OpRole::kBackward;
      for (int32_t j = 0; j < k; ++j) {
        const Device& dev = topology_.device(device(s, j));
        out_.static_bytes[device(s, j)] += held;
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
            wgt[x] += seconds / 2;
          } else {
            bwd[x] += seconds;
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
    f_task_.assign(n, -1);
    b_task_.assign(n, -1);
    last_task_.assign(n, -1);
    last_compute_.assign(n / M_, -1);
    update_.assign(n / M_, -1);
    out_.max_in_flight.assign(static_cast<size_t>(S_), 0);
    for (int32_t s = 0; s < S_; ++s) {
      const std::vector<StageStep> order = StageOrder(plan_.schedule, S_, s, M_);
      for (int32_t j = 0; j < width(s); ++j) {
        const DeviceId d = device(s, j);
        int32_t prev = -1, in_flight = 0;
        for (const StageStep& step : order) {
          const size_t x = at(s, j, step.microbatch);
          int32_t t;
          if (step.forward) {
            t = f_task_[x] = Task(d, fwd_[x], PipelineTaskKind::kForward, s, -1, step.microbatch);
            tg_.fallback[t] = fallback_[x];
            Hold(t, stash_[x], d);
            out_.stash_bytes[t] = stash_[x];
            out_.max_in_flight[s] = std::max(out_.max_in_flight[s], ++in_flight);
          } else {
            --in_flight;
            t = b_task_[x] = Task(d, bwd_[x], PipelineTaskKind::kBackward, s, -1, step.microbatch);
            tg_.fallback[t] = fallback_[x];
            Dep(f_task_[x], t);
            if (plan_.delay_weight_gradients) {
              if (prev >= 0) Dep(prev, t);
              prev = t;
              t = Task(d, wgt_[x], PipelineTaskKind::kWeightGradient, s, -1, step.microbatch);
              Dep(f_task_[x], t);  // the kept activations live until the weight gradient
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

  // Appends the hops of a transfer (segments pipelined over multi-hop routes) into firsts_ and lasts_.
  void Route(DeviceId src, DeviceId dst, int64_t bytes, PipelineTaskKind kind, int32_t stage,
             int32_t peer, int32_t mb) {
    firsts_.clear();
    lasts_.clear();
    const std::span<const LinkId> links = topology_.route(src, dst);
    const int64_t hops = static_cast<int64_t>(links.size());
    const int64_t segments = SegmentCount(bytes, hops, options_);
    for (int64_t g = 0; g < segments; ++g) {
      const int64_t piece = ScaleBytes(bytes, g + 1, segments) - ScaleBytes(bytes, g, segments);
      for (int64_t h = 0; h < hops; ++h) {
        const int32_t t = Task(tg_.num_devices + links[h], ToTicks(piece / topology_.link(links[h]).bandwidth),
                               kind, stage, peer, mb);
        tg_.bytes[t] = piece;
        tg_.first_hop[t] = h == 0;
        if (h == 0) firsts_.push_back(t);
        else Dep(t - 1, t);
      }
      lasts_.push_back(tg_.num_tasks() - 1);
    }
  }

  // Sends `bytes` of micro-batch m from task `from` on (a, i) to task `to` on (b, j); the receive buffer lives
  // until `release` ends.
  void Send(int64_t bytes, PipelineTaskKind kind, int32_t a, int32_t i, int32_t b, int32_t j, int32_t m,
            int32_t from, int32_t to, int32_t release) {
    if (bytes == 0) {
      Dep(from, to);
      return;
    }
    Route(device(a, i), device(b, j), bytes, kind, a, b, m);
    for (int32_t f : firsts_) Dep(from, f);
    for (int32_t l : lasts_) Dep(l, to);
    Hold(lasts_[0], bytes, device(b, j));
    if (release != to) Dep(lasts_[0], release);
  }

  // Activations (stage a -> later stage b) and gradients (b -> a) of every micro-batch, between the devices
  // whose sample ranges overlap.
  void AddStageTransfers() {
    // Bytes per step crossing each stage pair. A forward op's output goes once to each later stage that reads
    // it (the largest edge into that stage); the gradient of a tensor is summed in the stage that computes it and
    // sent once (the largest edge into each backward op from each later stage).
    const size_t pairs = static_cast<size_t>(S_) * S_;
    std::vector<int64_t> act(pairs, 0), grad(pairs, 0);
    std::vector<uint8_t> linked(pairs, 0);
    std::vector<int64_t> largest(static_cast<size_t>(S_));
    for (OpId op = 0; op < graph_.num_ops(); ++op) {
      const OpRole role = graph_.op(op).role;
      if (role == OpRole::kUpdate) continue;
      const bool forward = role == OpRole::kForward;
      std::fill(largest.begin(), largest.end(), -1);
      for (int32_t e : forward ? graph_.out_edges(op) : graph_.in_edges(op)) {
        const OpId other = forward ? graph_.edge(e).dst : graph_.edge(e).src;
        if (stage_of_[other] != stage_of_[op] && graph_.op(other).role != OpRole::kUpdate)
          largest[stage_of_[other]] = std::max(largest[stage_of_[other]], graph_.edge(e).bytes);
      }
      for (int32_t b = 0; b < S_; ++b) {
        if (largest[b] < 0) continue;
        const int32_t from = forward ? stage_of_[op] : b, to = forward ? b : stage_of_[op];
        const size_t p = static_cast<size_t>(from) * S_ + to;
        (forward ? act : grad)[p] += largest[b];
        linked[p] = 1;
      }
    }
    for (int32_t m = 0; m < M_; ++m)
      for (int32_t a = 0; a < S_; ++a)
        for (int32_t b = 0; b < S_; ++b) {
          const size_t p = static_cast<size_t>(a) * S_ + b;
          if (!linked[p]) continue;
          const bool forward = a < b;
          const int64_t total = forward ? act[p] : grad[p];
          const int64_t chunk = ScaleBytes(total, m + 1, M_) - ScaleBytes(total, m, M_);
          const int32_t ka = width(a), kb = width(b);
          for (int32_t i = 0; i < ka; ++i)
            for (int32_t j = 0; j < kb; ++j) {
              // Sample ranges in units of 1 / (ka * kb): sender i holds [i kb, (i+1) kb), receiver j needs
              // [j ka, (j+1) ka).
              const int64_t lo = std::max(i * kb, j * ka), hi = std::min((i + 1) * kb, (j + 1) * ka);
              if (hi <= lo) continue;
              const int64_t bytes = ScaleBytes(chunk, hi, ka * kb) - ScaleBytes(chunk, lo, ka * kb);
              const size_t src = at(a, i, m), dst = at(b, j, m);
              if (forward)
                Send(bytes, PipelineTaskKind::kActivation, a, i, b, j, m, f_task_[src], f_task_[dst],
                     last_task_[dst]);
              else
                Send(bytes, PipelineTaskKind::kGradient, a, i, b, j, m, b_task_[src], b_task_[dst],
                     last_task_[dst]);
            }
        }
  }

  // A data-parallel stage's ring all-reduce of its weight gradients after its last backward, before its update
  // (sim/collectives.h, unsegmented like the placement's rings).
  void AddAllReduce(int32_t s) {
    const int32_t k = width(s);
    int64_t params = 0;
    for (OpId op = 0; op < graph_.num_ops(); ++op)
      if (stage_of_[op] == s && graph_.op(op).role == OpRole::kBackward) params += ParamBytesOf(graph_, op);
    if (k < 2 || params == 0) return;
    const size_t base = static_cast<size_t>(offset_[s] / M_);
    std::vector<DeviceId> members;
    std::vector<Ready> after;
    for (int32_t j = 0; j < k; ++j) {
      members.push_back(device(s, j));
      after.push_back({last_compute_[base + j]});
    }
    CommOptions comm;
    comm.fresh = false;
    comm.segmented = false;
    comm.on_task = [&](int32_t t) {
      tg_.op[t] = s;
      tg_.part[t] = 0;
      out_.kind.push_back(PipelineTaskKind::kAllReduce);
      out_.peer.push_back(s);
      out_.microbatch.push_back(-1);
      out_.stash_bytes.push_back(0);
    };
    CommBuilder builder(topology_, options_, &tg_, comm);
    const std::vector<Ready> done = builder.AllReduce(members, params, after);
    for (int32_t j = 0; j < k; ++j)
      if (update_[base + j] >= 0)
        for (int32_t t : done[j]) Dep(t, update_[base + j]);
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
  std::vector<int32_t> f_task_, b_task_, last_task_;  // per slot: forward, backward, last backward task
  std::vector<int32_t> last_compute_, update_;    // per stage device
  std::vector<int32_t> firsts_, lasts_;
  std::vector<DeviceId> places_;
  std::vector<int64_t> shape_;
};

}  // namespace

void BuildPipelineTasks(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                        const std::vector<int32_t>& stage_of, const CostModel& cost, const SimOptions& options,
                        PipelineTasks* out) {
  PipelineBuilder(graph, topology, plan, stage_of, cost, options, out).Build();
}

}  // namespace devplace::sim
