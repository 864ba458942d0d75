// JSON form of a PipelinePlan: a strategy file ("devplace.strategy", version 1) whose root holds a "pipeline"
// object instead of per-op "ops" (schema in docs/formats.md). Ops, layers and devices are named. Readers reject
// unknown keys and report "<file>: <field>: <reason>"; validation errors name the stage.
#pragma once

#include <string>

#include "core/graph.h"
#include "core/pipeline.h"
#include "core/status.h"
#include "core/topology.h"

namespace devplace {

// The forms a strategy file can take: per-op configs ("ops") or a pipeline ("pipeline").
enum class StrategyForm : uint8_t { kOps, kPipeline };
// Which form the strategy JSON `text` has (a root object with a "pipeline" key is a pipeline); an Error when the
// text is not a JSON object. Nothing else is checked: the form's reader does that.
Expected<StrategyForm> DetectStrategyForm(const std::string& text, const std::string& source);
// The form of the strategy file at `path`.
Expected<StrategyForm> DetectStrategyFileForm(const std::string& path);

// Serialises `plan` (deterministic; PipelinePlanFromJson reads it back to an equal plan).
std::string PipelinePlanToJson(const PipelinePlan& plan, const Graph& graph, const Topology& topology);
// Parses a pipeline strategy and validates it (ValidatePipelinePlan); errors are prefixed with `source`.
Expected<PipelinePlan> PipelinePlanFromJson(const std::string& text, const std::string& source, const Graph& graph,
                                            const Topology& topology);

Expected<PipelinePlan> ReadPipelinePlanFile(const std::string& path, const Graph& graph, const Topology& topology);
Status WritePipelinePlanFile(const PipelinePlan& plan, const Graph& graph, const Topology& topology,
                             const std::string& path);

}  // namespace devplace
