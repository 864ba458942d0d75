#include "sim/plain_sim.h"

#include <algorithm>
#include <array>
#include <bit>
#include <unordered_map>

namespace devplace::sim {

namespace {
// How many ops ahead Plan starts loading an op's price.
constexpr int32_t kPrefetchOps = 16;
// Most distinct (latency, bandwidth) pairs of a machine's hops for which edge prices are kept.
constexpr size_t kMaxPriceClasses = 8;
// Most (edge size, device pair) kinds of transfer whose totals a run counts per kind rather than per transfer
// (fewer when the graph has fewer edges).
constexpr size_t kMaxTransferKinds = size_t{1} << 16;
// The horizon is summed exactly (at most 2^31 tasks of at most about 2^62 ticks each) and then capped at
// kHorizonCap, which is what the general build's saturating sum gives.
using HorizonSum = unsigned __int128;
inline Time CapHorizon(HorizonSum sum) {
  return sum >= static_cast<HorizonSum>(kHorizonCap) ? kHorizonCap : static_cast<Time>(sum);
}
template <class V>
int64_t Bytes(const V& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(typename V::value_type));
}
}  // namespace

PlainSim::PlainSim(const Graph& graph, const Topology& topology, const CostModel& cost, const SimOptions& options,
                   PlainCostCache* cache)
    : graph_(graph), topology_(topology), cost_(cost), options_(options), cache_(cache), carriers_(graph) {
  const int32_t n = graph.num_ops(), d = topology.num_devices();
  num_resources_ = d + topology.num_links();
  resource_delay_.assign(static_cast<size_t>(num_resources_), 0);
  for (LinkId l = 0; l < topology.num_links(); ++l) resource_delay_[d + l] = LatencyTicks(topology.link(l).latency);
  out_off_.assign(1, 0);
  // Tensors repeat their sizes: per edge the index of its bytes among the graph's distinct edge sizes.
  edge_out_.resize(static_cast<size_t>(graph.num_edges()));
  {
    std::unordered_map<int64_t, int32_t> index;
    for (int32_t e = 0; e < graph.num_edges(); ++e) {
      const int64_t bytes = graph.edge(e).bytes;
      const auto [it, added] = index.emplace(bytes, static_cast<int32_t>(size_bytes_.size()));
      if (added) {
        size_bytes_.push_back(bytes);
        size_segments_.push_back(bytes > 0 ? static_cast<int32_t>(SegmentCount(bytes, 2, options)) : 1);
      }
      edge_out_[e].size = it->second;
      edge_out_[e].src = graph.edge(e).src;
      edge_out_[e].dst = graph.edge(e).dst;
    }
  }
  for (OpId o = 0; o < n; ++o) {
    for (int32_t e : graph.out_edges(o)) {
      edge_out_[e].out = static_cast<int32_t>(out_op_.size());
      out_op_.push_back(graph.edge(e).dst);
    }
    out_off_.push_back(static_cast<int32_t>(out_op_.size()));
    output_bytes_.push_back(OutputBytes(graph.op(o)));
    output_ops_ += output_bytes_.back() > 0;
  }
  route_off_.assign(1, 0);
  // Hop prices depend on the bytes and the hop's (latency, bandwidth): with few distinct pairs (classes), the
  // single-segment price of every edge size over each class is computed here once.
  std::vector<std::pair<double, double>> classes;
  for (DeviceId a = 0; a < d; ++a)
    for (DeviceId b = 0; b < d; ++b) {
      if (a != b) {
        const std::span<const LinkId> links = topology.route(a, b);
        for (size_t h = 0; h < links.size(); ++h) {
          const LinkId l = links[h];
          const HopCost hop = HopOf(topology, l, b, 0.0);
          const std::pair<double, double> c{hop.seconds, topology.link(l).bandwidth};
          const size_t price_class = std::find(classes.begin(), classes.end(), c) - classes.begin();
          if (price_class == classes.size()) classes.push_back(c);
          const int what = (h == 0 ? kFirstHop : 0) | (h + 1 == links.size() ? kLastHop | kBuffer : 0);
          route_hop_.push_back({static_cast<int16_t>(hop.resource), static_cast<uint8_t>(what),
                                static_cast<uint8_t>(std::min<size_t>(1 + price_class, UINT8_MAX))});
          route_bandwidth_.push_back(c.second);
          route_latency_.push_back(c.first);
        }
      }
      route_off_.push_back(static_cast<int32_t>(route_hop_.size()));
    }
  // A row per edge size: its bytes, then the ticks of the whole tensor per class, of a shorter segment per class
  // and of a longer one per class; where the rows' offsets fit an int32 (they always do short of 2^31 / 25 sizes).
  const int64_t row_width = 1 + 3 * static_cast<int64_t>(classes.size());
  if (classes.size() <= kMaxPriceClasses && static_cast<int64_t>(size_bytes_.size()) * row_width <= INT32_MAX) {
    num_classes_ = static_cast<int32_t>(classes.size());
    row_width_ = static_cast<int32_t>(row_width);
    price_rows_.resize(size_bytes_.size() * static_cast<size_t>(row_width));
    for (size_t z = 0; z < size_bytes_.size(); ++z) {
      Time* row = price_rows_.data() + z * static_cast<size_t>(row_width);
      row[0] = size_bytes_[z];
      for (int32_t c = 0; c < num_classes_; ++c) {
        const auto [latency, bandwidth] = classes[c];
        const std::array<Time, 3> ticks = HopTicks(size_bytes_[z], size_segments_[z], latency, bandwidth);
        for (int kind = 0; kind < 3; ++kind) row[1 + kind * num_classes_ + c] = ticks[kind];
      }
    }
  } else {
    // Each transfer's bytes and prices listed as it is planned: a hop's column is 1 + its place in its route.
    per_transfer_rows_ = true;
    for (size_t p = 0; p + 1 < route_off_.size(); ++p) {
      const int32_t hops = route_off_[p + 1] - route_off_[p];
      longest_route_ = std::max(longest_route_, hops);
      for (int32_t h = 0; h < hops; ++h)
        route_hop_[route_off_[p] + h].price_class = static_cast<uint8_t>(std::min(1 + h, int32_t{UINT8_MAX}));
    }
  }
  // Transfers of one size between one pair of devices add the same totals: counted per such kind and added once
  // per run, where the machine and the graph's distinct sizes make few kinds (no more than the graph has edges,
  // so that the run's pass over the kinds costs less than its pass over the edges).
  const size_t kinds = size_bytes_.size() * d * d;
  if (kinds <= std::min(kMaxTransferKinds, static_cast<size_t>(graph.num_edges()))) kind_count_.assign(kinds, 0);
}

