// `devplace calibrate -t T -o T-calibrated.yaml [--max-mib M] [--repeats N] [--backend B] [--json]`: measures link
// latency and bandwidth between the executor's workers (copies of increasing size, fitted) and each device's peak
// FLOP/s and memory bandwidth, and the executor's collective steps, and writes them into a copy of the topology. As
// ranks of a process group (torchrun's variables, or --processes N) it also measures point-to-point transfers, the
// ring all-reduce and all-gather and the executor's own cross-process messages between the processes, and writes
// the message fit into the links between devices of different ranks.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "apps/launcher.h"
#include "core/atomic_file.h"
#include "core/topology_yaml.h"
#include "distributed/config.h"
#include "exec/calibration.h"
#include "exec/multiprocess.h"
#include "exec/process_calibration.h"

namespace devplace::cli {

void RegisterCalibrateCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string topology, output, backend = "auto";
    int64_t max_mib = 64;
    int32_t repeats = 9, processes = 1;
    double timeout = 60.0;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Measure links and devices and write them into a topology");
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file to calibrate")->required();
  cmd->add_option("-o,--output", opts->output, "Output topology YAML file")->required();
  cmd->add_option("--max-mib", opts->max_mib, "Largest copy in MiB (default 64)")->check(CLI::Range(1, 4096));
  cmd->add_option("--repeats", opts->repeats, "Timed round trips per size (default 9)")->check(CLI::PositiveNumber);
  cmd->add_option("--backend", opts->backend, "auto, cpu or cuda (default auto)");
  cmd->add_flag("--json", opts->json, "Print one JSON object on stdout");
  cmd->add_option("--processes", opts->processes,
                  "Also measure transfers and collectives between this many processes on this machine (c10d, "
                  "Gloo) and write them into the links between their devices (default 1: threads only)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--timeout", opts->timeout, "Multi-process runs: seconds to wait for the other ranks (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd->callback([opts, &ctx]() {
    Topology topology = LoadTopology(opts->topology);
    if (opts->processes > 1) {  // the topology and the layout are checked once, here, before any rank starts
      Unwrap(RankOfDevices(topology, Strategy{}, opts->processes));
      ctx.exit_code = LaunchLocalRanks(opts->processes, WithoutOption(ctx.args, "--processes"), opts->timeout + 5.0);
      return;
    }
    std::optional<DistributedConfig> distributed = Unwrap(DistributedConfigFromEnv(
        [](const char* name) { return static_cast<const char*>(std::getenv(name)); }, opts->timeout));
    if (distributed && distributed->world_size < 2) distributed.reset();
    std::optional<GroupCalibration> group;
    std::vector<int32_t> rank_of_device;
    if (distributed) {
      rank_of_device = Unwrap(RankOfDevices(topology, Strategy{}, distributed->world_size));
      GroupCalibrationOptions group_options;
      group_options.max_bytes = std::min<int64_t>(opts->max_mib, 16) << 20;
      group_options.repeats = opts->repeats;
      group = Unwrap(CalibrateProcessGroup(*distributed, group_options, &topology));
      if (distributed->rank != 0) {  // rank 0 measures the devices and writes the topology
        ctx.exit_code = 0;
        return;
      }
    }
    CalibrationOptions options;
    options.max_bytes = opts->max_mib << 20;
    options.repeats = opts->repeats;
    options.backend = opts->backend;
    CalibrationResult result = Unwrap(Calibrate(topology, options));
    Topology calibrated = Unwrap(ApplyCalibration(topology, result));
    std::string header = "# Calibrated by `devplace calibrate -t " + opts->topology + "` (" + result.backend.name +
                         " backend).\n";
    if (group) {
      calibrated = Unwrap(ApplyGroupCalibration(calibrated, rank_of_device, *group));
      header += "# Links between devices of different processes (" + std::to_string(group->processes) +
                ", c10d Gloo): the executor's messages " + FormatSeconds(group->messages.latency) + " + bytes / " +
                FormatBytes(group->messages.bandwidth) +
                "/s; the group's all-reduce (the executor's collectives) per step alpha " +
                FormatSeconds(group->all_reduce.latency) +
                ", 1/beta " + FormatBytes(group->all_reduce.bandwidth) + "/s; all-gather alpha " +
                FormatSeconds(group->all_gather.latency) + ", 1/beta " + FormatBytes(group->all_gather.bandwidth) +
                "/s; send " + FormatSeconds(group->send.latency) + " + bytes / " +
                FormatBytes(group->send.bandwidth) + "/s.\n";
    }
    Check(WriteFileAtomic(opts->output, header + TopologyToYaml(calibrated)));
    if (opts->json) {
      nlohmann::json pairs = nlohmann::json::array(), steps = nlohmann::json::array();
      nlohmann::json devices = nlohmann::json::array();
      for (const auto& [list, fits] : {std::pair{&pairs, &result.pairs}, std::pair{&steps, &result.steps}})
        for (const PairCalibration& p : *fits) {
          nlohmann::json points = nlohmann::json::array();
          for (const CopyPoint& c : p.points) points.push_back({{"bytes", c.bytes}, {"us", c.seconds * 1e6}});
          list->push_back({{"src", topology.device(p.src).name}, {"dst", topology.device(p.dst).name},
                           {"latency_us", p.latency * 1e6}, {"bandwidth_gbs", p.bandwidth / 1e9},
                           {"max_relative_error", p.max_relative_error}, {"points", points}});
        }
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        devices.push_back({{"name", topology.device(d).name}, {"peak_gflops", result.peak_flops[d] / 1e9},
                           {"memory_bandwidth_gbs", result.memory_bandwidth[d] / 1e9}});
      nlohmann::json out = {{"topology", topology.name()}, {"output", opts->output},
                            {"backend", result.backend.name},  {"backend_note", result.backend.note},
                            {"pairs", pairs},                  {"steps", steps},
                            {"devices", devices}};
      if (group) {
        auto fit = [](const PairCalibration& p) {
          nlohmann::json points = nlohmann::json::array();
          for (const CopyPoint& c : p.points) points.push_back({{"bytes", c.bytes}, {"us", c.seconds * 1e6}});
          return nlohmann::json{{"alpha_us", p.latency * 1e6}, {"beta_ns_per_byte", 1e9 / p.bandwidth},
                                {"max_relative_error", p.max_relative_error}, {"points", points}};
        };
        out["process_group"] = {{"processes", group->processes}, {"send", fit(group->send)},
                                {"all_reduce", fit(group->all_reduce)}, {"all_gather", fit(group->all_gather)},
                                {"messages", fit(group->messages)}};
      }
      PrintJson(out);
    } else {
      if (!result.backend.note.empty()) std::cerr << "devplace: " << result.backend.note << "\n";
      for (const auto& [what, fits] : {std::pair{"", &result.pairs}, std::pair{" collective step", &result.steps}})
        for (const PairCalibration& p : *fits)
          std::cout << topology.device(p.src).name << " -> " << topology.device(p.dst).name << what << ": latency "
                    << FormatSeconds(p.latency) << ", bandwidth " << FormatBytes(p.bandwidth) << "/s (fit within "
                    << static_cast<int>(p.max_relative_error * 100 + 0.5) << "% over " << p.points.size()
                    << " sizes)\n";
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        std::cout << topology.device(d).name << ": " << FormatCount(result.peak_flops[d]) << "FLOP/s, memory "
                  << FormatBytes(result.memory_bandwidth[d]) << "/s\n";
      if (group)
        for (const auto& [name, p] : {std::pair<const char*, const PairCalibration*>{"send", &group->send},
                                      {"all-reduce", &group->all_reduce}, {"all-gather", &group->all_gather},
                                      {"executor message", &group->messages}})
          std::cout << group->processes << " processes, " << name << " per step: alpha " << FormatSeconds(p->latency)
                    << ", 1/beta " << FormatBytes(p->bandwidth) << "/s (fit within "
                    << static_cast<int>(p->max_relative_error * 100 + 0.5) << "% over " << p->points.size()
                    << " sizes)\n";
      std::cout << "wrote " << opts->output << "\n";
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
