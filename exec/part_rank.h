// Internal to exec/: a strategy that splits ops, run as one rank of a multi-process execution (docs/executor.md,
// "Multi-process runs"). Every rank builds the whole PartPlan and runs the tasks of its devices. A copy or a
// collective step whose source slot lives on another rank becomes a message: the source rank's send task (on the
// slot's device, after the reader's predecessors there) hands the box to the ProcessTransport, and the reading
// rank's arrival task ends when it has been delivered - a copy's arrival is the copy itself, a collective step then
// adds or stores the arrived chunk. A collective with one member on every rank runs instead as one process-group
// collective (exec/process_collectives.h): a collective task per rank, issued in an order every rank shares.
// Between steps the ranks exchange the weight ranges their update parts wrote.
#pragma once

#include <memory>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "distributed/process_group.h"
#include "exec/part_plan.h"
#include "exec/process_collectives.h"
#include "exec/process_transport.h"

namespace devplace::exec {

struct RankProgram {
  TaskProgram program;                             // this rank's tasks, sends and arrivals
  std::vector<ProcessTransport::Message> messages;  // the same list on every rank
  std::vector<int32_t> arrival_of;                 // by message: this rank's arrival task, or -1
  std::vector<char> local_unit;                    // by unit of the plan: runs on this rank
  std::vector<ProcessCollective> collectives;      // the process-group collectives, in the order every rank issues
};

// This rank's program (`me` of `world` ranks; `rank_of_device` by DeviceId). `device_of` maps devices to LibTorch
// devices. With `group_collectives`, collectives that RunsOnProcessGroup become collective tasks; the others (and
// all without it) keep their ring steps, as messages where they cross ranks. Errors when the plan has a dependency
// between ranks that is neither a data dependency of a cross-rank read nor the guard of a read's source against a
// later write (none of exec/'s builders makes one).
Expected<RankProgram> BuildRankProgram(const Graph& graph, const PartPlan& plan,
                                       const std::vector<int32_t>& rank_of_device, int32_t me, int32_t world,
                                       const std::vector<at::Device>& device_of, bool group_collectives = true);

// After a step: commits the local update parts' new weights (PartPlan::CommitUpdates) and all-reduces every update
// range from the rank that computed it, so that every rank's weights are the step's new weights.
Status CommitUpdatesAcrossRanks(PartPlan& plan, ProcessGroup& group);

// PartPlan::Value of every op after a step, put together from the ranks' slots (forward outputs and weight
// gradients from the ranks running their parts; new weights from the committed weights, so call it after
// CommitUpdatesAcrossRanks). Every rank gets every value.
Expected<std::vector<std::vector<float>>> RankValues(const Graph& graph, const Strategy& strategy,
                                                     const PartPlan& plan, const std::vector<char>& local_unit,
                                                     const std::vector<at::Tensor>& slots, ProcessGroup& group);

}  // namespace devplace::exec