int32_t PlainSim::Plan(std::span<const DeviceId> device) {
  const int32_t n = graph_.num_ops();
  totals_.Reset(num_resources_);
  op_ticks_.resize(static_cast<size_t>(n));
  pending_.assign(static_cast<size_t>(n), 0);  // PlanTransfers counts the inputs
  Time* busy = totals_.busy.data();
  int32_t* count = totals_.count.data();
  int64_t* held = totals_.held.data();
  HorizonSum horizon = 0;
  for (OpId o = 0; o < n; ++o) {
    const DeviceId d = device[o];
    if (o + kPrefetchOps < n) cache_->Prefetch(o + kPrefetchOps, device[o + kPrefetchOps]);
    const PlainCostCache::Entry& c = cache_->Get(graph_, topology_, cost_, o, d);
    op_ticks_[o] = c.ticks;
    busy[d] += c.ticks;
    ++count[d];
    held[d] += output_bytes_[o];
    horizon += static_cast<HorizonSum>(c.ticks);
    totals_.fallbacks += c.fallback;
  }
  const int32_t tasks = PlanTransfers(device, &horizon);
  if (tasks < 0) return tasks;
  totals_.horizon = CapHorizon(horizon);
  totals_.num_tasks = tasks;
  totals_.num_compute = n;
  return tasks;
}

