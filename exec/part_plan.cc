#include "exec/part_plan.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "core/check.h"
#include "exec/backend.h"
#include "exec/collectives.h"
#include "exec/op_impl.h"
#include "exec/part_need.h"

namespace devplace::exec {

namespace {

// Builds a PartPlan in stages: units and their regions, kernels and weights, compute tasks, collectives, then the
// copies and assemblies of every unit's inputs.
class Builder {
 public:
  Builder(const Graph& graph, const Topology& topology, const Strategy& strategy,
          const std::vector<at::Device>& device_of, Plan base, bool sync_replicas, PartPlan* plan)
      : g_(graph), topology_(topology), s_(strategy), device_of_(device_of), base_(std::move(base)),
        sync_replicas_(sync_replicas), plan_(*plan) {}

  void Build() {
    MakeUnits();
    for (int pass = 0; pass < 2; ++pass)  // forward parts first: backward parts share their computation
      for (OpId op = 0; op < g_.num_ops(); ++op)
        if ((g_.op(op).role == OpRole::kForward) == (pass == 0)) MakeKernels(op);
    for (size_t u = 0; u < plan_.units.size(); ++u) {
      Task t;
      t.kind = TaskKind::kCompute;
      t.device = plan_.units[u].device;
      t.unit = static_cast<int32_t>(u);
      const int32_t id = plan_.program.Add(std::move(t));
      plan_.task_of[plan_.units[u].op].push_back(id);
      ready_.emplace_back(plan_.units[u].out_slots.size(), id);
    }
    plan_.scattered_gradient.assign(static_cast<size_t>(g_.num_ops()), 0);
    for (OpId op = 0; op < g_.num_ops(); ++op) Collectives(op);
    for (OpId op = 0; op < g_.num_ops(); ++op) GatherWeights(op);
    Inputs();
    plan_.edges = std::move(base_.edges);  // a moved vector keeps its elements where cuts point to them
  }

 private:
  Unit& UnitAt(OpId op, int32_t part) { return plan_.units[plan_.unit_of[op][part]]; }

  void MakeUnits() {
    const int32_t n = g_.num_ops();
    plan_.unit_of.resize(n);
    plan_.task_of.resize(n);
    part_impl_.resize(n);
    for (OpId op = 0; op < n; ++op) {
      const Op& o = g_.op(op);
      const OpConfig& c = s_.configs[op];
      for (int32_t p = 0; p < c.num_parts(); ++p) {
        Unit u;
        u.op = op;
        u.part = p;
        u.device = c.devices[p];
        u.torch_device = device_of_[u.device];
        u.out_box = ComputedBox(o, c, p);
        u.owned = o.role == OpRole::kForward ? OwnedBox(o, c, p) : u.out_box;
        plan_.unit_of[op].push_back(static_cast<int32_t>(plan_.units.size()));
        plan_.units.push_back(std::move(u));
      }
    }
  }

  // The op the part computes as a whole op of the part's shapes (kept alive for the kernels built from it).
  const Op* PartOp(const Op& o, const Box& box, double flops) {
    Op part = o;
    part.shape = Extents(box);
    part.flops = flops;
    part_ops_.push_back(std::make_unique<Op>(std::move(part)));
    return part_ops_.back().get();
  }

  // The weights a part on `place` (LibTorch device `device`) computes with; parts on one device holding the owner's
  // whole weights share them (a pipeline's micro-batches).
  PartWeights* Weights(OpId owner, at::Tensor index, DeviceId place, const at::Device& device) {
    const auto whole = std::make_pair(owner, place);
    if (!index.defined())
      if (auto it = whole_weights_.find(whole); it != whole_weights_.end()) return it->second;
    auto w = std::make_unique<PartWeights>();
    w->owner = owner;
    const at::Tensor& full = plan_.full_weights[owner];
    w->index = index;
    w->w = (index.defined() ? full.index_select(0, index) : full.clone()).to(device);
    plan_.weights.push_back(std::move(w));
    if (!index.defined()) whole_weights_[whole] = plan_.weights.back().get();
    return plan_.weights.back().get();
  }

