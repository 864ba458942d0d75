// The delta simulator's per-resource slot lists (internal to sim/): applying the slot edits a placed change
// recorded (delta_index.cc's DropSlot, AddSlot and MoveSlot) at the end of Place (UpdateResourceSlots).
#include <algorithm>

#include "sim/delta_impl.h"

namespace devplace {

void DeltaSimulator::Impl::UpdateResourceSlots() {
  // Per changed resource, the dropped and added slots are merged into its sorted slot list in place: the entries
  // between two edits move as one block by the number of entries added minus dropped before them, less the shift
  // of the list's start (blocks moving left first, in order, then those moving right, in reverse order, so that
  // none overwrites one still to move), and only the links at the edits are rewritten (the tasks between two
  // edits keep their neighbours). A resource whose edits lie far apart costs moving the entries between them, not
  // visiting every task there. The list's start moves by the shift of the block that leaves the fewest entries to
  // move (its storage keeps room before the first entry, sim::SlotList): an insertion near the front of a long list
  // moves the entries before it rather than those after it (sim::kShiftedStartMinEntries).
  using Block = sim::SlotListEditScratch::Block;
  std::vector<Block>& blocks = slot_edit_scratch.blocks;
  std::vector<sim::SlotListEditScratch::Insert>& inserts = slot_edit_scratch.inserts;
  std::vector<size_t>& edits = slot_edit_scratch.edits;
  std::vector<std::pair<std::ptrdiff_t, size_t>>& offset_entries = slot_edit_scratch.offset_entries;
  for (int32_t r : changed_res) {
    res_changed[r] = 0;
    MoveEntriesInPlace(r);
    sim::SlotList& v = res_slots[r];
    std::vector<int32_t>& added = res_added[r];
    std::vector<int32_t>& dropped = res_dropped[r];
    if (!std::is_sorted(dropped.begin(), dropped.end())) std::sort(dropped.begin(), dropped.end());
    const size_t n = v.size();
    const int32_t* const e = v.begin();  // the entries until Reframe below
    blocks.clear();
    inserts.clear();
    edits.clear();  // final positions x whose link from x - 1 changed
    size_t k = 0, a = 0, d = 0;
    std::ptrdiff_t off = 0;  // where the entries from k on go: k + off
    while (a < added.size() || d < dropped.size()) {
      const bool drop = d < dropped.size() && (a == added.size() || dropped[d] <= added[a]);
      const int32_t slot = drop ? dropped[d++] : added[a++];
      // The first entry from k on not below `slot`, by a search that widens from k (edits often lie close); the
      // first edit's by a plain binary search (widening from 0 probes about twice as often).
      size_t lo = k, hi = k == 0 ? n : k, step = 1;
      while (hi < n && e[hi] < slot) {
        lo = hi + 1;
        hi += step;
        step *= 2;
      }
      const size_t to = static_cast<size_t>(std::lower_bound(e + lo, e + std::min(hi, n), slot) - e);
      if (to > k) blocks.push_back({k, to, off});
      k = to;
      if (drop) {
        ++k;  // v[k - 1] == slot
        --off;
      } else {
        inserts.push_back({static_cast<size_t>(static_cast<std::ptrdiff_t>(k) + off), slot});
        edits.push_back(inserts.back().to);
        ++off;
      }
      edits.push_back(static_cast<size_t>(static_cast<std::ptrdiff_t>(k) + off));
    }
    if (n > k) blocks.push_back({k, n, off});
    // The start's shift: the block offset (or 0) that the most entries share, among those the room before the
    // start allows and that leave no more room than the list has entries (so a list's storage stays within twice
    // its entries; a block's entries stay where they are when its offset equals the shift); 0 for short lists.
    offset_entries.clear();
    if (n >= static_cast<size_t>(sim::kShiftedStartMinEntries)) {
      const std::ptrdiff_t room = static_cast<std::ptrdiff_t>(v.head()), entries = static_cast<std::ptrdiff_t>(n);
      for (const Block& b : blocks)
        if (b.off <= room && room - b.off <= entries) offset_entries.push_back({b.off, b.end - b.begin});
    }
    std::sort(offset_entries.begin(), offset_entries.end());
    std::ptrdiff_t shift = 0;
    size_t most_kept = 0;
    for (size_t x = 0; x < offset_entries.size();) {
      size_t kept = 0, y = x;
      for (; y < offset_entries.size() && offset_entries[y].first == offset_entries[x].first; ++y)
        kept += offset_entries[y].second;
      if (kept > most_kept) {
        most_kept = kept;
        shift = offset_entries[x].first;
      }
      x = y;
    }
    const size_t size = static_cast<size_t>(static_cast<std::ptrdiff_t>(n) + off);
    const size_t old_head = v.head();
    v.Reframe(shift, size);
    int32_t* const data = v.storage();
    const size_t head = v.head();  // entry k now at head + k; a block's entries from old_head + begin go there + off
    const auto from = [&](size_t x) { return data + old_head + x; };
    const auto to = [&](size_t x) { return data + head + x; };
    for (const Block& b : blocks)
      if (b.off < shift) std::copy(from(b.begin), from(b.end), to(b.begin) + b.off);
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b)
      if (b->off > shift) std::copy_backward(from(b->begin), from(b->end), to(b->end) + b->off);
    for (const sim::SlotListEditScratch::Insert& x : inserts) *to(x.to) = x.slot;
    v.Trim(size);
    for (size_t x : edits)
      if (x > 0 && x < size) LinkEntries(v, x);
    CloseResourceEnds(r);
    added.clear();
    dropped.clear();
  }
  changed_res.clear();
  stale.clear();
}

