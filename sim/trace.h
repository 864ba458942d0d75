// Chrome trace export of a simulated step: one track per device and per link direction, one event per task
// (compute parts named by op, transfers "producer -> consumer", collective steps "allreduce op"/"reduce op").
// The file opens in Perfetto (ui.perfetto.dev) and chrome://tracing.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/status.h"
#include "core/topology.h"
#include "sim/simulator.h"

namespace devplace {

// The trace as JSON text. `result` must have been simulated with SimOptions::keep_timeline, else an Error.
Expected<std::string> ChromeTraceJson(const SimResult& result, const Graph& graph, const Topology& topology);
// Writes the trace to `path` atomically.
Status WriteChromeTrace(const SimResult& result, const Graph& graph, const Topology& topology,
                        const std::string& path);

}  // namespace devplace