int32_t PlainSim::PlanTransfers(std::span<const DeviceId> device, unsigned __int128* horizon) {
  const int32_t n = graph_.num_ops(), num_edges = graph_.num_edges(), devices = topology_.num_devices();
  const int32_t pairs = devices * devices;
  ids_exhausted_ = false;
  members_.clear();
  carriers_.Assign(device, devices);
  out_.resize(static_cast<size_t>(num_edges));
  // At most one transfer per edge: written in place, counted here.
  if (xfers_.size() < static_cast<size_t>(num_edges)) xfers_.resize(static_cast<size_t>(num_edges));
  int32_t num_xfers = 0;
  num_hops_ = 0;
  int32_t* kinds = kind_count_.empty() ? nullptr : kind_count_.data();  // null: totals added per transfer
  const bool per_transfer_rows = per_transfer_rows_;
  if (per_transfer_rows) price_rows_.clear();
  const int32_t row_width = row_width_;
  // The arrays read through locals: a push onto members_ (or the hop tasks' growth) may allocate, after which GCC
  // reloads every member vector's data pointer.
  const int32_t* crossing_carrier = carriers_.crossing_carriers().data();
  Xfer* xfers = xfers_.data();
  const EdgeSlot* edge_out = edge_out_.data();
  OutEntry* out = out_.data();
  int32_t* pending = pending_.data();
  const int32_t* route_off = route_off_.data();
  const int32_t* size_segments = size_segments_.data();
  const RouteHop* route_hop = route_hop_.data();
  HorizonSum sum = 0;  // of the hop tasks' times and latencies
  int64_t next = n;
  for (int32_t e = 0; e < num_edges; ++e) {
    const EdgeSlot& edge = edge_out[e];
    const int32_t carrier = device[edge.src] != device[edge.dst] ? crossing_carrier[e] : -1;
    if (carrier < 0) {  // joins the ops directly
      out[edge.out].target = edge.dst;
      ++pending[edge.dst];
      continue;
    }
    if (carrier != e) {  // rides on the carrier's transfer (made before: carrier < e), waiting for its segments
      out[edge.out].target = -1;
      Xfer& f = xfers[out[edge_out[carrier].out].xfer];
      members_.push_back({edge.dst, f.more});
      f.more = static_cast<int32_t>(members_.size()) - 1;
      pending[edge.dst] += f.segments;
      continue;
    }
    const int32_t pair = device[edge.src] * devices + device[edge.dst];
    const int32_t route = route_off[pair];
    const int32_t hops = route_off[pair + 1] - route;
    const int32_t size = edge.size;
    const int64_t segments = hops < 2 ? 1 : size_segments[size];  // SegmentCount(edge.bytes, hops, options_)
    const int32_t x = num_xfers++;
    out[edge.out] = {static_cast<int32_t>(-2 - next), x};
    const int32_t prices = per_transfer_rows ? AddTransferRow(size, route, hops, segments > 1) : size * row_width;
    xfers[x] = {static_cast<int32_t>(next), edge.src, edge.dst, -1, prices, static_cast<int16_t>(hops),
                static_cast<int16_t>(segments), 0};
    if (segments == 1) {  // the common case: one task per hop, carrying every byte
      HopTask* task = HopSpace(hops);
      for (int32_t h = 0; h < hops; ++h) {
        const RouteHop hop = route_hop[route + h];
        task[h] = {x, hop.resource, hop.what, hop.price_class};
      }
    } else {
      PlanSegments(size_bytes_[size], x, route, hops, segments);
    }
    if (kinds != nullptr) {
      ++kinds[size * pairs + pair];
    } else {
      sum += AddTransferTotals(pair, size, 1);
    }
    pending[edge.dst] += static_cast<int32_t>(segments);
    next += hops * segments;
  }
  // The totals of the transfers of each kind at once (task times and bytes summed exactly: the same sums).
  for (size_t k = 0; k < kind_count_.size(); ++k) {
    if (kinds[k] == 0) continue;
    sum += AddTransferTotals(static_cast<int32_t>(k % pairs), static_cast<int32_t>(k / pairs), kinds[k]);
    kinds[k] = 0;
  }
  *horizon += sum;
  num_xfers_ = num_xfers;
  return ids_exhausted_ ? -1 : static_cast<int32_t>(next);
}

