#include "sim/peak_tree.h"

#include <algorithm>
#include <climits>

namespace devplace::sim {

namespace {
constexpr int64_t kNoBest = INT64_MIN / 4;  // the largest running sum of an empty subtree
// A node's priority: a hash of its id (deterministic, and balanced as random priorities are).
uint32_t PriorityOf(int32_t x) {
  uint64_t z = static_cast<uint64_t>(x) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<uint32_t>(z ^ (z >> 31));
}
int64_t KeyOf(Time time, bool allocation) { return (time << 1) | (allocation ? 1 : 0); }
}  // namespace

void PeakTree::Clear() {
  if (num_tracked_ == 0) return;
  std::fill(device_.begin(), device_.end(), -1);
  std::fill(present_.begin(), present_.end(), 0);
  root_.clear();
  tracked_.clear();
  num_tracked_ = 0;
  num_buffers_ = 0;
}

void PeakTree::Reserve(int32_t tasks) {
  if (device_.size() >= static_cast<size_t>(tasks)) return;
  const size_t room = std::max(static_cast<size_t>(tasks), device_.size() + device_.size() / 2);
  nodes_.resize(2 * room);
  present_.resize(2 * room, 0);
  device_.resize(room, -1);
}

void PeakTree::InitNode(int32_t x, int64_t key, int64_t own) {
  nodes_[x] = {key, 0, own, own, own, kNone, kNone, kNone, PriorityOf(x)};
}

void PeakTree::Push(int32_t x) {
  Node& n = nodes_[x];
  if (n.lazy == 0) return;
  for (int32_t c : {n.left, n.right}) {
    if (c == kNone) continue;
    nodes_[c].key += n.lazy;
    nodes_[c].lazy += n.lazy;
  }
  n.lazy = 0;
}

void PeakTree::Pull(int32_t x) {
  Node& n = nodes_[x];
  int64_t sum = 0, best = kNoBest;
  if (n.left != kNone) {
    sum = nodes_[n.left].sum;
    best = nodes_[n.left].best;
  }
  sum += n.own;
  best = std::max(best, sum);
  if (n.right != kNone) {
    best = std::max(best, sum + nodes_[n.right].best);
    sum += nodes_[n.right].sum;
  }
  n.sum = sum;
  n.best = best;
}

void PeakTree::Split(int32_t t, int64_t key, int32_t* low, int32_t* high) {
  if (t == kNone) {
    *low = *high = kNone;
    return;
  }
  Push(t);
  Node& n = nodes_[t];
  int32_t l, h;
  if (n.key < key) {
    Split(n.right, key, &l, &h);
    n.right = l;
    if (l != kNone) nodes_[l].parent = t;
    *low = t;
    *high = h;
  } else {
    Split(n.left, key, &l, &h);
    n.left = h;
    if (h != kNone) nodes_[h].parent = t;
    *low = l;
    *high = t;
  }
  Pull(t);
}

int32_t PeakTree::Merge(int32_t a, int32_t b) {
  if (a == kNone) return b;
  if (b == kNone) return a;
  if (nodes_[a].priority > nodes_[b].priority) {
    Push(a);
    const int32_t r = Merge(nodes_[a].right, b);
    nodes_[a].right = r;
    nodes_[r].parent = a;
    Pull(a);
    return a;
  }
  Push(b);
  const int32_t l = Merge(a, nodes_[b].left);
  nodes_[b].left = l;
  nodes_[l].parent = b;
  Pull(b);
  return b;
}

void PeakTree::InsertNode(int32_t x, int32_t device) {
  // Down from the root while the nodes rank above x, then x takes the place reached, with that subtree split
  // around its key; the sums are pulled up along the way back.
  const int64_t key = nodes_[x].key;
  const uint32_t priority = nodes_[x].priority;
  int32_t* link = &root_[device];
  int32_t parent = kNone;
  while (*link != kNone && nodes_[*link].priority > priority) {
    Push(*link);
    parent = *link;
    link = key < nodes_[parent].key ? &nodes_[parent].left : &nodes_[parent].right;
  }
  int32_t l, h;
  Split(*link, key, &l, &h);
  Node& n = nodes_[x];
  n.left = l;
  n.right = h;
  if (l != kNone) nodes_[l].parent = x;
  if (h != kNone) nodes_[h].parent = x;
  n.parent = parent;
  *link = x;
  Pull(x);
  for (int32_t p = parent; p != kNone; p = nodes_[p].parent) Pull(p);
}

void PeakTree::EraseNode(int32_t x, int32_t device) {
  // The offsets still pending above x reach it first; then its children merged take its place.
  path_.clear();
  for (int32_t p = x; p != kNone; p = nodes_[p].parent) path_.push_back(p);
  for (size_t i = path_.size(); i-- > 0;) Push(path_[i]);
  const int32_t merged = Merge(nodes_[x].left, nodes_[x].right);
  const int32_t parent = nodes_[x].parent;
  if (merged != kNone) nodes_[merged].parent = parent;
  if (parent == kNone) {
    root_[device] = merged;
  } else {
    (nodes_[parent].left == x ? nodes_[parent].left : nodes_[parent].right) = merged;
    for (int32_t p = parent; p != kNone; p = nodes_[p].parent) Pull(p);
  }
}

int64_t PeakTree::KeyAt(int32_t x) const {
  int64_t key = nodes_[x].key;
  for (int32_t p = nodes_[x].parent; p != kNone; p = nodes_[p].parent) key += nodes_[p].lazy;
  return key;
}

void PeakTree::Put(int32_t task, int32_t device, Time start, Time free, int64_t bytes) {
  if (device_[task] >= 0 && device_[task] != device) Erase(task);
  num_buffers_ += device_[task] < 0;
  device_[task] = device;
  const int64_t keys[2] = {KeyOf(free, false), KeyOf(start, true)}, owns[2] = {-bytes, bytes};
  for (int32_t k = 0; k < 2; ++k) {
    const int32_t x = 2 * task + k;
    if (present_[x]) {
      if (nodes_[x].own == owns[k] && KeyAt(x) == keys[k]) continue;
      EraseNode(x, device);
    }
    InitNode(x, keys[k], owns[k]);
    InsertNode(x, device);
    present_[x] = 1;
  }
}

void PeakTree::Erase(int32_t task) {
  if (static_cast<size_t>(task) >= device_.size()) return;
  const int32_t device = device_[task];
  if (device < 0) return;
  for (int32_t x = 2 * task; x < 2 * task + 2; ++x) {
    if (present_[x]) EraseNode(x, device);
    present_[x] = 0;
  }
  device_[task] = -1;
  --num_buffers_;
}

void PeakTree::Take(int32_t task, Time from) {
  if (static_cast<size_t>(task) >= device_.size()) return;
  const int32_t device = device_[task];
  if (device < 0) return;
  for (int32_t x = 2 * task; x < 2 * task + 2; ++x) {
    if (!present_[x] || KeyAt(x) < KeyOf(from, false)) continue;
    EraseNode(x, device);
    present_[x] = 0;
  }
  if (!present_[2 * task] && !present_[2 * task + 1]) {
    device_[task] = -1;
    --num_buffers_;
  }
}

void PeakTree::Shift(Time from, Time delta) {
  if (delta == 0) return;
  const int64_t key = KeyOf(from, false), offset = 2 * delta;
  for (size_t d = 0; d < root_.size(); ++d) {
    if (root_[d] == kNone) continue;
    int32_t low, high;
    Split(root_[d], key, &low, &high);
    if (high != kNone) {
      nodes_[high].parent = kNone;
      nodes_[high].key += offset;
      nodes_[high].lazy += offset;
    }
    if (low != kNone) nodes_[low].parent = kNone;
    root_[d] = Merge(low, high);
    nodes_[root_[d]].parent = kNone;
  }
}

int32_t PeakTree::BuildSorted() {
  // The treap of keys in order is the Cartesian tree of their priorities: one pass with a stack of the right
  // spine. A node leaves the stack complete (its children fixed), so its sums are pulled then.
  path_.clear();
  for (int32_t x : order_) {
    int32_t last = kNone;
    while (!path_.empty() && nodes_[path_.back()].priority < nodes_[x].priority) {
      last = path_.back();
      path_.pop_back();
      Pull(last);
    }
    nodes_[x].left = last;
    if (last != kNone) nodes_[last].parent = x;
    if (!path_.empty()) {
      nodes_[path_.back()].right = x;
      nodes_[x].parent = path_.back();
    }
    path_.push_back(x);
  }
  for (size_t i = path_.size(); i-- > 0;) Pull(path_[i]);
  return path_.empty() ? kNone : path_.front();
}

void PeakTree::SortByKey() {
  // Least significant byte first, over the bytes the largest key uses (keys are non-negative); each pass is stable.
  int64_t largest = 0;
  for (const auto& [key, x] : sorted_) largest = std::max(largest, key);
  unsorted_.resize(sorted_.size());
  for (int shift = 0; shift < 64 && (largest >> shift) != 0; shift += 8) {
    size_t count[257] = {};
    for (const auto& [key, x] : sorted_) ++count[((key >> shift) & 0xff) + 1];
    for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
    for (const auto& item : sorted_) unsorted_[count[(item.first >> shift) & 0xff]++] = item;
    sorted_.swap(unsorted_);
  }
}

void PeakTree::Track(int32_t device, int32_t devices, std::vector<Buffer>& buffers) {
  if (root_.size() < static_cast<size_t>(devices)) {
    root_.resize(static_cast<size_t>(devices), kNone);
    tracked_.resize(static_cast<size_t>(devices), 0);
  }
  sorted_.clear();
  for (const Buffer& b : buffers) {
    device_[b.task] = device;
    present_[2 * b.task] = present_[2 * b.task + 1] = 1;
    InitNode(2 * b.task, KeyOf(b.free, false), -b.bytes);
    InitNode(2 * b.task + 1, KeyOf(b.start, true), b.bytes);
    sorted_.emplace_back(KeyOf(b.free, false), 2 * b.task);
    sorted_.emplace_back(KeyOf(b.start, true), 2 * b.task + 1);
  }
  SortByKey();
  order_.clear();
  for (const auto& [key, x] : sorted_) order_.push_back(x);
  root_[device] = BuildSorted();
  num_buffers_ += static_cast<int64_t>(buffers.size());
  tracked_[device] = 1;
  ++num_tracked_;
}

void PeakTree::Renumber(const std::vector<int32_t>& new_id, int32_t tasks) {
  if (num_tracked_ == 0) return;
  auto node = [&new_id](int32_t x) { return x == kNone ? kNone : 2 * new_id[x >> 1] + (x & 1); };
  const size_t room = std::max(device_.size(), static_cast<size_t>(tasks));
  renumbered_.resize(2 * room);
  renumbered_present_.assign(2 * room, 0);
  renumbered_device_.assign(room, -1);
  for (size_t t = 0; t < device_.size(); ++t) {
    if (device_[t] < 0) continue;
    const int32_t to = new_id[t];
    renumbered_device_[to] = device_[t];
    for (int32_t b = 0; b < 2; ++b) {
      Node n = nodes_[2 * t + b];
      n.left = node(n.left);
      n.right = node(n.right);
      n.parent = node(n.parent);
      renumbered_[2 * to + b] = n;  // its priority kept: the heap order stands
      renumbered_present_[2 * to + b] = present_[2 * t + b];
    }
  }
  nodes_.swap(renumbered_);
  present_.swap(renumbered_present_);
  device_.swap(renumbered_device_);
  for (int32_t& root : root_) root = node(root);
}

PeakTree::Held PeakTree::Find(int32_t task) const {
  Held held;
  if (static_cast<size_t>(task) >= device_.size() || device_[task] < 0) return held;
  held.device = device_[task];
  held.free = present_[2 * task] ? KeyAt(2 * task) >> 1 : -1;
  held.start = present_[2 * task + 1] ? KeyAt(2 * task + 1) >> 1 : -1;
  held.bytes = nodes_[2 * task + 1].own;
  return held;
}

int64_t PeakTree::Peak(int32_t device) const {
  const int32_t root = root_[device];
  return root == kNone ? 0 : std::max<int64_t>(0, nodes_[root].best);
}

int64_t PeakTree::memory_bytes() const {
  return static_cast<int64_t>(nodes_.capacity() * sizeof(Node) +
                              (device_.capacity() + root_.capacity() + path_.capacity() + order_.capacity()) *
                                  sizeof(int32_t) +
                              tracked_.capacity());
}

}  // namespace devplace::sim
