// Internal to exec/: collectives between the executor's devices, built as receive tasks of a TaskProgram with the
// decomposition sim/collectives.h prices (same steps, same ring order, chunks of size/n), so that the time each one
// takes can be set against its simulated time. Member i's tensor lives in slots[i] on devices[i]; a tensor is cut
// into n chunks along `axis` (chunk c = [extent * c / n, extent * (c + 1) / n), as core/partition.h slices), and
// every step is a task on the receiving member's worker that copies one chunk from its ring predecessor and adds it
// (reduce) or stores it (gather). Each builder takes per member the task after which the member's input is in its
// slot (-1: at the start) and returns per member the task after which the member holds its result.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/task_program.h"

namespace devplace::exec {

// What every collective is built over.
struct CollectiveGroup {
  std::vector<DeviceId> devices;
  std::vector<int32_t> slots;
  int32_t axis = 0;          // the axis chunks are cut along
  int64_t extent = 1;        // that axis's extent
  int64_t bytes = 0;         // the whole tensor's bytes (for reporting and task bytes)
  std::string label;
};

// Ring all-reduce: n - 1 reduce-scatter steps then n - 1 all-gather steps; in step k member i sends chunk
// (i - k - 1) mod n (reduce-scatter, added) or (i - k') mod n (all-gather step k', stored) to member i + 1.
std::vector<int32_t> AppendAllReduce(TaskProgram* program, const CollectiveGroup& group,
                                     const std::vector<int32_t>& ready);
// Ring reduce-scatter: the reduce-scatter steps of the all-reduce; member i ends with chunk i summed.
std::vector<int32_t> AppendReduceScatter(TaskProgram* program, const CollectiveGroup& group,
                                         const std::vector<int32_t>& ready);
// Ring all-gather: member i holds chunk i of its (full-size) tensor; every member ends with all chunks.
std::vector<int32_t> AppendAllGather(TaskProgram* program, const CollectiveGroup& group,
                                     const std::vector<int32_t>& ready);
// Pairwise all-to-all into `out_slots` (fresh tensors of the inputs' shape; the extent must divide into n equal
// chunks): chunk j of member i's input becomes
// chunk i of member j's output; in round k (1..n-1) member i sends to member i + k, as the simulator orders them.
std::vector<int32_t> AppendAllToAll(TaskProgram* program, const CollectiveGroup& group,
                                    const std::vector<int32_t>& out_slots, const std::vector<int32_t>& ready);
// Chunked chain broadcast of member 0's tensor (the root) along members 1, 2, ..., cut into `chunks` chunks; a
// receiver forwards chunk c once it has it. Receivers' slots are filled (allocated by their first chunk).
std::vector<int32_t> AppendBroadcast(TaskProgram* program, const CollectiveGroup& group, int32_t chunks,
                                     const std::vector<int32_t>& ready);

}  // namespace devplace::exec
