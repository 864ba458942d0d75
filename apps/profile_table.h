// Conversion of the executor's op profile into the simulator's profiled cost table (exec/ does not depend on sim/,
// so the conversion lives with the commands that use both).
#pragma once

#include "exec/profiler.h"
#include "sim/cost_model.h"

namespace devplace::cli {

// One ProfiledEntry per measured signature; the analytic fallback keeps its defaults.
CostTable ProfileToCostTable(const ProfileResult& profile);

}  // namespace devplace::cli
