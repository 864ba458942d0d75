// The lists of the delta simulator's ordered pass (DeltaSimulator::Impl::DeltaSweep::RunOrdered, delta_ordered.cc),
// kept between changes in sim::ApplyScratch so that a pass does not allocate once they have grown.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/task_graph.h"

namespace devplace::sim {

struct OrderedScratch {
  // Per resource: the ready time of its last task re-timed in the pass, and that task (each resource's tasks must
  // leave the pass in increasing (ready, key) order, as a full run dequeues them).
  std::vector<Time> res_ready;
  std::vector<int32_t> res_task;
  std::vector<int32_t> deferred;  // clean tasks of the order that waited for an input (marked dirty meanwhile)
  // The sweep's state when the pass began, put back if the order does not hold: the dirty list and, per resource,
  // when it is free, its last task before the cursor and the latest slot of a task re-timed on it.
  std::vector<int32_t> pending;
  std::vector<Time> free;
  std::vector<int32_t> last, processed_last;
  // The out-of-order tasks that waited for an input when the pass first looked at them (some since re-timed), for
  // the jumps (a task waits again only after a wake, which started from there).
  std::vector<int32_t> waited;
  // The stretches of the order the pass jumped over: slots [from, to) moved by `shift` in the layout, the
  // window's size when it jumped (the window's tasks before it come before the stretch, those after it after), and
  // the stretch's last task.
  struct Jump {
    int32_t from, to;
    Time shift;
    size_t window_at;
    int32_t last_task;
  };
  std::vector<Jump> jumps;
};

}  // namespace devplace::sim