unsigned __int128 PlainSim::AddTransferTotals(int32_t pair, int32_t size, int32_t transfers) {
  const int32_t route = route_off_[pair], hops = route_off_[pair + 1] - route;
  const int64_t bytes = size_bytes_[size], segments = hops < 2 ? 1 : size_segments_[size];
  const int64_t longs = bytes % segments;  // segments one byte longer than the others (HopTicks)
  HorizonSum horizon = 0;
  for (int32_t h = 0; h < hops; ++h) {
    const int32_t r = route_hop_[route + h].resource;
    const std::array<Time, 3> ticks = RouteHopTicks(size, route + h);
    const Time short_ticks = segments == 1 ? ticks[0] : ticks[1], long_ticks = ticks[2];
    const Time busy = (segments - longs) * short_ticks + longs * long_ticks;
    totals_.busy[r] += transfers * busy;
    totals_.bytes[r] += transfers * bytes;
    totals_.count[r] += transfers * static_cast<int32_t>(segments);
    horizon += static_cast<HorizonSum>(transfers) *
               (static_cast<HorizonSum>(segments - longs) * static_cast<HorizonSum>(short_ticks + resource_delay_[r]) +
                static_cast<HorizonSum>(longs) * static_cast<HorizonSum>(long_ticks + resource_delay_[r]));
  }
  totals_.bytes_moved += transfers * bytes;
  totals_.held[pair % topology_.num_devices()] += transfers * bytes;
  return horizon;
}

void PlainSim::GrowHops(int64_t count) {
  // Task ids are int32: hop_tasks_ never holds more than the ids left after the ops. A plan that needs more
  // writes its next hop tasks from the start again (its result is discarded).
  const int64_t most = INT32_MAX - int64_t{graph_.num_ops()}, needed = num_hops_ + count;
  if (needed > most) {
    ids_exhausted_ = true;
    num_hops_ = 0;
    if (count > static_cast<int64_t>(hop_tasks_.size())) hop_tasks_.resize(static_cast<size_t>(count));
    return;
  }
  hop_tasks_.resize(static_cast<size_t>(std::min(std::max<int64_t>(2 * hop_tasks_.size(), needed), most)));
}

std::array<Time, 3> PlainSim::HopTicks(int64_t bytes, int64_t segments, double latency, double bandwidth) {
  // Segment s carries floor((s + 1) bytes / segments) - floor(s bytes / segments) bytes: `shorter` or one more.
  const int64_t shorter = bytes / segments, longs = bytes % segments;
  const Time short_ticks = ToTicks(latency + static_cast<double>(shorter) / bandwidth);
  const Time long_ticks = longs > 0 ? ToTicks(latency + static_cast<double>(shorter + 1) / bandwidth) : short_ticks;
  return {ToTicks(latency + static_cast<double>(bytes) / bandwidth), short_ticks, long_ticks};
}

std::array<Time, 3> PlainSim::RouteHopTicks(int32_t size, int32_t route_entry) const {
  if (!per_transfer_rows_) {
    const Time* row = price_rows_.data() + static_cast<size_t>(size) * row_width_;
    const int32_t c = route_hop_[route_entry].price_class;
    return {row[c], row[num_classes_ + c], row[2 * num_classes_ + c]};
  }
  return HopTicks(size_bytes_[size], size_segments_[size], route_latency_[route_entry], route_bandwidth_[route_entry]);
}

