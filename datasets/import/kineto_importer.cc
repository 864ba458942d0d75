// The Kineto importer: a torch.profiler (Kineto) Chrome trace ({"traceEvents": [...]}) as a timed graph. Every GPU
// activity (kernel, memcpy, memset: complete events "ph": "X") becomes an op with its measured duration, named and
// typed after the CPU operator that launched it (matched by "External id"); activities on one (device, stream)
// are chained in time order. See docs/importers.md.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "datasets/import/one_line.h"
#include "datasets/import/trace_internal.h"

namespace devplace::import_detail {

namespace {

using nlohmann::json;

struct Activity {
  double ts = 0, dur = 0;
  int64_t device = 0, stream = 0, bytes = 0;
  std::string name, category, launcher;
  size_t index = 0;
};

int64_t IntArg(const json& args, const char* key) {
  auto it = args.find(key);
  return it != args.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

bool IsKinetoTrace(const json& doc) {
  return doc.is_object() && doc.contains("traceEvents") && !doc.contains("nodes");
}

Expected<ImportResult> ImportKinetoTrace(const json& doc, const std::string& source, const std::string& graph_name) {
  const json& events = doc["traceEvents"];
  if (!events.is_array()) return Error{source + ": traceEvents: expected an array"};
  std::unordered_map<int64_t, std::string> launcher;  // External id -> CPU operator name
  for (const json& e : events)
    if (e.is_object() && e.value("cat", json()) == "cpu_op" && e.contains("name") && e["name"].is_string() &&
        e.contains("args") && e["args"].is_object())
      launcher.emplace(IntArg(e["args"], "External id"), e["name"].get<std::string>());
  std::vector<Activity> acts;
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    if (!e.is_object() || e.value("ph", json()) != "X" || !e.contains("cat") || !e["cat"].is_string()) continue;
    const std::string cat = e["cat"].get<std::string>();
    const json args = e.contains("args") && e["args"].is_object() ? e["args"] : json::object();
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    if (!e.contains("ts") || !e["ts"].is_number() || !e.contains("dur") || !e["dur"].is_number() ||
        e["dur"].get<double>() < 0 || !e.contains("name") || !e["name"].is_string())
      return Error{OneLine(source + ": traceEvents[" + std::to_string(i) + "]: a " + cat +
                           " event needs a name, ts and a non-negative dur")};
    Activity a{e["ts"].get<double>(), e["dur"].get<double>(), IntArg(args, "device"), IntArg(args, "stream"),
               IntArg(args, "bytes"), e["name"].get<std::string>(), cat, "", i};
    if (auto it = launcher.find(IntArg(args, "External id")); it != launcher.end()) a.launcher = it->second;
    acts.push_back(std::move(a));
  }
  if (acts.empty())
    return Error{source + ": a Kineto trace without GPU activity (kernels, memcpy, memset): nothing to import "
                          "(a CPU-only profile has no device work)"};
  std::stable_sort(acts.begin(), acts.end(), [](const Activity& a, const Activity& b) { return a.ts < b.ts; });
  ImportResult result;
  result.format = "kineto";
  GraphBuilder builder(graph_name);
  std::map<std::string, int> seen;
  std::map<std::pair<int64_t, int64_t>, OpId> last_on_stream;
  size_t unsized = 0;
  for (const Activity& a : acts) {
    Op op;
    const std::string base = a.launcher.empty() ? a.name.substr(0, 120) : a.launcher;
    op.name = base + "#" + std::to_string(seen[base]++);
    if (a.category != "kernel") {
      op.type = a.category == "gpu_memcpy" ? "memcpy" : "memset";
    } else if (a.name.find("nccl") != std::string::npos) {
      op.type = CollectiveFromName(a.name);
      if (op.type.empty()) op.type = a.name.find("SendRecv") != std::string::npos ? "send_recv" : "collective";
      ++unsized;
    } else {
      op.type = a.launcher.empty() ? "kernel" : OpTypeFromName(a.launcher);
    }
    std::string lower = op.name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    op.role = lower.find("backward") != std::string::npos ? OpRole::kBackward
              : lower.find("optimizer") != std::string::npos ? OpRole::kUpdate : OpRole::kForward;
    if (a.bytes > 0 && a.bytes <= kMaxTensorBytes) op.shape = {a.bytes}, op.dtype = DType::kI8;
    const OpId id = builder.add_op(std::move(op));
    result.measured_seconds.push_back(a.dur * 1e-6);
    auto [it, first] = last_on_stream.try_emplace({a.device, a.stream}, id);
    if (!first) {
      builder.add_edge(it->second, id, 0);
      it->second = id;
    }
  }
  result.warnings.push_back(source + ": Kineto trace: " + std::to_string(acts.size()) + " GPU activities on " +
                            std::to_string(last_on_stream.size()) + " streams, ordered within each stream only "
                            "(no data dependencies, no FLOPs: the measured times are the costs)");
  if (unsized > 0)
    result.warnings.push_back(source + ": " + std::to_string(unsized) +
                              " communication kernels have no recorded size: 4 bytes assumed");
  Expected<Graph> graph = std::move(builder).Build();
  if (!graph.ok()) return Error{OneLine(source + ": " + graph.error().message)};
  result.graph = std::move(*graph);
  return OneLineMessages(std::move(result));
}

}  // namespace devplace::import_detail
