#include "core/topology_yaml.h"

#include <iomanip>
#include <sstream>

#include "core/atomic_file.h"
#include "core/json_reader.h"
#include "core/mesh.h"

namespace devplace {

namespace {

constexpr double kGiga = 1e9;
constexpr double kTera = 1e12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMicro = 1e-6;

std::string Substitute(std::string text, int64_t index) {
  for (size_t pos; (pos = text.find("{i}")) != std::string::npos;) text.replace(pos, 3, std::to_string(index));
  return text;
}

void ReadDevices(const nlohmann::json& list, const std::string& source, TopologyBuilder* builder) {
  RequireArray(list, source, "devices");
  if (list.empty()) FailAt(source, "devices", "must list at least one device");
  for (size_t i = 0; i < list.size(); ++i) {
    JsonObject obj(list[i], source, "devices[" + std::to_string(i) + "]");
    std::string name = obj.string("name");
    int64_t count = obj.integer_or("count", 1, 1, 4096);
    int64_t first = obj.integer_or("index_from", 0, 0);
    if (count > 1 && name.find("{i}") == std::string::npos)
      obj.fail("name", "with count > 1 the name needs an {i} placeholder, e.g. gpu{i}");
    Device d;
    d.kind = obj.string("kind");
    std::string host = obj.string_or("host", "host0");
    d.peak_flops_f32 = obj.number("peak_tflops", 1e-9) * kTera;
    d.peak_flops_f16 = obj.number_or("peak_tflops_f16", 0.0, 0.0) * kTera;
    d.memory_bandwidth = obj.number("memory_bandwidth_gbs", 1e-9) * kGiga;
    d.memory_bytes = static_cast<int64_t>(obj.number("memory_gib", 1e-9) * kGiB);
    obj.finish();
    for (int64_t k = 0; k < count; ++k) {
      Device copy = d;
      copy.name = Substitute(name, first + k);
      copy.host = Substitute(host, first + k);
      if (builder->find_node(copy.name) >= 0) FailAt(source, obj.path_of("name"), "duplicate name '" + copy.name + "'");
      builder->add_device(std::move(copy));
    }
  }
}

void ReadSwitches(const nlohmann::json& list, const std::string& source, TopologyBuilder* builder) {
  RequireArray(list, source, "switches");
  for (size_t i = 0; i < list.size(); ++i) {
    JsonObject obj(list[i], source, "switches[" + std::to_string(i) + "]");
    Switch s{obj.string("name"), obj.string_or("host", "host0")};
    obj.finish();
    if (builder->find_node(s.name) >= 0) FailAt(source, obj.path_of("name"), "duplicate name '" + s.name + "'");
    builder->add_switch(std::move(s));
  }
}

void ReadLinks(const nlohmann::json& list, const std::string& source, TopologyBuilder* builder) {
  RequireArray(list, source, "links");
  for (size_t i = 0; i < list.size(); ++i) {
    JsonObject obj(list[i], source, "links[" + std::to_string(i) + "]");
    auto node = [&](const nlohmann::json& v, const std::string& path) {
      std::string name = ReadString(v, source, path);
      NodeId id = builder->find_node(name);
      if (id < 0) FailAt(source, path, "unknown device or switch '" + name + "'");
      return id;
    };
    double bandwidth = 0;
    if (obj.has("bandwidth_gbs") == obj.has("bandwidth_gbit"))
      obj.fail("bandwidth_gbs", "give exactly one of bandwidth_gbs (GB/s) or bandwidth_gbit (Gbit/s)");
    bandwidth = obj.has("bandwidth_gbs") ? obj.number("bandwidth_gbs", 1e-12) * kGiga
                                         : obj.number("bandwidth_gbit", 1e-12) * kGiga / 8;
    Link proto;
    proto.bandwidth = bandwidth;
    proto.latency = obj.number("latency_us", 0.0) * kMicro;
    proto.kind = obj.string("kind");
    proto.message_cost = obj.number_or("message_us", 0.0, 0.0) * kMicro;
    proto.step_cost = obj.number_or("step_us", 0.0, 0.0) * kMicro;
    proto.step_bandwidth = obj.number_or("step_bandwidth_gbs", 0.0, 0.0) * kGiga;
    auto add = [&](NodeId a, NodeId b) {
      Link link = proto;
      link.src = a;
      link.dst = b;
      builder->add_link(std::move(link));
    };
    int forms = obj.has("from") + obj.has("between") + obj.has("hub");
    if (forms != 1) obj.fail("from", "give exactly one of from/to, between or hub/nodes");
    if (obj.has("from")) {
      NodeId a = node(obj.required("from"), obj.path_of("from"));
      NodeId b = node(obj.required("to"), obj.path_of("to"));
      add(a, b);
    } else if (obj.has("between")) {
      const nlohmann::json& names = RequireArray(obj.required("between"), source, obj.path_of("between"));
      if (names.size() < 2) obj.fail("between", "needs at least two nodes");
      std::vector<NodeId> ids;
      for (size_t k = 0; k < names.size(); ++k)
        ids.push_back(node(names[k], obj.path_of("between") + "[" + std::to_string(k) + "]"));
      for (size_t a = 0; a < ids.size(); ++a)
        for (size_t b = a + 1; b < ids.size(); ++b) {
          add(ids[a], ids[b]);
          add(ids[b], ids[a]);
        }
    } else {
      NodeId hub = node(obj.required("hub"), obj.path_of("hub"));
      const nlohmann::json& names = RequireArray(obj.required("nodes"), source, obj.path_of("nodes"));
      for (size_t k = 0; k < names.size(); ++k) {
        const NodeId other = node(names[k], obj.path_of("nodes") + "[" + std::to_string(k) + "]");
        add(hub, other);
        add(other, hub);
      }
    }
    obj.finish();
  }
}

std::string Num(double x) {
  std::ostringstream out;
  out << std::setprecision(17) << x;
  return out.str();
}

}  // namespace

Expected<Topology> TopologyFromYaml(const std::string& text, const std::string& source) {
  bool has_meshes = false;
  Expected<TopologyBuilder> builder = CatchInputErrors<TopologyBuilder>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    TopologyBuilder b(root.string("name"));
    root.string_or("description", "");
    ReadDevices(root.required("devices"), source, &b);
    if (const nlohmann::json* switches = root.optional("switches")) ReadSwitches(*switches, source, &b);
    if (const nlohmann::json* links = root.optional("links")) ReadLinks(*links, source, &b);
    has_meshes = root.optional("meshes") != nullptr;  // read by MeshesFromYaml once the devices exist
    root.finish();
    return b;
  });
  if (!builder.ok()) return builder.error();
  Expected<Topology> topology = std::move(builder.value()).Build();
  if (!topology.ok()) return Error{source + ": " + topology.error().message};
  if (has_meshes) {
    Expected<std::vector<Mesh>> meshes = MeshesFromYaml(text, source, *topology);
    if (!meshes.ok()) return meshes.error();
  }
  return topology;
}