int32_t PlainSim::AddTransferRow(int32_t size, int32_t route, int32_t hops, bool segmented) {
  if (static_cast<int64_t>(price_rows_.size()) + 1 + 2 * hops > INT32_MAX) {  // as GrowHops: listed afresh
    ids_exhausted_ = true;
    price_rows_.clear();
  }
  const int64_t row = static_cast<int64_t>(price_rows_.size());
  price_rows_.push_back(size_bytes_[size]);
  for (int32_t h = 0; h < hops; ++h) {
    const std::array<Time, 3> ticks = RouteHopTicks(size, route + h);
    if (segmented) {
      price_rows_.push_back(ticks[1]);
      price_rows_.push_back(ticks[2]);
    } else {
      price_rows_.push_back(ticks[0]);
    }
  }
  return static_cast<int32_t>(row);
}

void PlainSim::PlanSegments(int64_t bytes, int32_t x, int32_t route, int32_t hops, int64_t segments) {
  const int64_t longs = bytes % segments;
  HopTask* task = HopSpace(hops * segments);
  for (int64_t s = 0, acc = 0; s < segments; ++s) {
    acc += longs;  // the share grows by one byte more when (s + 1) * longs passes a multiple of segments
    const bool is_long = acc >= segments;
    acc -= is_long ? segments : 0;
    for (int32_t h = 0; h < hops; ++h) {
      const uint8_t what = (h == 0 ? kFirstHop : 0) | (h + 1 == hops ? kLastHop : 0) |
                           (s == 0 && h + 1 == hops ? kBuffer : 0) | (s == 0 && h == 0 ? kSegmented : 0);
      const RouteHop hop = route_hop_[route + h];
      const int32_t slot = per_transfer_rows_ ? 1 + 2 * h + is_long : (1 + is_long) * num_classes_ + hop.price_class;
      *task++ = {x, hop.resource, what, static_cast<uint8_t>(slot)};
    }
  }
}

