// Python bindings of the value types: Graph (with NumPy views of its arrays), Op, Topology, Strategy and
// CostModel, and the ways to get a graph (a file, an ONNX model, the zoo, a family).
#include <pybind11/operators.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/graph.h"
#include "core/graph_dot.h"
#include "core/graph_json.h"
#include "core/strategy.h"
#include "core/strategy_json.h"
#include "core/topology.h"
#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "datasets/import/importers.h"
#include "datasets/zoo.h"
#include "python/bindings.h"
#include "sim/cost_model.h"

namespace devplace::python {
namespace {

using GraphPtr = std::shared_ptr<Graph>;

GraphPtr Share(Graph graph) { return std::make_shared<Graph>(std::move(graph)); }

// A read-only NumPy view of one field of the graph's edge array (no copy): `self` keeps the graph alive.
py::array EdgeView(const Graph& graph, py::handle self, py::dtype dtype, std::vector<py::ssize_t> shape,
                   std::vector<py::ssize_t> strides, size_t offset) {
  const char* base = reinterpret_cast<const char*>(graph.edges().data());
  if (graph.num_edges() == 0) return py::array(dtype, shape, strides);
  py::array view(dtype, shape, strides, base + offset, self);
  view.attr("setflags")(py::arg("write") = false);
  return view;
}

template <class T, class F>
py::array_t<T> OpColumn(const Graph& graph, F field) {
  py::array_t<T> array(graph.num_ops());
  T* out = array.mutable_data();
  for (const Op& op : graph.ops()) *out++ = static_cast<T>(field(op));
  return array;
}

template <class F>
std::vector<std::string> OpStrings(const Graph& graph, F field) {
  std::vector<std::string> out;
  out.reserve(graph.ops().size());
  for (const Op& op : graph.ops()) out.push_back(field(op));
  return out;
}

GraphPtr FromOnnx(const std::string& path, std::optional<int64_t> batch) {
  ImportOptions options;
  options.batch = batch.value_or(0);
  ImportResult imported = Unwrap(ImportModelFile(path, options));
  if (imported.format != "onnx") throw py::value_error(path + ": not an ONNX model (read as " + imported.format + ")");
  for (const std::string& warning : imported.warnings)
    PyErr_WarnEx(PyExc_UserWarning, warning.c_str(), 1);
  return Share(std::move(imported.graph));
}

GraphPtr FromOnnxBytes(const py::bytes& data, const std::string& name, std::optional<int64_t> batch) {
  ImportOptions options;
  options.batch = batch.value_or(0);
  ImportResult imported = Unwrap(ImportOnnxModel(std::string_view(data), name, name, options));
  for (const std::string& warning : imported.warnings) PyErr_WarnEx(PyExc_UserWarning, warning.c_str(), 1);
  return Share(std::move(imported.graph));
}

void BindGraphClass(py::module_& m) {
  py::class_<Op>(m, "Op", "One operation of a graph (read-only copy).")
      .def_readonly("name", &Op::name)
      .def_readonly("type", &Op::type)
      .def_readonly("layer", &Op::layer)
      .def_property_readonly("role", [](const Op& op) { return std::string(ToString(op.role)); })
      .def_readonly("shape", &Op::shape)
      .def_property_readonly("dtype", [](const Op& op) { return std::string(ToString(op.dtype)); })
      .def_readonly("param_bytes", &Op::param_bytes)
      .def_readonly("flops", &Op::flops)
      .def_readonly("colocation", &Op::colocation)
      .def_readonly("forward_op", &Op::forward_op)
      .def_property_readonly("output_bytes", [](const Op& op) { return OutputBytes(op); })
      .def("__repr__", [](const Op& op) { return "<devplace.Op '" + op.name + "' " + op.type + ">"; });

  py::class_<Graph, GraphPtr>(m, "Graph",
                              "An immutable, validated training graph. Arrays are indexed by op id (ops) or "
                              "edge id (edges).")
      .def_static("load", [](const std::string& path) { return Share(Unwrap(ReadGraphFile(path))); },
                  py::arg("path"), "Reads a graph JSON file (docs/formats.md).")
      .def_static("from_json", [](const std::string& text) { return Share(Unwrap(GraphFromJson(text, "<json>"))); },
                  py::arg("text"))
      .def_static("from_onnx", &FromOnnx, py::arg("path"), py::arg("batch") = py::none(),
                  "Imports an ONNX model as a training graph (docs/importers.md); batch sets the batch size.")
      .def_static("from_onnx_bytes", &FromOnnxBytes, py::arg("data"), py::arg("name") = "model",
                  py::arg("batch") = py::none(), "Imports a serialized ONNX model (bytes) as a training graph.")
      .def("save", [](const Graph& g, const std::string& path) { Check(WriteGraphFile(g, path)); }, py::arg("path"))
      .def("to_json", &GraphToJson)
      .def_property_readonly("name", &Graph::name)
      .def_property_readonly("num_ops", &Graph::num_ops)
      .def_property_readonly("num_edges", &Graph::num_edges)
      .def_property_readonly("total_flops", &Graph::total_flops)
      .def_property_readonly("total_param_bytes", &Graph::total_param_bytes)
      .def("__len__", &Graph::num_ops)
      .def("op", [](const Graph& g, OpId id) {
             if (id < 0 || id >= g.num_ops()) throw py::index_error("op id out of range");
             return g.op(id);
           }, py::arg("id"))
      .def("find", &Graph::find, py::arg("name"), "The id of the op with this name, or -1.")
      .def_property_readonly("flops", [](const Graph& g) { return OpColumn<double>(g, [](const Op& op) { return op.flops; }); },
                             "FLOPs per op (float64).")
      .def_property_readonly("param_bytes", [](const Graph& g) {
             return OpColumn<int64_t>(g, [](const Op& op) { return op.param_bytes; }); }, "Parameter bytes per op.")
      .def_property_readonly("output_bytes", [](const Graph& g) {
             return OpColumn<int64_t>(g, [](const Op& op) { return OutputBytes(op); }); }, "Output bytes per op.")
      .def_property_readonly("roles", [](const Graph& g) {
             return OpColumn<uint8_t>(g, [](const Op& op) { return static_cast<uint8_t>(op.role); }); },
             "Role per op: 0 forward, 1 backward, 2 update.")
      .def_property_readonly("topological_order", [](const Graph& g) { return ToArray(g.topological_order()); })
      .def_property_readonly("op_names", [](const Graph& g) { return OpStrings(g, [](const Op& op) { return op.name; }); })
      .def_property_readonly("op_types", [](const Graph& g) { return OpStrings(g, [](const Op& op) { return op.type; }); })
      .def_property_readonly("layers", [](const Graph& g) { return OpStrings(g, [](const Op& op) { return op.layer; }); })
      .def_property_readonly("colocation", [](const Graph& g) {
             return OpStrings(g, [](const Op& op) { return op.colocation; }); })
      .def_property_readonly("edges", [](py::object self) {
             const Graph& g = self.cast<const Graph&>();
             return EdgeView(g, self, py::dtype::of<int32_t>(), {g.num_edges(), 2},
                             {static_cast<py::ssize_t>(sizeof(Edge)), sizeof(int32_t)}, offsetof(Edge, src));
           }, "(num_edges, 2) int32 [src, dst] per edge: a read-only view of the graph's memory.")
      .def_property_readonly("edge_bytes", [](py::object self) {
             const Graph& g = self.cast<const Graph&>();
             return EdgeView(g, self, py::dtype::of<int64_t>(), {g.num_edges()},
                             {static_cast<py::ssize_t>(sizeof(Edge))}, offsetof(Edge, bytes));
           }, "Bytes carried by each edge (int64): a read-only view of the graph's memory.")
      .def("to_dot", [](const Graph& g, const Topology* topology, const Strategy* strategy, int32_t max_ops) {
             return Unwrap(GraphToDot(g, topology, strategy, DotOptions{.max_ops = max_ops}));
           }, py::arg("topology") = py::none(), py::arg("strategy") = py::none(), py::arg("max_ops") = DotOptions{}.max_ops,
           "Graphviz DOT text: coloured by device with a strategy (and its topology), colocation groups clustered, "
           "collapsed to one node per layer above max_ops ops (0: never).")
      .def("__repr__", [](const Graph& g) {
        return "<devplace.Graph '" + g.name() + "' " + std::to_string(g.num_ops()) + " ops, " +
               std::to_string(g.num_edges()) + " edges>";
      });

  m.def("zoo", [](const std::string& name, int64_t batch) { return Share(Unwrap(BuildZooModel(name, batch))); },
        py::arg("name"), py::arg("batch") = 0,
        "A model of the zoo (docs/datasets.md) as a training graph; batch 0 is the literature's batch.");
  m.def("zoo_names", &ZooModelNames);
  m.def("family", [](const std::string& name, uint64_t seed, int32_t target_ops) {
          return Share(Unwrap(GenerateFamilyMember(name, seed, FamilyOptions{.target_ops = target_ops})));
        }, py::arg("name"), py::arg("seed") = 0, py::arg("target_ops") = 0,
        "A member of a graph family (cifar10, ptb, nmt, transformer, lstmlm), deterministic in (name, seed, target_ops).");
  m.def("family_names", &FamilyNames);
}

void BindTopologyAndStrategy(py::module_& m) {
  using TopologyPtr = std::shared_ptr<Topology>;
  py::class_<Topology, TopologyPtr>(m, "Topology", "An immutable machine: devices, switches and links.")
      .def_static("load", [](const std::string& path) { return std::make_shared<Topology>(Unwrap(ReadTopologyFile(path))); },
                  py::arg("path"), "Reads a topology YAML file (docs/topology-format.md).")
      .def_static("from_yaml", [](const std::string& text) {
             return std::make_shared<Topology>(Unwrap(TopologyFromYaml(text, "<yaml>"))); }, py::arg("text"))
      .def("to_yaml", &TopologyToYaml)
      .def_property_readonly("name", &Topology::name)
      .def_property_readonly("num_devices", &Topology::num_devices)
      .def_property_readonly("num_links", &Topology::num_links)
      .def_property_readonly("device_names", [](const Topology& t) {
             std::vector<std::string> names;
             for (const Device& d : t.devices()) names.push_back(d.name);
             return names;
           })
      .def_property_readonly("memory_bytes", [](const Topology& t) {
             std::vector<int64_t> v;
             for (const Device& d : t.devices()) v.push_back(d.memory_bytes);
             return ToArray(v);
           }, "Memory capacity per device (int64 bytes).")
      .def_property_readonly("peak_flops", [](const Topology& t) {
             std::vector<double> v;
             for (const Device& d : t.devices()) v.push_back(d.peak_flops_f32);
             return ToArray(v);
           }, "Peak f32 FLOP/s per device.")
      .def("find_device", &Topology::find_device, py::arg("name"), "The id of the device with this name, or -1.")
      .def("__repr__", [](const Topology& t) {
        return "<devplace.Topology '" + t.name() + "' " + std::to_string(t.num_devices()) + " devices>";
      });

  py::class_<Strategy>(m, "Strategy", "A config per op: the devices its parts run on and its partition degrees.")
      .def_static("from_placement", &Strategy::FromPlacement, py::arg("device_of_op"),
                  "Every op on one device: device_of_op[i] for op i.")
      .def_static("all_on", [](const Graph& g, DeviceId device) { return Strategy::AllOn(g.num_ops(), device); },
                  py::arg("graph"), py::arg("device"))
      .def_static("load", [](const std::string& path, const Graph& g, const Topology& t) {
             return Unwrap(ReadStrategyFile(path, g, t)); }, py::arg("path"), py::arg("graph"), py::arg("topology"),
             "Reads a strategy JSON file and validates it against the graph and topology.")
      .def("save", [](const Strategy& s, const std::string& path, const Graph& g, const Topology& t) {
             Check(WriteStrategyFile(s, g, t, path)); }, py::arg("path"), py::arg("graph"), py::arg("topology"))
      .def("to_json", [](const Strategy& s, const Graph& g, const Topology& t) { return StrategyToJson(s, g, t); },
           py::arg("graph"), py::arg("topology"))
      .def("validate", [](const Strategy& s, const Graph& g, const Topology& t) { Check(ValidateStrategy(s, g, t)); },
           py::arg("graph"), py::arg("topology"), "Raises ValueError naming the op when the strategy does not fit.")
      .def_property_readonly("num_ops", [](const Strategy& s) { return s.configs.size(); })
      .def_property_readonly("is_plain_placement", &Strategy::is_plain_placement)
      .def_property_readonly("placement", [](const Strategy& s) {
             std::vector<int32_t> v;
             for (const OpConfig& c : s.configs) v.push_back(c.num_parts() == 1 ? c.devices[0] : -1);
             return ToArray(v);
           }, "Device per op (int32), -1 for ops split over several devices.")
      .def_property_readonly("configs", [](const Strategy& s) {
             std::vector<std::pair<std::vector<DeviceId>, std::vector<int32_t>>> out;
             for (const OpConfig& c : s.configs) out.emplace_back(c.devices, c.degrees);
             return out;
           }, "Per op: (devices, degrees).")
      .def(py::self == py::self)
      .def("__repr__", [](const Strategy& s) {
        return "<devplace.Strategy " + std::to_string(s.configs.size()) + " ops" +
               (s.is_plain_placement() ? "" : ", partitioned") + ">";
      });

  py::class_<CostModel>(m, "CostModel", "How long one part of an op takes on a device.")
      .def(py::init<>(), "The analytic roofline model with default settings.")
      .def_static("load", [](const std::string& path) { return Unwrap(ReadCostModelFile(path)); }, py::arg("path"),
                  "A profiled cost table (devplace profile), analytic where it has no entry.")
      .def("describe", &CostModel::Describe);
}

}  // namespace

void BindGraph(py::module_& m) {
  BindGraphClass(m);
  BindTopologyAndStrategy(m);
}

}  // namespace devplace::python