Expected<Topology> ReadTopologyFile(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return TopologyFromYaml(*text, path);
}

std::string TopologyToYaml(const Topology& topology) {
  std::ostringstream out;
  out << "name: \"" << topology.name() << "\"\ndevices:\n";
  for (const Device& d : topology.devices()) {
    out << "  - {name: \"" << d.name << "\", kind: \"" << d.kind << "\", host: \"" << d.host
        << "\", peak_tflops: " << Num(d.peak_flops_f32 / kTera);
    if (d.peak_flops_f16 > 0) out << ", peak_tflops_f16: " << Num(d.peak_flops_f16 / kTera);
    out << ", memory_bandwidth_gbs: " << Num(d.memory_bandwidth / kGiga)
        << ", memory_gib: " << Num(static_cast<double>(d.memory_bytes) / kGiB) << "}\n";
  }
  if (topology.num_switches() > 0) {
    out << "switches:\n";
    for (const Switch& s : topology.switches()) out << "  - {name: \"" << s.name << "\", host: \"" << s.host << "\"}\n";
  }
  if (topology.num_links() > 0) {
    out << "links:\n";
    for (const Link& l : topology.links()) {
      out << "  - {from: \"" << topology.node_name(l.src) << "\", to: \"" << topology.node_name(l.dst)
          << "\", bandwidth_gbs: " << Num(l.bandwidth / kGiga) << ", latency_us: " << Num(l.latency / kMicro);
      if (l.message_cost > 0) out << ", message_us: " << Num(l.message_cost / kMicro);
      if (l.step_cost > 0) out << ", step_us: " << Num(l.step_cost / kMicro);
      if (l.step_bandwidth > 0) out << ", step_bandwidth_gbs: " << Num(l.step_bandwidth / kGiga);
      out << ", kind: \"" << l.kind << "\"}\n";
    }
  }
  return out.str();
}

}  // namespace devplace