template <bool kFull, class Keys>
bool PlainSim::Loop(std::span<const DeviceId> device, QuadHeap<typename Keys::Item>& heap, Keys keys) {
  const int32_t n = graph_.num_ops();
  ReadyQueue<Keys> queue(heap, keys);
  free_.assign(static_cast<size_t>(num_resources_), 0);
  last_.assign(static_cast<size_t>(num_resources_), -1);
  Waiting* wait = waiting_.data();
  for (OpId o = 0; o < n; ++o) {
    wait[o] = {0, -1, pending_[o]};
    if (pending_[o] == 0) queue.PushInitial(0, o);
  }
  const DeviceId* dev = device.data();
  const Time* ticks = op_ticks_.data();
  const Time* delay = resource_delay_.data();
  const int32_t* out_off = out_off_.data();
  const OutEntry* out = out_.data();
  const int32_t* out_op = out_op_.data();
  HopTask* hop_tasks = hop_tasks_.data();
  const Member* members = members_.data();
  Xfer* xfers = xfers_.data();
  Time* free = free_.data();
  int32_t* last = last_.data();
  Time* op_sent = op_sent_.data();
  const Time* price_rows = price_rows_.data();
  // Runs task `t` on resource `r` from `ready` for `duration` (its input `bind` unless it waited for `r`);
  // sets `crit` to the last op before it on a critical path (-1: none) and returns its end. The task before it
  // there, when a hop, has run and holds that op already: the walk back (CriticalPath) then visits ops only,
  // one dependent load each, instead of every hop between them.
  auto run = [&](int32_t t, int32_t r, Time ready, Time duration, int32_t bind, int32_t* crit) {
    const Time start = std::max(ready, free[r]);
    if constexpr (kFull) {
      const int32_t before = free[r] > ready ? last[r] : bind;
      *crit = before >= n ? hop_tasks[before - n].crit : before;
    }
    free[r] = start + duration;
    last[r] = t;
    return start + duration;
  };
  // Task `from`'s output arrives at op `v` at `arrive`; `floor` is the ready time of the task being run.
  auto deliver = [&](OpId v, Time arrive, int32_t from, Time floor) {
    Waiting& x = wait[v];
    const bool later = arrive > x.ready;
    const bool tie_first = arrive == x.ready && from < x.bind;
    x.ready = later ? arrive : x.ready;
    x.bind = later || tie_first ? from : x.bind;
    return --x.pending != 0 || queue.Push(floor, x.ready, v);
  };
  // Transfer `f`'s last hop `task` delivers at `arrive` to its consumers.
  auto deliver_all = [&](const Xfer& f, int32_t task, Time arrive, Time floor) {
    if (!deliver(f.dst, arrive, task, floor)) return false;
    for (int32_t m = f.more; m >= 0; m = members[m].next)
      if (!deliver(members[m].dst, arrive, task, floor)) return false;
    return true;
  };
  while (!queue.empty()) {
    const typename Keys::Item item = queue.Pop();
    const int32_t t = keys.Task(item);
    if (const int32_t u = queue.PeekHeap(); u >= 0) {
      if (u < n) {
        __builtin_prefetch(&wait[u]);
        __builtin_prefetch(&ticks[u]);
        __builtin_prefetch(&out_off[u]);
      } else {
        __builtin_prefetch(&hop_tasks[u - n]);
      }
    }
    if (t < n) {  // a compute task
      const DeviceId d = dev[t];
      const Time ready = wait[t].ready;
      const Time end = run(t, d, ready, ticks[t], wait[t].bind, &wait[t].bind);  // bind is not needed after
      if constexpr (kFull) wait[t].ready = op_sent[t] = end;
      const Time arrive = end + delay[d];
      // The consumers' records (of direct edges and of transfers) first start loading together.
      for (int32_t k = out_off[t]; k < out_off[t + 1]; ++k) __builtin_prefetch(&wait[out_op[k]]);
      for (int32_t k = out_off[t]; k < out_off[t + 1]; ++k) {
        const int32_t target = out[k].target;
        if (target >= 0) {
          if (!deliver(target, arrive, t, ready)) return false;
        } else if (target < -1) {
          // Its first hop leaves the heap later: load what it will read meanwhile (the consumer's record, which
          // its last hop updates, started loading above).
          __builtin_prefetch(&hop_tasks[-2 - target - n]);
          __builtin_prefetch(&xfers[out[k].xfer]);
          if (!queue.Push(ready, arrive, -2 - target)) return false;
        }
      }
      continue;
    }
    HopTask* hop = &hop_tasks[t - n];
    Time ready = keys.Ready(item);
    int32_t task = t;
    Xfer& f = xfers[hop->xfer];  // with kFull, `run` overwrites a hop's xfer with its crit
    if (hop->what & kSegmented) {
      // The first hops of every segment are ready together with consecutive keys, so they leave the heap one
      // after another; timed here together.
      for (int32_t s = 0; s < f.segments; ++s) {
        const int32_t u = t + s * f.hops;
        HopTask& k = hop_tasks[u - n];
        const Time price = price_rows[f.prices + k.slot];
        const Time e = run(u, k.resource, ready, price, f.src, &k.crit);
        if (kFull && (k.what & kBuffer)) f.buffer_start = e - price;
        const Time arrive = e + delay[k.resource];
        if (!(k.what & kLastHop) ? !queue.Push(ready, arrive, u + 1) : !deliver_all(f, u, arrive, ready))
          return false;
      }
      if constexpr (kFull) {  // the producer's record, written when it ran (its end starts these hops)
        Time& sent = op_sent[f.src];
        sent = std::max(sent, free[hop->resource]);
      }
      continue;
    }
    // Whether the hop is a first hop (then its input is the producer, whose send time it raises) or not is hard to
    // predict: selected without a branch; a later hop raises op_sent's spare entry n instead.
    const int32_t first = -static_cast<int32_t>(hop->what & kFirstHop);  // all ones or zero (a mask)
    const Time* price = price_rows + f.prices;  // the hops' prices by their slots
    Time end = run(t, hop->resource, ready, price[hop->slot], t - 1 + ((f.src - t + 1) & first), &hop->crit);
    if constexpr (kFull) {  // the larger of the two without a branch (which end is later is hard to predict)
      Time& sent = op_sent[n + ((f.src - n) & first)];
      sent += (end - sent) & -static_cast<Time>(end > sent);
    }
    // Along the segment's hops: each next hop that would leave the queue next runs at once.
    for (;;) {
      const Time arrive = end + delay[hop->resource];
      if (hop->what & kLastHop) {
        if constexpr (kFull) {  // segment 0's last hop holds the buffer: its start kept without a branch
          const Time start = end - price[hop->slot];
          f.buffer_start += (start - f.buffer_start) & -static_cast<Time>((hop->what & kBuffer) != 0);
        }
        if (!deliver_all(f, task, arrive, ready)) return false;
        break;
      }
      if (!queue.RunsNext(arrive, task + 1)) {
        if (!queue.Push(ready, arrive, task + 1)) return false;
        break;
      }
      ++task;
      ++hop;
      ready = arrive;
      end = run(task, hop->resource, ready, price[hop->slot], task - 1, &hop->crit);
    }
  }
  return true;
}

