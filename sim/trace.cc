#include "sim/trace.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace devplace {
namespace {

constexpr int kDevicePid = 1, kLinkPid = 2;

nlohmann::json Meta(const char* what, int pid, int tid, const std::string& name) {
  nlohmann::json m = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) m["tid"] = tid;
  return m;
}

}  // namespace

Expected<std::string> ChromeTraceJson(const SimResult& result, const Graph& graph, const Topology& topology) {
  if (result.timeline.empty() && result.num_tasks > 0)
    return Error{"the result has no timeline: simulate with keep_timeline to write a trace"};
  nlohmann::json events = nlohmann::json::array();
  events.push_back(Meta("process_name", kDevicePid, -1, "devices"));
  events.push_back(Meta("process_name", kLinkPid, -1, "links"));
  for (DeviceId d = 0; d < topology.num_devices(); ++d)
    events.push_back(
        Meta("thread_name", kDevicePid, d, topology.device(d).name + " (" + topology.device(d).kind + ")"));
  for (LinkId l = 0; l < topology.num_links(); ++l) {
    const Link& link = topology.link(l);
    const std::string name =
        topology.node_name(link.src) + " -> " + topology.node_name(link.dst) + " (" + link.kind + ")";
    events.push_back(Meta("thread_name", kLinkPid, l, name));
  }
  const int32_t devices = topology.num_devices();
  for (const TimelineTask& t : result.timeline) {
    nlohmann::json e;
    e["ph"] = "X";
    e["ts"] = t.start * 1e6;
    e["dur"] = (t.end - t.start) * 1e6;
    const std::string& op = graph.op(t.op).name;
    nlohmann::json args = {{"part", t.part}};
    switch (t.kind) {
      case TimelineTask::Kind::kCompute:
        e["name"] = op;
        e["cat"] = "compute";
        args["type"] = graph.op(t.op).type;
        break;
      case TimelineTask::Kind::kTransfer:
        e["name"] = op + " -> " + graph.op(t.consumer).name;
        e["cat"] = "transfer";
        args["bytes"] = t.bytes;
        break;
      case TimelineTask::Kind::kCollective:
        e["name"] = (graph.op(t.op).role == OpRole::kBackward ? "allreduce " : "reduce ") + op;
        e["cat"] = "collective";
        args["bytes"] = t.bytes;
        break;
    }
    e["pid"] = t.resource < devices ? kDevicePid : kLinkPid;
    e["tid"] = t.resource < devices ? t.resource : t.resource - devices;
    e["args"] = std::move(args);
    events.push_back(std::move(e));
  }
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"graph", graph.name()}, {"topology", topology.name()},
                                       {"step_time_s", result.step_time}}}};
  return doc.dump() + "\n";
}

Status WriteChromeTrace(const SimResult& result, const Graph& graph, const Topology& topology,
                        const std::string& path) {
  Expected<std::string> text = ChromeTraceJson(result, graph, topology);
  if (!text) return text.error();
  return WriteFileAtomic(path, *text);
}

}  // namespace devplace