  // Flat weight indices of `part` of `op` (forward, or backward with its forward op's dims) under `config`.
  at::Tensor WeightIndex(OpId f, const OpConfig& config, int32_t part, int32_t shard_axis, const OpImpl* impl) {
    const Op& o = g_.op(f);
    const Box box = ComputedBox(o, config, part);
    if (shard_axis >= 0) return impl->WeightShard(shard_axis, box.lo[shard_axis], box.hi[shard_axis]);
    const PartLayout layout = Layout(o, config);
    if (layout.shards == 1) return {};
    const int64_t total = plan_.full_weights[base_.owner[f]].numel();
    const int64_t s = devplace::ShardIndex(o, config, part), k = layout.shards;
    return at::arange(total * s / k, total * (s + 1) / k, at::kLong);
  }

  void MakeKernels(OpId op) {
    const Op& o = g_.op(op);
    const OpConfig& c = s_.configs[op];
    const int32_t parts = c.num_parts();
    const OpId f = o.role == OpRole::kForward ? op : g_.forward_op_of(op);
    const bool has_forward = f >= 0 && g_.op(f).role == OpRole::kForward;
    const OpId owner = has_forward ? base_.owner[f] : -1;
    const auto in = g_.in_edges(op);
    for (int32_t p = 0; p < parts; ++p) {
      Unit& u = UnitAt(op, p);
      std::vector<Need> needs;
      for (int32_t e : in) needs.push_back(NeedOf(g_, base_, e, c, p));
      for (size_t i = 0; i < in.size(); ++i) {
        Assembly a;
        a.type = base_.edges[in[i]].type;
        a.index_bound = base_.edges[in[i]].index_bound;
        a.sum = needs[i].sum;
        a.cut = needs[i].cut;
        a.cut_lo = needs[i].cut_lo;
        a.cut_len = needs[i].cut_len;
        a.shape = needs[i].zeros || needs[i].weight_grad ? base_.edges[in[i]].shape : Extents(needs[i].region);
        u.inputs.push_back(std::move(a));
      }
      needs_.emplace(plan_.unit_of[op][p], std::move(needs));
    }
    if (o.role == OpRole::kForward && !base_.impls[op]) {  // a graph input: its slice of the seeded data
      KernelIo io;
      io.outputs.resize(g_.out_edges(op).size());
      base_.kernels[op]->Run(io);
      for (int32_t p = 0; p < parts; ++p) {
        Unit& u = UnitAt(op, p);
        at::Tensor data = io.produced[0];
        for (int32_t a = 0; a < u.out_box.rank; ++a)
          data = data.narrow(a, u.out_box.lo[a], u.out_box.hi[a] - u.out_box.lo[a]);
        u.kernel = MakePartInput(data.contiguous().to(u.torch_device));
        u.out_slots = {plan_.program.AddSlot()};
        port_box_[plan_.unit_of[op][p]] = {u.out_box};
      }
      return;
    }
    if (o.role == OpRole::kForward) return ForwardKernels(op, owner);
    if (o.role == OpRole::kUpdate && owner == f && f >= 0) return UpdateKernels(op, f);
    BackwardKernels(op, has_forward && base_.impls[f] ? f : -1, owner);
  }

  void ForwardKernels(OpId op, OpId owner) {
    const Op& o = g_.op(op);
    const OpConfig& c = s_.configs[op];
    const int32_t parts = c.num_parts();
    int32_t shard_axis = -1;
    const bool exact = !base_.stand_in[op] && ExactSplit(g_, base_, op, c, *base_.impls[op], &shard_axis);
    const OpId grad = GradOf(op);
    const double volume = static_cast<double>(std::max<int64_t>(1, NumElements(o)));
    for (int32_t p = 0; p < parts; ++p) {
      Unit& u = UnitAt(op, p);
      PartWeights* w = nullptr;
      if (owner >= 0)
        w = Weights(owner, WeightIndex(op, c, p, shard_axis, base_.impls[op].get()), u.device, u.torch_device);
      if (w && owner == op && c.shard_weights && Layout(o, c).replicas > 1) {  // ZeRO-3: keep piece i of r
        const int64_t n = w->w.numel(), i = ReplicaIndex(o, c, p), r = Layout(o, c).replicas;
        w->piece_lo = n * i / r;
        w->piece_len = n * (i + 1) / r - w->piece_lo;
        w->KeepPiece();
      }
      OpDesc desc;
      for (const Assembly& a : u.inputs) {
        desc.input_shapes.push_back(a.cut ? CutShape(*a.cut, a.cut_len) : a.shape);
        desc.input_types.push_back(a.type);
      }
      desc.param_elements = w ? w->w.numel() : 0;
      desc.options = at::TensorOptions().dtype(at::kFloat).device(u.torch_device);
      std::shared_ptr<const OpImpl> impl;
      if (parts == 1 && exact) {
        impl = base_.impls[op];
      } else if (exact) {
        desc.op = PartOp(o, u.out_box, o.flops * static_cast<double>(Volume(u.out_box)) / volume);
        impl = MakeOpImpl(desc);
      }
      if (!impl) {
        const int32_t distinct = Layout(o, c).distinct;  // as the simulator prices a part
        desc.op = PartOp(o, u.out_box, o.flops / distinct);
        impl = MakeStandIn(desc, desc.op->flops, grad >= 0 ? g_.op(grad).flops / distinct : 0.0);
        u.stand_in = true;
      } else {
        u.stand_in = base_.stand_in[op] != 0;
      }
      part_impl_[op].push_back({impl, w});
      u.kernel = MakePartForward(impl, w);
      u.out_slots = {plan_.program.AddSlot()};
      port_box_[plan_.unit_of[op][p]] = {u.out_box};
    }
  }

