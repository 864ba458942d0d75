// Python bindings of the simulator (simulate() and its result, with the Chrome trace writer) and of the search
// registry (search()). Both release the GIL while the C++ code runs.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "agents/search.h"
#include "python/bindings.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace devplace::python {
namespace {

// A simulation result with the graph and machine it describes (the trace writer needs them).
struct SimulationResult {
  SimResult result;
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const Topology> topology;
  bool has_timeline = false;
};

template <class T, class F>
py::array_t<T> DeviceColumn(const SimResult& r, F field) {
  std::vector<T> v;
  for (const DeviceStats& d : r.devices) v.push_back(field(d));
  return ToArray(v);
}

SimulationResult RunSimulate(std::shared_ptr<Graph> graph, std::shared_ptr<Topology> topology,
                             const Strategy& strategy, std::optional<CostModel> costs, bool trace) {
  SimOptions options;
  options.keep_timeline = trace;
  const CostModel cost = costs.value_or(CostModel());
  Expected<SimResult> result = Error{};
  {
    py::gil_scoped_release release;
    result = Simulate(*graph, *topology, strategy, cost, options);
  }
  return {Unwrap(std::move(result)), std::move(graph), std::move(topology), trace};
}

struct SearchOutcome {
  Strategy strategy;
  int64_t evaluations = 0;
  double seconds = 0.0;
};

SearchOutcome RunSearch(const std::string& algo, std::shared_ptr<Graph> graph,
                        std::shared_ptr<Topology> topology, int64_t budget_evals, double budget_seconds,
                        uint64_t seed, std::optional<Strategy> initial, std::optional<CostModel> costs) {
  std::unique_ptr<SearchAlgorithm> algorithm = Unwrap(MakeSearchAlgorithm(algo));
  SearchProblem problem{.graph = graph.get(), .topology = topology.get(), .cost = costs.value_or(CostModel())};
  SearchRequest request{.budget = {.max_evaluations = budget_evals, .max_seconds = budget_seconds},
                        .seed = seed,
                        .initial = initial ? &*initial : nullptr};
  Expected<SearchResult> result = Error{};
  {
    py::gil_scoped_release release;
    result = algorithm->Search(problem, request);
  }
  SearchResult r = Unwrap(std::move(result));
  return {std::move(r.strategy), r.evaluations, r.seconds};
}

}  // namespace

void BindSim(py::module_& m) {
  py::class_<SimulationResult>(m, "SimulationResult", "The outcome of one simulated training step.")
      .def_property_readonly("step_time", [](const SimulationResult& s) { return s.result.step_time; },
                             "Seconds from the first task's start to the last task's end.")
      .def_property_readonly("oom", [](const SimulationResult& s) { return s.result.oom; })
      .def_property_readonly("oom_messages", [](const SimulationResult& s) { return s.result.oom_messages; })
      .def_property_readonly("bytes_moved", [](const SimulationResult& s) { return s.result.bytes_moved; })
      .def_property_readonly("num_tasks", [](const SimulationResult& s) { return s.result.num_tasks; })
      .def_property_readonly("busy_time", [](const SimulationResult& s) {
             return DeviceColumn<double>(s.result, [](const DeviceStats& d) { return d.busy_seconds; }); },
             "Compute seconds per device.")
      .def_property_readonly("utilisation", [](const SimulationResult& s) {
             return DeviceColumn<double>(s.result, [](const DeviceStats& d) { return d.utilisation; }); })
      .def_property_readonly("peak_memory", [](const SimulationResult& s) {
             return DeviceColumn<int64_t>(s.result, [](const DeviceStats& d) { return d.peak_bytes; }); },
             "Peak bytes per device.")
      .def_property_readonly("link_bytes", [](const SimulationResult& s) {
             std::vector<int64_t> v;
             for (const LinkStats& l : s.result.links) v.push_back(l.bytes);
             return ToArray(v);
           }, "Bytes per link (direction), indexed like Topology links.")
      .def_property_readonly("critical_path", [](const SimulationResult& s) { return ToArray(s.result.critical_path); },
                             "Op ids of the compute tasks on the critical path, in time order.")
      .def("write_trace", [](const SimulationResult& s, const std::string& path) {
             if (!s.has_timeline)
               throw py::value_error("write_trace needs the timeline: simulate(..., trace=True)");
             Check(WriteChromeTrace(s.result, *s.graph, *s.topology, path));
           }, py::arg("path"), "Writes a Chrome trace (opens in Perfetto) of the step.")
      .def("__repr__", [](const SimulationResult& s) {
        return "<devplace.SimulationResult step_time=" + std::to_string(s.result.step_time) +
               (s.result.oom ? " OOM" : "") + ">";
      });
  m.def("simulate", &RunSimulate, py::arg("graph"), py::arg("topology"), py::arg("strategy"),
        py::arg("costs") = py::none(), py::arg("trace") = false,
        "Simulates one training step (docs/simulator.md). trace=True keeps the timeline for write_trace.");

  py::class_<SearchOutcome>(m, "SearchResult", "The strategy a search found, with the evaluations and time it took.")
      .def_readonly("strategy", &SearchOutcome::strategy)
      .def_readonly("evaluations", &SearchOutcome::evaluations)
      .def_readonly("seconds", &SearchOutcome::seconds);
  m.def("search", &RunSearch, py::arg("algo"), py::arg("graph"), py::arg("topology"), py::kw_only(),
        py::arg("budget_evals") = 0, py::arg("budget_seconds") = 0.0, py::arg("seed") = 0,
        py::arg("initial") = py::none(), py::arg("costs") = py::none(),
        "Runs a placement algorithm of the search registry (search_algorithms()); budgets <= 0 are unlimited.");
  m.def("search_algorithms", &SearchAlgorithmNames, "Names accepted by search().");
}

}  // namespace devplace::python
