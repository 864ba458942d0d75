// `devplace calibrate -t T -o T-calibrated.yaml [--max-mib M] [--repeats N] [--backend B] [--json]`: measures link
// latency and bandwidth between the executor's workers (copies of increasing size, fitted) and each device's peak
// FLOP/s and memory bandwidth, and writes them into a copy of the topology.
#include <iostream>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "apps/inputs.h"
#include "core/atomic_file.h"
#include "core/topology_yaml.h"
#include "exec/calibration.h"

namespace devplace::cli {

void RegisterCalibrateCommand(CLI::App& app, CommandContext& ctx) {
  struct Options {
    std::string topology, output, backend = "auto";
    int64_t max_mib = 64;
    int32_t repeats = 9;
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
  cmd->callback([opts, &ctx]() {
    Topology topology = LoadTopology(opts->topology);
    CalibrationOptions options;
    options.max_bytes = opts->max_mib << 20;
    options.repeats = opts->repeats;
    options.backend = opts->backend;
    CalibrationResult result = Unwrap(Calibrate(topology, options));
    Topology calibrated = Unwrap(ApplyCalibration(topology, result));
    Check(WriteFileAtomic(opts->output, "# Calibrated by `devplace calibrate -t " + opts->topology + "` (" +
                                            result.backend.name + " backend).\n" + TopologyToYaml(calibrated)));
    if (opts->json) {
      nlohmann::json pairs = nlohmann::json::array(), devices = nlohmann::json::array();
      for (const PairCalibration& p : result.pairs) {
        nlohmann::json points = nlohmann::json::array();
        for (const CopyPoint& c : p.points) points.push_back({{"bytes", c.bytes}, {"us", c.seconds * 1e6}});
        pairs.push_back({{"src", topology.device(p.src).name}, {"dst", topology.device(p.dst).name},
                         {"latency_us", p.latency * 1e6}, {"bandwidth_gbs", p.bandwidth / 1e9},
                         {"max_relative_error", p.max_relative_error}, {"points", points}});
      }
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        devices.push_back({{"name", topology.device(d).name}, {"peak_gflops", result.peak_flops[d] / 1e9},
                           {"memory_bandwidth_gbs", result.memory_bandwidth[d] / 1e9}});
      PrintJson({{"topology", topology.name()}, {"output", opts->output}, {"backend", result.backend.name},
                 {"backend_note", result.backend.note}, {"pairs", pairs}, {"devices", devices}});
    } else {
      if (!result.backend.note.empty()) std::cerr << "devplace: " << result.backend.note << "\n";
      for (const PairCalibration& p : result.pairs)
        std::cout << topology.device(p.src).name << " -> " << topology.device(p.dst).name << ": latency "
                  << FormatSeconds(p.latency) << ", bandwidth " << FormatBytes(p.bandwidth) << "/s (fit within "
                  << static_cast<int>(p.max_relative_error * 100 + 0.5) << "% over " << p.points.size()
                  << " sizes)\n";
      for (DeviceId d = 0; d < topology.num_devices(); ++d)
        std::cout << topology.device(d).name << ": " << FormatCount(result.peak_flops[d]) << "FLOP/s, memory "
                  << FormatBytes(result.memory_bandwidth[d]) << "/s\n";
      std::cout << "wrote " << opts->output << "\n";
    }
    ctx.exit_code = 0;
  });
}

}  // namespace devplace::cli