  OpId GradOf(OpId f) const {
    for (int32_t e : g_.out_edges(f)) {
      const OpId d = g_.edge(e).dst;
      if (g_.op(d).role == OpRole::kBackward && g_.op(d).forward_op == g_.op(f).name) return d;
    }
    return -1;
  }

  void BackwardKernels(OpId op, OpId f, OpId owner) {
    const Op& o = g_.op(op);
    const OpConfig& c = s_.configs[op];
    const int32_t parts = c.num_parts();
    const bool same = f >= 0 && c == s_.configs[f];
    const auto f_in = f >= 0 ? g_.in_edges(f) : std::span<const int32_t>();
    for (int32_t p = 0; p < parts; ++p) {
      Unit& u = UnitAt(op, p);
      BackwardRoles roles;
      roles.out_shape = Extents(u.out_box);
      std::vector<Box>& ports = port_box_[plan_.unit_of[op][p]];
      for (size_t s = 0; s < f_in.size(); ++s) {
        const Need need = NeedOf(g_, base_, f_in[s], c, p);  // as part p of f under this config would need it
        ports.push_back(need.region);
        roles.slot_shapes.push_back(need.cut ? CutShape(*need.cut, need.cut_len) : Extents(need.region));
        roles.slot_types.push_back(base_.edges[f_in[s]].type);
      }
      roles.need.assign(f_in.size(), 0);
      for (int32_t e : g_.in_edges(op)) {
        const OpId src = g_.edge(e).src;
        const int slot = f >= 0 && g_.op(src).role == OpRole::kForward ? SlotOf(g_, f, src) : -1;
        roles.role.push_back(src == f ? BackwardRoles::kSavedOutput : (slot >= 0 ? slot : BackwardRoles::kGradient));
      }
      for (int32_t e : g_.out_edges(op)) {
        const Op& dst = g_.op(g_.edge(e).dst);
        const OpId b = dst.role == OpRole::kBackward ? g_.forward_op_of(g_.edge(e).dst) : -1;
        const int slot = f >= 0 && b >= 0 ? SlotOf(g_, f, b) : -1;
        if (slot >= 0) roles.need[slot] = 1;
      }
      std::shared_ptr<const OpImpl> impl;
      const PartWeights* w = nullptr;
      if (same && !UnitAt(f, p).stand_in) {
        impl = part_impl_[f][p].first;
        w = part_impl_[f][p].second;
      } else {
        if (same) w = part_impl_[f][p].second;
        else if (owner >= 0) w = Weights(owner, WeightIndex(f, c, p, -1, nullptr), u.device, u.torch_device);
        OpDesc desc;
        desc.input_shapes = roles.slot_shapes;
        desc.input_types = roles.slot_types;
        desc.param_elements = w ? w->w.numel() : 0;
        desc.options = at::TensorOptions().dtype(at::kFloat).device(u.torch_device);
        desc.op = PartOp(f >= 0 ? g_.op(f) : o, u.out_box, 0.0);
        impl = MakeStandIn(desc, 0.0, o.flops / Layout(o, c).distinct);
        u.stand_in = true;
      }
      if (w) {
        u.grad_index = w->index;
        u.weight_port = static_cast<int32_t>(f_in.size());
        u.weight_elements = w->w.numel();
        ports.push_back(FullBox({w->w.numel()}));
      }
      u.kernel = MakePartBackward(impl, w, std::move(roles), u.torch_device);
      for (size_t k = 0; k < f_in.size() + (w ? 1 : 0); ++k) u.out_slots.push_back(plan_.program.AddSlot());
    }
  }