template <bool kFull>
Expected<Time> PlainSim::Simulate(std::span<const DeviceId> device) {
  num_tasks_ = Plan(device);
  if (num_tasks_ < 0)
    return Error{"the step has more than 2^31 - 1 tasks (ops and transfer hops), more than the simulator can index"};
  if (Status s = CheckHorizon(totals_); !s) return s.error();
  waiting_.resize(static_cast<size_t>(graph_.num_ops()));
  if constexpr (kFull) {
    op_sent_.resize(static_cast<size_t>(graph_.num_ops()) + 1);  // + a spare entry for the loop's later hops
  }
  rebases_ = 0;
  const int bits = std::max(1, static_cast<int>(std::bit_width(static_cast<uint32_t>(num_tasks_))));
  if (!Loop<kFull>(device, packed_, PackedKeys{bits, uint64_t{1} << (64 - bits), &rebases_})) {
    if constexpr (kFull) Plan(device);  // the hop tasks' transfers were overwritten with critical-path links
    Loop<kFull>(device, wide_heap_, WideKeys{});
  }
  Time step = 0;
  for (int32_t r = 0; r < num_resources_; ++r)
    if (last_[r] >= 0) step = std::max(step, free_[r] + resource_delay_[r]);
  return step;
}

Expected<Time> PlainSim::StepTicks(std::span<const DeviceId> device) { return Simulate<false>(device); }

Expected<Time> PlainSim::StepTicksAndPeaks(std::span<const DeviceId> device, std::vector<int64_t>* dynamic_peak) {
  const Expected<Time> step = Simulate<true>(device);
  if (!step) return step.error();
  const std::vector<int64_t>& peaks = DynamicPeaks(device);
  dynamic_peak->assign(peaks.begin(), peaks.end());
  return *step;
}

