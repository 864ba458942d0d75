// `devplace topo show T.yaml [--json]`: validates a machine description and prints its devices, links and routes.
#include <iostream>
#include <map>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/file_command.h"
#include "core/topology_yaml.h"

namespace devplace::cli {

namespace {

nlohmann::json TopologyJson(const Topology& t) {
  nlohmann::json devices = nlohmann::json::array();
  for (const Device& d : t.devices())
    devices.push_back({{"name", d.name},
                       {"kind", d.kind},
                       {"host", d.host},
                       {"peak_flops_f32", d.peak_flops_f32},
                       {"peak_flops_f16", PeakFlops(d, DType::kF16)},
                       {"memory_bandwidth", d.memory_bandwidth},
                       {"memory_bytes", d.memory_bytes}});
  nlohmann::json links = nlohmann::json::array();
  for (const Link& l : t.links())
    links.push_back({{"from", t.node_name(l.src)},
                     {"to", t.node_name(l.dst)},
                     {"bandwidth", l.bandwidth},
                     {"latency", l.latency},
                     {"kind", l.kind}});
  nlohmann::json routes = nlohmann::json::array();
  for (DeviceId a = 0; a < t.num_devices(); ++a)
    for (DeviceId b = 0; b < t.num_devices(); ++b) {
      if (a == b) continue;
      nlohmann::json hops = nlohmann::json::array();
      for (LinkId l : t.route(a, b)) hops.push_back(t.node_name(t.link(l).dst));
      routes.push_back({{"from", t.device(a).name}, {"to", t.device(b).name}, {"via", hops},
                        {"time_1mib_s", t.transfer_time_estimate(a, b, 1 << 20)}});
    }
  return {{"name", t.name()},         {"num_devices", t.num_devices()}, {"num_switches", t.num_switches()},
          {"num_links", t.num_links()}, {"devices", devices},           {"links", links},
          {"routes", routes}};
}

void PrintHuman(const Topology& t) {
  std::cout << "topology " << t.name() << ": " << t.num_devices() << " devices, " << t.num_switches()
            << " switches, " << t.num_links() << " directed links\n\n";
  std::map<std::string, int> hosts;
  for (const Device& d : t.devices()) ++hosts[d.host];
  std::cout << "devices (" << hosts.size() << " host" << (hosts.size() == 1 ? "" : "s") << "):\n";
  for (const Device& d : t.devices()) {
    std::cout << "  " << d.name << "  " << d.kind << " on " << d.host << ": " << FormatCount(d.peak_flops_f32)
              << "FLOP/s f32";
    if (d.peak_flops_f16 > 0) std::cout << ", " << FormatCount(d.peak_flops_f16) << "FLOP/s f16";
    std::cout << ", " << FormatBytes(static_cast<double>(d.memory_bytes)) << " at "
              << FormatBytes(d.memory_bandwidth) << "/s\n";
  }
  std::map<std::string, std::pair<int, double>> kinds;
  for (const Link& l : t.links()) {
    auto& [count, bandwidth] = kinds[l.kind];
    ++count;
    bandwidth = l.bandwidth;
  }
  std::cout << "\nlinks by kind:\n";
  for (const auto& [kind, info] : kinds)
    std::cout << "  " << kind << ": " << info.first << " directed links (" << FormatBytes(info.second) << "/s)\n";
  std::cout << "\nroutes (hops, time for 1 MiB on an idle machine) from " << t.device(0).name << ":\n";
  for (DeviceId b = 1; b < t.num_devices(); ++b) {
    std::cout << "  -> " << t.device(b).name << ": ";
    std::string via;
    for (LinkId l : t.route(0, b)) via += (via.empty() ? "" : " > ") + t.node_name(t.link(l).dst);
    std::cout << via << "  (" << FormatSeconds(t.transfer_time_estimate(0, b, 1 << 20)) << ")\n";
  }
}

}  // namespace

void RegisterTopoCommands(CLI::App& app, CommandContext& ctx) {
  CLI::App* topo = app.add_subcommand("topo", "Inspect machine descriptions (devices, links, routes)");
  topo->require_subcommand(1);
  AddFileCommand(topo, ctx, {"show", "Validate a topology YAML file and print its devices, links and routes",
                             "topology", "Topology YAML file (see configs/topologies/)",
                             [](const std::string& path, bool json) {
                               const Topology t = Unwrap(ReadTopologyFile(path));
                               if (json) PrintJson(TopologyJson(t));
                               else PrintHuman(t);
                             }});
}

}  // namespace devplace::cli