  void UpdateKernels(OpId op, OpId f) {
    const OpConfig& c = s_.configs[op];
    const at::Tensor& full = plan_.full_weights[f];
    for (int32_t p = 0; p < c.num_parts(); ++p) {
      Unit& u = UnitAt(op, p);
      auto r = std::make_unique<UpdateRange>();
      r->owner = f;
      r->lo = u.out_box.rank ? u.out_box.lo[0] : 0;
      r->len = u.out_box.rank ? u.out_box.hi[0] - r->lo : full.numel();
      r->len = std::min(r->len, full.numel() - r->lo);
      r->w = full.narrow(0, r->lo, r->len).clone().to(u.torch_device);
      r->m = at::zeros_like(r->w);
      r->v = at::zeros_like(r->w);
      u.kernel = MakePartUpdate(r.get());
      u.out_slots = {plan_.program.AddSlot()};
      port_box_[plan_.unit_of[op][p]] = {FullBox({r->len})};
      range_of_[plan_.unit_of[op][p]] = r.get();
      plan_.updates.push_back(std::move(r));
    }
  }

  // The unit of the copy of distinct part `part` of `op` that a reader on `device` reads (core's NearestCopy, as the
  // simulator reads a region).
  int32_t NearestUnit(OpId op, const PartLayout& layout, int32_t part, DeviceId device) const {
    return plan_.unit_of[op][NearestCopy(topology_, s_.configs[op], layout, part, device)];
  }

  void Collectives(OpId op);
  // ZeRO-3: whether every update part reading `op`'s weight gradient reads a range inside the chunk its source
  // replica holds after a reduce-scatter.
  bool UpdatesReadOwnChunks(OpId op);
  // ZeRO-3: the all-gathers of a forward op's weight pieces before its parts and its backward op's parts compute,
  // and the zero tasks freeing the gathered pieces after each.
  void GatherWeights(OpId op);
  void Inputs();
  void WeightGradient(int32_t unit, size_t input, int32_t edge, int pass);
  // Pass 1: widens the copy of `src`'s port to `device` to cover `box`.
  void Cover(int32_t src, int port, DeviceId device, const Box& box, at::ScalarType type);
  // The slot on `device` holding the box `box` of port `port` of unit `src`: the port's own slot on its device,
  // else the copy made for that device; with the task after which it is there.
  std::pair<int32_t, int32_t> Source(int32_t src, int port, DeviceId device, Box* slot_box);