const std::vector<int64_t>& PlainSim::DynamicPeaks(std::span<const DeviceId> device) {
  Time max_end = 0;
  for (int32_t r = 0; r < num_resources_; ++r)
    if (last_[r] >= 0) max_end = std::max(max_end, free_[r]);
  peaks_.Begin(topology_.num_devices(), output_ops_ + num_xfers_, max_end, false);
  // An op's output lives from its start until it and every reader on its device and every first hop of the
  // transfers carrying it have ended; a transfer's receive buffer from the start of its first segment's last hop
  // until that hop and every consumer it feeds have ended (BufferFree in the general path). Each free time is
  // kept in place of the op's send time and of the receive hop's end for the second pass.
  const int32_t n = graph_.num_ops();
  const Waiting* end = waiting_.data();  // each op's `ready` is its end now
  for (OpId o = 0; o < n; ++o) {
    if (output_bytes_[o] == 0) continue;
    Time free = op_sent_[o];
    for (int32_t k = out_off_[o]; k < out_off_[o + 1]; ++k)
      if (const int32_t target = out_[k].target; target >= 0) free = std::max(free, end[target].ready);
    op_sent_[o] = free;
    peaks_.Count(device[o], end[o].ready - op_ticks_[o], free, output_bytes_[o]);
  }
  // The buffer's task delivers to f.dst (every segment does), so f.dst ends after it: the buffer's free time is the
  // latest end of its consumers.
  buffer_free_.resize(static_cast<size_t>(num_xfers_));
  const Time* price_rows = price_rows_.data();  // a transfer's prices follow its bytes
  for (int32_t x = 0; x < num_xfers_; ++x) {
    const Xfer& f = xfers_[x];
    Time free = end[f.dst].ready;
    for (int32_t m = f.more; m >= 0; m = members_[m].next) free = std::max(free, end[members_[m].dst].ready);
    buffer_free_[x] = free;
    peaks_.Count(device[f.dst], f.buffer_start, free, price_rows[f.prices]);
  }
  peaks_.Bound();
  // The second walk reads through locals: Keep's rare push may allocate, after which GCC would reload every member
  // vector's data pointer.
  const int64_t* output_bytes = output_bytes_.data();
  const Time *op_ticks = op_ticks_.data(), *op_free = op_sent_.data(), *buffer_free = buffer_free_.data();
  const Xfer* xfers = xfers_.data();
  for (OpId o = 0; o < n; ++o)
    if (output_bytes[o] != 0) peaks_.Keep(device[o], end[o].ready - op_ticks[o], op_free[o], output_bytes[o]);
  for (int32_t x = 0, count = num_xfers_; x < count; ++x)
    peaks_.Keep(device[xfers[x].dst], xfers[x].buffer_start, buffer_free[x], price_rows[xfers[x].prices]);
  return peaks_.Finish();
}

void PlainSim::CriticalPath(SimResult* result) const {
  // From the last task to finish (the smallest id on ties), back through the ops' critical-path links (Engine::Run's
  // crit_prev with the hops skipped: the loop links each task to the last op before it).
  int32_t t = -1;
  Time best = -1;
  for (int32_t r = 0; r < num_resources_; ++r) {
    const int32_t x = last_[r];
    if (x < 0) continue;
    const Time finish = free_[r] + resource_delay_[r];
    if (finish > best || (finish == best && x < t)) {
      best = finish;
      t = x;
    }
  }
  std::vector<OpId> ops;
  Time compute = 0;
  const int32_t n = graph_.num_ops();
  if (t >= n) t = hop_tasks_[t - n].crit;
  for (; t >= 0;) {
    ops.push_back(t);
    compute += op_ticks_[t];
    t = waiting_[t].bind;
  }
  std::reverse(ops.begin(), ops.end());
  result->critical_path = std::move(ops);
  result->critical_compute_seconds = static_cast<double>(compute) * kSecondsPerTick;
}

Expected<SimResult> PlainSim::Run(std::span<const DeviceId> device, const std::vector<int64_t>& static_bytes) {
  const Expected<Time> step = Simulate<true>(device);
  if (!step) return step.error();
  SimResult result = AssembleTotals(topology_, *step, totals_, static_bytes, DynamicPeaks(device));
  CriticalPath(&result);
  return result;
}

int64_t PlainSim::memory_bytes() const {
  int64_t total = 0;
  for (const auto* v : {&out_off_, &out_op_, &route_off_, &size_segments_, &pending_, &kind_count_, &last_})
    total += Bytes(*v);
  for (const auto* v : {&output_bytes_, &size_bytes_, &op_ticks_, &free_, &resource_delay_,
                        &op_sent_, &buffer_free_, &price_rows_})
    total += Bytes(*v);
  total += Bytes(route_bandwidth_) + Bytes(route_latency_) + Bytes(route_hop_) + carriers_.memory_bytes() +
           Bytes(members_) + Bytes(edge_out_) + Bytes(out_) + Bytes(xfers_) + Bytes(hop_tasks_) +
           Bytes(waiting_) +
           static_cast<int64_t>(packed_.capacity() * sizeof(uint64_t) + wide_heap_.capacity() * sizeof(WideItem)) +
           peaks_.memory_bytes();
  return total;
}

}  // namespace devplace::sim
