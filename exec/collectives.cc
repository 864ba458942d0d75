#include "exec/collectives.h"

#include <algorithm>

#include "core/check.h"

namespace devplace::exec {

namespace {

int64_t Cut(int64_t extent, int64_t c, int64_t n) { return extent * c / n; }

// The receive of chunk `src_chunk` of member `from`'s slot into chunk `dst_chunk` of `to_slot` on member `to`.
int32_t Receive(TaskProgram* program, const CollectiveGroup& g, int32_t collective, int32_t from, int32_t to,
                int32_t to_slot, int64_t src_chunk, int64_t dst_chunk, int64_t parts, bool add) {
  Task t;
  t.kind = TaskKind::kReceive;
  t.device = g.devices[to];
  t.src = g.slots[from];
  t.dst = to_slot;
  t.axis = g.axis;
  t.src_begin = Cut(g.extent, src_chunk, parts);
  t.begin = Cut(g.extent, dst_chunk, parts);
  t.length = Cut(g.extent, src_chunk + 1, parts) - t.src_begin;
  DEVPLACE_CHECK(t.length == Cut(g.extent, dst_chunk + 1, parts) - t.begin, "chunks of equal extent");
  t.bytes = g.extent > 0 ? g.bytes * t.length / g.extent : 0;
  t.add = add;
  t.collective = collective;
  return program->Add(std::move(t));
}

int32_t Register(TaskProgram* program, const CollectiveGroup& g, const std::string& kind) {
  program->collectives.push_back(CollectiveInfo{kind, g.label, g.devices, g.bytes});
  return static_cast<int32_t>(program->collectives.size()) - 1;
}

int64_t Mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

// `steps` ring steps from step `first` of the all-reduce schedule (steps < n - 1 reduce, later ones gather).
std::vector<int32_t> Ring(TaskProgram* program, const CollectiveGroup& g, int32_t collective, int32_t first,
                          int32_t steps, const std::vector<int32_t>& ready) {
  const int32_t n = static_cast<int32_t>(g.devices.size());
  DEVPLACE_CHECK(static_cast<int32_t>(g.slots.size()) == n && static_cast<int32_t>(ready.size()) == n,
                 "one slot and one ready task per member");
  std::vector<int32_t> last = ready;  // per receiving member: its latest task
  for (int32_t k = first; k < first + steps; ++k) {
    std::vector<int32_t> next(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
      const int32_t to = (i + 1) % n;
      const bool reduce = k < n - 1;
      const int64_t chunk = reduce ? Mod(i - k - 1, n) : Mod(i - (k - (n - 1)), n);
      const int32_t t = Receive(program, g, collective, i, to, g.slots[to], chunk, chunk, n, reduce);
      program->Dep(last[to], t);                // the receiver's previous step (or its input)
      program->Dep(last[i], t);                 // the chunk the sender has by now (or its input)
      if (k > first) program->Dep(last[(to + 1) % n], t);  // its successor has read its previous chunk
      next[to] = t;
    }
    last = std::move(next);
  }
  return last;
}

}  // namespace

std::vector<int32_t> AppendAllReduce(TaskProgram* program, const CollectiveGroup& group,
                                     const std::vector<int32_t>& ready) {
  const int32_t n = static_cast<int32_t>(group.devices.size());
  if (n < 2) return ready;
  const int32_t c = Register(program, group, "all-reduce");
  return Ring(program, group, c, 0, 2 * (n - 1), ready);
}

std::vector<int32_t> AppendReduceScatter(TaskProgram* program, const CollectiveGroup& group,
                                         const std::vector<int32_t>& ready) {
  const int32_t n = static_cast<int32_t>(group.devices.size());
  if (n < 2) return ready;
  const int32_t c = Register(program, group, "reduce-scatter");
  return Ring(program, group, c, 0, n - 1, ready);
}

std::vector<int32_t> AppendAllGather(TaskProgram* program, const CollectiveGroup& group,
                                     const std::vector<int32_t>& ready) {
  const int32_t n = static_cast<int32_t>(group.devices.size());
  if (n < 2) return ready;
  const int32_t c = Register(program, group, "all-gather");
  return Ring(program, group, c, n - 1, n - 1, ready);
}

std::vector<int32_t> AppendAllToAll(TaskProgram* program, const CollectiveGroup& group,
                                    const std::vector<int32_t>& out_slots, const std::vector<int32_t>& ready) {
  const int32_t n = static_cast<int32_t>(group.devices.size());
  DEVPLACE_CHECK(group.extent % n == 0, "an all-to-all needs equal chunks");
  const int32_t c = Register(program, group, "all-to-all");
  std::vector<int32_t> own(static_cast<size_t>(n)), last(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {  // a member's own chunk stays: a local copy that also allocates its output
    own[i] = Receive(program, group, c, i, i, out_slots[i], i, i, n, false);
    program->tasks[own[i]].alloc = true;
    program->tasks[own[i]].bytes = 0;
    program->Dep(ready[i], own[i]);
    last[i] = own[i];
  }
  for (int32_t k = 1; k < n; ++k)
    for (int32_t i = 0; i < n; ++i) {
      const int32_t to = (i + k) % n;
      const int32_t t = Receive(program, group, c, i, to, out_slots[to], to, i, n, false);
      program->Dep(ready[i], t);
      program->Dep(last[to], t);  // a member receives round by round (after its output is allocated)
      last[to] = t;
    }
  return last;
}

std::vector<int32_t> AppendBroadcast(TaskProgram* program, const CollectiveGroup& group, int32_t chunks,
                                     const std::vector<int32_t>& ready) {
  DEVPLACE_CHECK(chunks >= 1, "a broadcast needs at least one chunk");
  const int32_t n = static_cast<int32_t>(group.devices.size());
  const int32_t c = Register(program, group, "broadcast");
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(chunks, group.extent));
  std::vector<int32_t> held = ready;  // per member: the task after which it holds the latest chunk
  for (int64_t k = 0; k < parts; ++k) {
    std::vector<int32_t> now = held;
    for (int32_t j = 1; j < n; ++j) {
      const int32_t t = Receive(program, group, c, j - 1, j, group.slots[j], k, k, parts, false);
      program->tasks[t].alloc = k == 0;
      program->Dep(j - 1 == 0 ? ready[0] : now[j - 1], t);  // the sender has chunk k
      program->Dep(held[j], t);                              // chunks arrive in order (the first allocates)
      now[j] = t;
    }
    held = std::move(now);
  }
  return held;
}

}  // namespace devplace::exec