  const Graph& g_;
  const Topology& topology_;
  const Strategy& s_;
  const std::vector<at::Device>& device_of_;
  Plan base_;
  const bool sync_replicas_;
  PartPlan& plan_;
  std::vector<std::vector<std::pair<std::shared_ptr<const OpImpl>, PartWeights*>>> part_impl_;
  std::vector<std::unique_ptr<Op>> part_ops_;
  std::map<int32_t, std::vector<Need>> needs_;      // by unit
  std::map<int32_t, std::vector<Box>> port_box_;    // by unit: each output port's region
  std::map<int32_t, UpdateRange*> range_of_;        // by update unit
  std::map<std::pair<OpId, DeviceId>, PartWeights*> whole_weights_;  // by owner and device: whole weights
  std::map<std::pair<OpId, int32_t>, int32_t> released_;  // ZeRO-3, by forward op and part: its last zero task
  std::vector<std::vector<int32_t>> ready_;          // by unit and port: the task after which the port is final
  std::map<std::tuple<int32_t, int, DeviceId>, Box> copy_box_;
  std::map<std::tuple<int32_t, int, DeviceId>, int64_t> copy_element_bytes_;
  std::map<std::tuple<int32_t, int, DeviceId>, std::pair<int32_t, int32_t>> copies_;  // -> slot, task
};

void Builder::Collectives(OpId op) {
  const Op& o = g_.op(op);
  const OpConfig& c = s_.configs[op];
  const int32_t parts = c.num_parts();
  if (parts < 2) return;
  const PartLayout layout = Layout(o, c);
  if (o.role == OpRole::kForward && layout.reduction > 1 && !o.shape.empty()) {
    // Partial sums: one ring reduce-scatter per group of parts computing the same box; member i keeps slice i
    // along the box's longest axis (OwnedBox).
    for (int32_t ring = 0; ring < parts / layout.reduction; ++ring) {
      std::vector<int32_t> members(static_cast<size_t>(layout.reduction), -1);
      for (int32_t p = 0; p < parts; ++p)
        if (ReductionRing(o, c, p) == ring) members[ReductionIndex(o, c, p)] = plan_.unit_of[op][p];
      const Box& box = plan_.units[members[0]].out_box;
      CollectiveGroup group;
      for (int32_t a = 1; a < box.rank; ++a)
        if (box.hi[a] - box.lo[a] > box.hi[group.axis] - box.lo[group.axis]) group.axis = a;
      group.extent = box.hi[group.axis] - box.lo[group.axis];
      group.bytes = Volume(box) * 4;
      group.label = o.name;
      std::vector<int32_t> ready;
      for (int32_t m : members) {
        group.devices.push_back(plan_.units[m].device);
        group.slots.push_back(plan_.units[m].out_slots[0]);
        ready.push_back(ready_[m][0]);
      }
      const std::vector<int32_t> done = AppendReduceScatter(&plan_.program, group, ready);
      for (size_t i = 0; i < members.size(); ++i) ready_[members[i]][0] = done[i];
    }
  }
  const Unit& first = UnitAt(op, 0);
  if (o.role != OpRole::kBackward || first.weight_port < 0 || layout.replicas < 2 || !sync_replicas_ ||
      !UpdateReads(g_, op))
    return;
  // Gradient synchronisation: a ring all-reduce of each weight shard's gradient among its replicas, in every copy
  // of the op (copies compute the same gradients).
  for (int32_t ring = 0; ring < layout.copies * layout.shards; ++ring) {
    const int32_t copy = ring / layout.shards, shard = ring % layout.shards;
    std::vector<int32_t> members(static_cast<size_t>(layout.replicas), -1);
    for (int32_t p = copy * layout.distinct; p < (copy + 1) * layout.distinct; ++p)
      if (ShardIndex(o, c, p) == shard) members[ReplicaIndex(o, c, p)] = plan_.unit_of[op][p];
    CollectiveGroup group;
    const Box& box = port_box_[members[0]][first.weight_port];
    group.extent = box.hi[0];
    group.bytes = group.extent * 4;
    group.label = o.name;
    std::vector<int32_t> ready;
    for (int32_t m : members) {
      group.devices.push_back(plan_.units[m].device);
      group.slots.push_back(plan_.units[m].out_slots[first.weight_port]);
      ready.push_back(ready_[m][first.weight_port]);
    }
    const bool scatter = c.shard_weights && layout.shards == 1 && layout.copies == 1 && UpdatesReadOwnChunks(op);
    plan_.scattered_gradient[op] = scatter;
    const std::vector<int32_t> done = scatter ? AppendReduceScatter(&plan_.program, group, ready)
                                              : AppendAllReduce(&plan_.program, group, ready);
    for (size_t i = 0; i < members.size(); ++i) ready_[members[i]][first.weight_port] = done[i];
  }
}

bool Builder::UpdatesReadOwnChunks(OpId op) {
  const Op& b = g_.op(op);
  const OpConfig& cb = s_.configs[op];
  const int32_t r = Layout(b, cb).replicas;
  bool any = false;
  for (const auto& [unit, range] : range_of_) {
    const Unit& u = plan_.units[unit];
    bool reads = false;
    for (int32_t e : g_.in_edges(u.op)) reads = reads || g_.edge(e).src == op;
    if (!reads) continue;
    const int32_t source = ShardSource(b, cb, 0, u.device);
    const int64_t n = plan_.units[plan_.unit_of[op][source]].weight_elements, i = ReplicaIndex(b, cb, source);
    if (range->lo < n * i / r || range->lo + range->len > n * (i + 1) / r) return false;
    any = true;
  }
  return any;
}

void Builder::GatherWeights(OpId op) {
  const Op& o = g_.op(op);
  const OpConfig& c = s_.configs[op];
  const PartLayout layout = Layout(o, c);
  if (o.role != OpRole::kForward || !c.shard_weights || layout.replicas < 2 || layout.shards != 1 ||
      !part_impl_[op][0].second || base_.owner[op] != op)
    return;
  const OpId grad = GradOf(op);
  for (OpId user : {op, grad}) {
    if (user < 0 || !(s_.configs[user] == c)) continue;
    for (int32_t copy = 0; copy < layout.copies; ++copy) {
      CollectiveGroup group;
      std::vector<int32_t> ready, parts;
      for (int32_t p = copy * layout.distinct; p < (copy + 1) * layout.distinct; ++p) parts.push_back(p);
      std::sort(parts.begin(), parts.end(), [&](int32_t a, int32_t b) {
        return ReplicaIndex(o, c, a) < ReplicaIndex(o, c, b);
      });
      for (int32_t p : parts) {
        const PartWeights& w = *part_impl_[op][p].second;
        const int32_t slot = plan_.program.AddSlot();
        plan_.program.bound.push_back({slot, c.devices[p], w.w});
        group.devices.push_back(c.devices[p]);
        group.slots.push_back(slot);
        ready.push_back(user == op ? -1 : released_[{op, p}]);  // the backward's gather after the forward's free
      }
      group.extent = part_impl_[op][parts[0]].second->w.numel();
      group.bytes = group.extent * 4;
      group.label = g_.op(user).name + " weights";
      const std::vector<int32_t> done = AppendAllGather(&plan_.program, group, ready);
      for (size_t i = 0; i < parts.size(); ++i) {
        const int32_t compute = plan_.task_of[user][parts[i]];
        plan_.program.Dep(done[i], compute);
        const PartWeights& w = *part_impl_[op][parts[i]].second;
        int32_t last = -1;  // free: zero what lies outside the kept piece, once every member has read from it
        for (const auto& [begin, length] : {std::pair<int64_t, int64_t>{0, w.piece_lo},
                                            {w.piece_lo + w.piece_len, group.extent - w.piece_lo - w.piece_len}}) {
          if (length == 0) continue;
          Task zero;
          zero.kind = TaskKind::kZero;
          zero.device = group.devices[i];
          zero.dst = group.slots[i];
          zero.begin = begin;
          zero.length = length;
          const int32_t id = plan_.program.Add(std::move(zero));
          plan_.program.Dep(compute, id);
          for (int32_t d : done) plan_.program.Dep(d, id);
          plan_.program.Dep(last, id);
          last = id;
        }
        released_[{op, parts[i]}] = last;
      }
    }
  }
}

std::pair<int32_t, int32_t> Builder::Source(int32_t src, int port, DeviceId device, Box* slot_box) {
  const Unit& s = plan_.units[src];
  if (s.device == device) {
    *slot_box = port_box_[src][port];
    return {s.out_slots[port], ready_[src][port]};
  }
  const auto key = std::make_tuple(src, port, device);
  *slot_box = copy_box_.at(key);
  auto it = copies_.find(key);
  if (it != copies_.end()) return it->second;
  Task t;
  t.kind = TaskKind::kCopy;
  t.device = device;
  t.src = s.out_slots[port];
  t.dst = plan_.program.AddSlot();
  t.lo = Offset(*slot_box, port_box_[src][port]);
  t.size = Extents(*slot_box);
  t.bytes = Volume(*slot_box) * copy_element_bytes_.at(key);
  const int32_t dst = t.dst;
  const int32_t id = plan_.program.Add(std::move(t));
  plan_.program.Dep(ready_[src][port], id);
  return copies_[key] = {dst, id};
}

// The pieces of every unit input: which producer part owns which box of it (pass 1 sizes each copy to the bounding
// box of what its destination device needs, pass 2 makes the copies and the pieces).
void Builder::Inputs() {
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t ui = 0; ui < plan_.units.size(); ++ui) {
      Unit& u = plan_.units[ui];
      const auto in = g_.in_edges(u.op);
      const std::vector<Need>& needs = needs_.at(static_cast<int32_t>(ui));
      const int32_t task = plan_.task_of[u.op][u.part];
      for (size_t i = 0; i < in.size(); ++i) {
        const Need& need = needs[i];
        if (need.zeros) continue;
        if (need.weight_grad) {
          WeightGradient(static_cast<int32_t>(ui), i, in[i], pass);
          continue;
        }
        const OpId src = g_.edge(in[i]).src;
        const PartLayout lu = Layout(g_.op(src), s_.configs[src]);
        for (int32_t p = 0; p < lu.distinct; ++p) {
          const int32_t pu = NearestUnit(src, lu, p, u.device);
          const Box& owned = g_.op(src).role == OpRole::kForward ? plan_.units[pu].owned : port_box_[pu][need.port];
          const Box overlap = Intersection(owned, need.region);
          if (Volume(overlap) == 0) continue;
          if (pass == 0) {
            if (plan_.units[pu].device != u.device) Cover(pu, need.port, u.device, overlap, u.inputs[i].type);
            continue;
          }
          Box slot_box;
          const auto [slot, ready] = Source(pu, need.port, u.device, &slot_box);
          u.inputs[i].pieces.push_back(
              Piece{slot, Offset(overlap, slot_box), Offset(overlap, need.region), Extents(overlap)});
          plan_.program.Dep(ready, task);
        }
      }
    }
  }
}