void DeltaSimulator::Impl::MoveEntriesInPlace(int32_t r) {
  // Nearly every move (97% in the 10k transformer episode) keeps its task's place in its resource's list: the
  // entry is rewritten where it is, and the list stays sorted and its links right (no entry is added or dropped
  // there). Each check compares with the neighbours' entries as they are at that moment, so the list is sorted
  // after every rewrite, and the entries still to drop are all there (a rewrite only changes its own entry).
  std::vector<SlotMove>& moves = res_moved[r];
  if (moves.empty()) return;
  sim::SlotList& v = res_slots[r];
  std::vector<int32_t>& added = res_added[r];
  std::vector<int32_t>& dropped = res_dropped[r];
  const size_t n = v.size();
  int32_t* const e = v.begin();  // (entries are only rewritten here)
  size_t kept = 0;
  // A task moving up in a run of them that all move up finds its right neighbour moved already when the run is
  // taken from its end, and one moving down its left neighbour when taken from its start: the moves are tried in
  // decreasing order of their new slots, then those left in increasing order. Each entry is found by a search
  // that widens from the one found before (the moves' old slots mostly follow the same order).
  size_t near = n - 1;
  const auto fits = [&](const SlotMove& m) {
    size_t lo = near, hi = near, step = 1;  // then e[x] is found in [lo, hi] (hi: at least m.from, or n)
    if (e[near] < m.from) {
      for (lo = hi = near + 1; hi < n && e[hi] < m.from; step *= 2) {
        lo = hi + 1;
        hi += step;
      }
      hi = std::min(hi, n);
    } else {
      for (; lo > 0 && e[lo - 1] >= m.from; step *= 2) {
        hi = lo - 1;
        lo = lo > step ? lo - step : 0;
      }
    }
    const size_t x = near = static_cast<size_t>(std::lower_bound(e + lo, e + hi, m.from) - e);
    if ((x == 0 || e[x - 1] < m.to) && (x + 1 == n || m.to < e[x + 1])) {
      e[x] = m.to;
      return true;
    }
    return false;
  };
  for (size_t k = moves.size(); k-- > 0;) {
    if (fits(moves[k])) moves[k].from = -1;
  }
  for (const SlotMove& m : moves) {
    if (m.from < 0 || fits(m)) continue;
    dropped.push_back(m.from);
    moves[kept++] = m;
  }
  if (kept > 0) {  // the adds of the moves left, merged with those of new tasks (both in increasing order)
    std::vector<int32_t>& merged_added = slot_edit_scratch.merged_added;
    merged_added.clear();
    auto m = moves.begin();
    const auto m_end = moves.begin() + static_cast<std::ptrdiff_t>(kept);
    for (int32_t slot : added) {
      for (; m != m_end && m->to < slot; ++m) merged_added.push_back(m->to);
      merged_added.push_back(slot);
    }
    for (; m != m_end; ++m) merged_added.push_back(m->to);
    added.assign(merged_added.begin(), merged_added.end());
  }
  moves.clear();
}

void DeltaSimulator::Impl::CloseResourceEnds(int32_t r) {
  const sim::SlotList& v = res_slots[r];
  res_first[r] = v.empty() ? -1 : slot_task[v.front()];
  run.last_task[r] = v.empty() ? -1 : slot_task[v.back()];
  if (!v.empty()) {
    run.timing.res_prev[res_first[r]] = -1;
    res_next[run.last_task[r]] = -1;
  }
}

}  // namespace devplace
