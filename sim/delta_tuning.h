// The delta simulator's layout and tuning constants (internal to sim/; DeltaSimulator::Impl in delta_impl.h
// uses them), each with the measurements that chose it.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

namespace devplace::sim {
inline constexpr int kChunkBits = 6;       // slots per chunk: 64
inline constexpr int32_t kHoleEvery = 4;   // a fresh layout puts a hole after every 3 tasks
inline constexpr int32_t kNoSlot = INT_MAX;  // chunk minimum of a chunk without entries
// A relayout after a change that packed a stretch of the order (kRelayoutDisplacedDivisor) puts a hole after every
// task of that stretch: tasks were being inserted there faster than its holes lasted (in the iterative episodes the
// groups move in turn, and each move adds transfers next to the last), and the rest keeps the usual share. Whole 10k
// IterativeStep episodes in callgrind against a relayout with the usual holes: transformer -7.9% instructions (its
// relayouts 53 -> 29), nmt +1.0%; DeltaFixed within 0.15%. A hole after every second task there: transformer
// -2.8%, nmt +0.4%; after every task everywhere a packed relayout lays out: transformer -7.0%, nmt +1.3%, DeltaFixed
// up to +2.7%.
inline constexpr int32_t kRoomyHoleEvery = 2;
// A fresh layout of n tasks: its slot count, and the slot of the k-th task.
inline int32_t FreshSlots(int32_t n) { return n + n / (kHoleEvery - 1) + 1; }
inline int32_t FreshSlot(int32_t k) { return k + k / (kHoleEvery - 1); }
// A change that rewrites more slots than 1/kRelayoutDivisor of the tasks (and at least kRelayoutMinSlots) packs a
// stretch of the order so tightly that the order is laid out afresh. The minimum binds below 16 x 256 tasks only:
// 1,024 until session 35, when changes made in parts (ApplyInParts, then one op each) left 1k-op graphs with more
// medium-sized windows, which cost more placed slot by slot than laid out (IterativeStep/1000: nmt 102 -> 94 us,
// transformer 37 -> 30 us per step; single-op changes on 1k graphs within 1-8% either way).
inline constexpr int32_t kRelayoutDivisor = 16;
// A change placed slot by slot that displaced (moved up in the order without re-timing them) more than
// 1/kRelayoutDisplacedDivisor of the tasks (and at least kRelayoutMinSlots), and more than kRelayoutDisplacedPerPlaced
// times the tasks it placed anew, packed a long stretch of the order that the spreading (kSpreadChain) only loosens
// locally: the order is laid out afresh too. Whole 10k IterativeStep episodes (session 41, callgrind instructions /
// alternating wall runs): transformer -4.2% / about 10-15% faster, nmt +0.9% / level within the noise; DeltaFixed
// +0.0% / +0.1% / +0.5% (layered / nmt / transformer). At 1/48 without the second condition: transformer -3.9%,
// nmt +1.4%.
inline constexpr int32_t kRelayoutDisplacedDivisor = 48;
inline constexpr size_t kRelayoutDisplacedPerPlaced = 8;
// A change whose buffers to take out and put back are more than 1/kKeptPeaksNotedDivisor of those the kept peaks
// hold (DeltaSimulator::Impl::kept_peaks) drops them instead: a buffer put back costs more than one gathered and
// sorted afresh (10k transformer episode: a half to an eighth within 4%; never dropping was 1.9x slower with the
// first, treap-based version).
inline constexpr int32_t kKeptPeaksNotedDivisor = 4;
inline constexpr int32_t kRelayoutMinSlots = 256;
// A change that re-times more than 1/kMergeDivisor of the tasks (and at least kRelayoutMinSlots) is not placed
// slot by slot: the new order is written out from the change's first chunk up to where the rest keeps its slots
// (DeltaSimulator::Impl::LayoutMerged). Placing such a change slot by slot would pack its stretch so tightly
// that the whole order is laid out afresh after it (kRelayoutDivisor), which costs more.
inline constexpr int32_t kMergeDivisor = 16;
// A change placed slot by slot that moves more than kSpreadChain tasks which kept their times in a row (a stretch
// of the order without holes: each change there would move them again) spreads that stretch and the chunks after
// it evenly, up to where 1/kSpreadHoleDivisor of the tasks' count are holes or kSpreadMaxChunks chunks past it
// (DeltaSimulator::Impl::SpreadChains). Measured in callgrind instructions over a whole IterativeStep episode
// (transformer 10k: 3.18 G without spreading), chain / chunks / divisor: 64 / 16 / 5 2.74 G; 32 / 16 / 5 2.78 G;
// 128 / 16 / 5 2.72 G; 256 / 16 / 5 2.75 G; 1024 / 16 / 5 3.06 G; 64 / 4 / 5 2.84 G; 64 / 64 / 5 2.97 G; 128 / 8 /
// 5 2.78 G; 128 / 32 / 5 2.75 G; 64 / 16 / 3 2.76 G; 128 / 16 / 8 2.71 G (kept).
inline constexpr int32_t kSpreadChain = 128;
inline constexpr int32_t kSpreadMaxChunks = 16;
inline constexpr int32_t kSpreadHoleDivisor = 8;
// Garbage (the tasks of replaced groups, kept until a compaction) is compacted once it is at least a fifth of the
// live graph and the changes since the last compaction have re-timed at least kCompactAfterRetimed times the live
// task count, or once it is as large as the live graph whatever they re-timed (DeltaSimulator::Impl::Finish). A
// compaction costs a pass over the live graph; the garbage costs the changes locality in proportion to the tasks
// they re-time. Whole IterativeStep episodes (10k, callgrind with a 1 MiB last-level cache), against compacting at
// a fifth always: at 8, transformer -4.8% instructions, -3.9% / -6.4% last-level read / write misses; nmt -1.2%,
// -2.5% / -4.3% (at 4: nmt -0.5%; at 16 as at 8); at the live graph always, nmt +5.3% read misses and 4-10% slower
// in wall time. Single-op changes (DeltaFixed) re-time enough that they compact as before.
inline constexpr int64_t kCompactAfterRetimed = 8;
// The most tasks and successor-pool entries the task graph holds, garbage included, before Finish compacts it
// whatever the changes re-timed, for `live` live tasks (and the room StoreAndLayOut reserves, a change's worth more).
inline size_t MostTasksBeforeCompaction(size_t live) { return 2 * live + 1024; }
inline size_t MostSuccEntriesBeforeCompaction(size_t live) { return 5 * live + 16384; }
// SetConfigs makes a change to several ops in parts (DeltaSimulator::Impl::ApplyInParts): ops whose tasks' earliest
// slots are closer than this go in one part. Measured in callgrind instructions over whole DeltaStepTimeOnly
// episodes (bench/env_bench.cc), 0 (one op per part) / 64 / 128 / 256 / 512 / 1024: nmt 10k 20.31 / 9.26 / 8.34 /
// 8.29 / 8.30 / 8.30 G, transformer 10k 2.62 / 2.46 / 2.46 / 2.46 / 2.48 / 2.55 G; nmt 1k 299 / 217 / - / 188 / - /
// 199 M, transformer 1k 112 / 100 / - / 104 / - / 163 M (whole changes: nmt 1k 270 M, transformer 1k 202 M).
inline constexpr int32_t kSamePartSlots = 256;
// The sweep checks for a shifted rest when something just happened that often makes the rest a shift (a task
// re-timed for a resource conflict, tasks passed that were not clean, a jump) besides its periodic checks. Each
// event-triggered check that fails doubles the sweep steps that must pass before the next such check: 1, 3, 7, ...,
// at most kMostStepsBetweenEventChecks (the periodic checks keep their own schedule). On nmt's changes that re-time
// a few hundred tasks the events came every 10 steps, and 95% of the checks failed. Callgrind instructions against
// checking at every event (session 52, layered / nmt / transformer DeltaFixed, then the 10k nmt and transformer
// IterativeStep episodes): at most 64 steps -0.05 / -2.0 / -0.0%, -0.7 / -0.0%; 16: -0.1 / -1.6 / -0.0%, -0.7 /
// -0.0%; 256: +0.0 / -1.9 / -0.0%, -0.5 / -0.0%; a fixed 4 / 8 / 16 / 32 steps after the first failure: nmt
// DeltaFixed -0.3 / -0.9 / -1.7 / -1.9%, the transformer episode -0.6 / -0.1 / +0.5 / +1.0%; the distances back to
// one step after each jump: as at 64.
inline constexpr int32_t kMostStepsBetweenEventChecks = 64;
// A sweep starts from each resource's last task before its first slot (DeltaSimulator::Impl::LoadResourceState).
// The tasks in the kResourceStateScan slots before it are read backwards first (consecutive entries), and only the
// resources with none there are looked up by a binary search in their slot lists (about one cache miss per step).
// Callgrind against binary searches only (session 52; DeltaFixed layered / nmt / transformer, then the 10k nmt and
// transformer IterativeStep episodes): 128 slots -0.3 / -0.1 / -0.2%, -0.1 / -0.5% instructions, the transformer
// episode's first-level read misses -4.6% (`--cache-sim=yes`); 64: the episodes -0.0 / -0.5%, misses -3.4%; 256:
// -0.2 / -0.05 / -0.1%, -0.04 / -0.1%, misses -5.4%; 512 and 1,024: +1.1% and +3.9% on the transformer episode.
inline constexpr int32_t kResourceStateScan = 128;
// A slot list edit (DeltaSimulator::Impl::UpdateResourceSlots) moves the list's start when that leaves fewer entries
// to move, in lists of at least this many entries (in shorter ones the choice costs more than the moves it saves).
// Counted over the 10k transformer IterativeStep episode, the best start moves 47% of the entries a fixed start
// moved (51.6 of 109.3 M). Callgrind against a fixed start (session 52; DeltaFixed layered / nmt / transformer,
// then the 10k nmt and transformer episodes): at 1,024 entries +0.2 / -0.1 / -0.0%, -0.7 / -3.5%; at 4,096 +0.2 /
// -0.06 / +0.1%, -0.5 / -3.2%; at 256 (before two reads were hoisted) +0.4 / +0.07 / +0.06%, -0.5 / -2.7%; in
// every list +0.5 / +0.05 / +0.06%, -0.5 / -2.5%.
inline constexpr int32_t kShiftedStartMinEntries = 1024;
// The one-pass re-timings of a large change (DeltaSweep::RunOrdered, DeltaSweep::RunDense) check for a shifted rest
// after this many re-timed tasks, then after twice as many each time the check fails, up to kOnePassCheckMost.
inline constexpr int32_t kOnePassCheckFirst = 64;
inline constexpr int32_t kOnePassCheckMost = 1024;
}  // namespace devplace::sim