void Builder::Cover(int32_t src, int port, DeviceId device, const Box& box, at::ScalarType type) {
  const auto key = std::make_tuple(src, port, device);
  auto [it, added] = copy_box_.emplace(key, box);
  if (!added)
    for (int32_t a = 0; a < box.rank; ++a) {
      it->second.lo[a] = std::min(it->second.lo[a], box.lo[a]);
      it->second.hi[a] = std::max(it->second.hi[a], box.hi[a]);
    }
  copy_element_bytes_[key] = static_cast<int64_t>(at::elementSize(type));
}

// An update part's gradient: each weight shard read from one replica, the one on the part's own device when there
// is one, else the lowest (as the simulator reads it), scattered into the flat weights' order.
void Builder::WeightGradient(int32_t unit, size_t input, int32_t edge, int pass) {
  Unit& u = plan_.units[unit];
  const OpId src = g_.edge(edge).src;
  const Op& b = g_.op(src);
  const OpConfig& cb = s_.configs[src];
  const PartLayout layout = Layout(b, cb);
  Assembly& a = u.inputs[input];
  const auto found = range_of_.find(unit);
  const UpdateRange* range = found == range_of_.end() ? nullptr : found->second;
  for (int32_t shard = 0; shard < layout.shards; ++shard) {
    const int32_t pu = plan_.unit_of[src][ShardSource(b, cb, shard, u.device)];
    const Unit& s = plan_.units[pu];
    if (s.weight_port < 0 || !range) continue;
    if (s.grad_index.defined() && !((s.grad_index >= range->lo) & (s.grad_index < range->lo + range->len)).any().item<bool>())
      continue;  // the shard has no weight in this part's range
    if (pass == 0) {
      if (s.device != u.device) Cover(pu, s.weight_port, u.device, port_box_[pu][s.weight_port], at::kFloat);
      continue;
    }
    Box slot_box;
    const auto [slot, ready] = Source(pu, s.weight_port, u.device, &slot_box);
    a.scatter.emplace_back(slot, s.grad_index.defined() ? s.grad_index.to(u.torch_device) : at::Tensor());
    plan_.program.Dep(ready, plan_.task_of[u.op][u.part]);
  }
  if (pass == 1 && range) {
    a.full = plan_.full_weights[range->owner].numel();
    a.lo = range->lo;
    a.len = range->len;
    if (a.scatter.empty()) a.shape = {range->len};
  }
}

}  // namespace

bool UpdateReads(const Graph& graph, OpId op) {
  for (int32_t e : graph.out_edges(op))
    if (graph.op(graph.edge(e).dst).role == OpRole::kUpdate) return true;
  return false;
}

Expected<PartPlan> BuildPartPlan(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                 const std::vector<at::Device>& device_of, uint64_t seed, bool sync_replicas) {
  std::vector<at::Device> first;
  for (OpId op = 0; op < graph.num_ops(); ++op) first.push_back(device_of[strategy.configs[op].devices[0]]);
  Expected<Plan> base = BuildPlan(graph, first, seed);
  if (!base.ok()) return base.error();
  PartPlan plan;
  plan.full_weights.resize(static_cast<size_t>(graph.num_ops()));
  for (OpId op = 0; op < graph.num_ops(); ++op)
    if (base->params[op]) plan.full_weights[op] = base->params[op]->weights.to(at::kCPU).clone();
  Builder(graph, topology, strategy, device_of, std::move(*base), sync_replicas, &plan).Build();
  return plan;
}

}  // namespace devplace::exec
