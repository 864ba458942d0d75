// Chrome trace of a pipeline step: the micro-batch tasks on device tracks and the transfers on link tracks.
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "sim/pipeline.h"

namespace devplace {
namespace {

constexpr int kDeviceTrack = 1, kLinkTrack = 2;

// The event's name: "F3" / "B3" / "W3" / "update" on devices, "act 3 enc->dec" / "grad 3 dec->enc" /
// "allreduce enc" on links.
std::string TaskName(const PipelineTimelineTask& t, const PipelinePlan& plan) {
  const std::string mb = std::to_string(t.microbatch);
  const std::string& stage = plan.stages[t.stage].name;
  switch (t.kind) {
    case PipelineTaskKind::kForward: return "F" + mb;
    case PipelineTaskKind::kBackward: return "B" + mb;
    case PipelineTaskKind::kWeightGradient: return "W" + mb;
    case PipelineTaskKind::kUpdate: return "update";
    case PipelineTaskKind::kActivation: return "act " + mb + " " + stage + "->" + plan.stages[t.peer].name;
    case PipelineTaskKind::kGradient: return "grad " + mb + " " + stage + "->" + plan.stages[t.peer].name;
    case PipelineTaskKind::kAllReduce: return "allreduce " + stage;
    case PipelineTaskKind::kShardComm: return (t.microbatch >= 0 ? "comm " + mb + " " : "comm ") + stage;
  }
  return "?";
}

}  // namespace

Expected<std::string> PipelineChromeTraceJson(const PipelineResult& result, const PipelinePlan& plan,
                                              const Topology& topology) {
  if (result.timeline.empty()) return Error{"the result has no timeline: simulate with keep_timeline to write a trace"};
  nlohmann::json events = nlohmann::json::array();
  auto name = [&](const char* what, int pid, int tid, const std::string& text) {
    nlohmann::json m = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", text}}}};
    if (tid >= 0) m["tid"] = tid;
    events.push_back(std::move(m));
  };
  name("process_name", kDeviceTrack, -1, "devices");
  name("process_name", kLinkTrack, -1, "links");
  for (size_t s = 0; s < plan.stages.size(); ++s)
    for (DeviceId d : plan.stages[s].devices)
      name("thread_name", kDeviceTrack, d, topology.device(d).name + " (stage " + plan.stages[s].name + ")");
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    const Link& link = topology.link(l);
    name("thread_name", kLinkTrack, l,
         topology.node_name(link.src) + " -> " + topology.node_name(link.dst) + " (" + link.kind + ")");
  }
  const int32_t devices = topology.num_devices();
  for (const PipelineTimelineTask& t : result.timeline) {
    const bool on_device = t.resource < devices;
    nlohmann::json args = {{"stage", plan.stages[t.stage].name}, {"kind", std::string(ToString(t.kind))}};
    if (t.microbatch >= 0) args["microbatch"] = t.microbatch;
    if (!on_device) args["bytes"] = t.bytes;
    events.push_back({{"ph", "X"},
                      {"name", TaskName(t, plan)},
                      {"cat", on_device ? "compute" : "transfer"},
                      {"ts", t.start * 1e6},
                      {"dur", (t.end - t.start) * 1e6},
                      {"pid", on_device ? kDeviceTrack : kLinkTrack},
                      {"tid", on_device ? t.resource : t.resource - devices},
                      {"args", std::move(args)}});
  }
  const nlohmann::json about = {{"topology", topology.name()},
                                {"schedule", std::string(ToString(plan.schedule))},
                                {"microbatches", plan.microbatches},
                                {"step_time_s", result.sim.step_time},
                                {"bubble_fraction", result.bubble_fraction}};
  return nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", about}}.dump() +
         "\n";
}

Status WritePipelineChromeTrace(const PipelineResult& result, const PipelinePlan& plan, const Topology& topology,
                                const std::string& path) {
  const Expected<std::string> text = PipelineChromeTraceJson(result, plan, topology);
  return text.ok() ? WriteFileAtomic(path, *text) : Status(text.error());
}

}  // namespace devplace
