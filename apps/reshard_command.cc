// `devplace reshard --topology T --src-mesh M --src-spec S --dst-mesh M --dst-spec S --shape 1024,1024,512
// --method broadcast|send-recv|alpa|global-allgather --balance naive|lb-only|dfs|random-greedy|ours [--json]`:
// the simulated time of one cross-mesh resharding on an idle machine (core/reshard.h, sim/reshard.h). A mesh is a
// name the topology declares under `meshes:` or SHAPE@FIRST ("1x4@4": devices 4..7); a spec is in Alpa's
// notation ("S0,R,S1"). With --method all and/or --balance all, one line (or JSON entry) per combination; with
// --suite S.yaml, every case of the suite (core/reshard_suite.h) instead of one.
#include <algorithm>
#include <charconv>
#include <iostream>
#include <memory>

#include "apps/cli_util.h"
#include "apps/commands.h"
#include "core/mesh.h"
#include "core/reshard.h"
#include "core/reshard_suite.h"
#include "core/topology_yaml.h"
#include "sim/reshard.h"

namespace devplace::cli {
namespace {

struct ReshardCliOptions {
  std::string topology, suite, src_mesh, src_spec, dst_mesh, dst_spec, shape, method = "broadcast", balance = "ours";
  int32_t chunks = 32, trials = 16;
  int64_t elem_bytes = 4;
  uint64_t seed = 0;
  bool json = false;
};

// A declared mesh by name, else the SHAPE@FIRST form; errors name the option.
Mesh ResolveMesh(const std::string& text, const std::vector<Mesh>& declared, const Topology& topology,
                 const char* option) {
  for (const Mesh& m : declared)
    if (m.name == text) return m;
  Expected<Mesh> mesh = MeshAt(text, topology, text);
  if (!mesh.ok()) throw CliError(std::string(option) + ": " + mesh.error().message);
  return *mesh;
}

std::vector<int64_t> ParseShape(const std::string& text) {
  std::vector<int64_t> shape;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t end = std::min(text.find(',', pos), text.size());
    int64_t extent = 0;
    auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, extent);
    if (ec != std::errc() || ptr != text.data() + end || extent < 1)
      throw CliError("--shape: '" + text + "': expected extents >= 1 separated by commas, e.g. 1024,1024,512");
    shape.push_back(extent);
    pos = end + 1;
  }
  return shape;
}

// The values named by `text` ("all": every one of `all`), parsed with `parse`.
template <class Enum, class Parse>
std::vector<Enum> Choices(const std::string& text, std::vector<Enum> all, Parse parse, const char* option) {
  if (text == "all") return all;
  Expected<Enum> one = parse(text);
  if (!one.ok()) throw CliError(std::string(option) + ": " + one.error().message);
  return {*one};
}

// One case resolved against the topology: its unit tasks. Errors name the field: "<where><field>" in a suite
// ("S.yaml: cases[2].src_spec"), the option for a single case (where empty: "--src-spec").
std::vector<UnitTask> CaseTasks(const ReshardCase& c, int64_t elem_bytes, const Topology& topology,
                                const std::vector<Mesh>& declared, const std::string& where) {
  auto field = [&](std::string name) {
    if (!where.empty()) return where + name;
    std::replace(name.begin(), name.end(), '_', '-');
    return "--" + name;
  };
  const Mesh src = ResolveMesh(c.src_mesh, declared, topology, field("src_mesh").c_str());
  const Mesh dst = ResolveMesh(c.dst_mesh, declared, topology, field("dst_mesh").c_str());
  auto spec = [&](const std::string& text, const Mesh& mesh, const std::string& name) {
    Expected<ShardingSpec> s = ParseAlpaSpec(text, mesh);
    if (!s.ok()) throw CliError(field(name) + ": " + s.error().message);
    if (s->dims.size() != c.shape.size())
      throw CliError(field(name) + ": '" + text + "' needs one entry per axis of the shape (" +
                     std::to_string(c.shape.size()) + ")");
    return *s;
  };
  const ShardingSpec src_spec = spec(c.src_spec, src, "src_spec"), dst_spec = spec(c.dst_spec, dst, "dst_spec");
  Expected<std::vector<UnitTask>> tasks = UnitTasks(c.shape, elem_bytes, src, src_spec, dst, dst_spec);
  if (!tasks.ok()) throw CliError(field("src_spec") + "/" + (where.empty() ? "--dst-spec" : "dst_spec") + ": " +
                                  tasks.error().message);
  return *tasks;
}

struct Row {
  ReshardMethod method;
  ReshardBalance balance;
  ReshardResult result;
};

// Every (method, balance) the options name, priced on `tasks`.
std::vector<Row> PriceAll(const ReshardCliOptions& o, const Topology& topology, const std::vector<UnitTask>& tasks) {
  const std::vector<ReshardMethod> methods =
      Choices<ReshardMethod>(o.method, {ReshardMethod::kSendRecv, ReshardMethod::kAlpa, ReshardMethod::kGlobalAllGather,
                         ReshardMethod::kBroadcast}, ParseReshardMethod, "--method");
  const std::vector<ReshardBalance> balances =
      Choices<ReshardBalance>(o.balance, {ReshardBalance::kNaive, ReshardBalance::kLoadBalance, ReshardBalance::kDfs,
                          ReshardBalance::kRandomGreedy, ReshardBalance::kOurs}, ParseReshardBalance, "--balance");
  std::vector<Row> rows;
  for (ReshardMethod m : methods)
    for (ReshardBalance b : balances) {
      ReshardOptions ro;
      ro.method = m;
      ro.balance = b;
      ro.broadcast_chunks = o.chunks;
      ro.random_trials = o.trials;
      ro.seed = o.seed;
      rows.push_back({m, b, Unwrap(PlanReshard(topology, tasks, ro))});
    }
  return rows;
}

nlohmann::json CaseJson(const ReshardCase& c, const std::vector<UnitTask>& tasks, const std::vector<Row>& rows) {
  nlohmann::json results = nlohmann::json::array();
  for (const Row& r : rows)
    results.push_back({{"method", ToString(r.method)},
                       {"balance", ToString(r.balance)},
                       {"chosen", ToString(r.result.chosen)},
                       {"seconds", r.result.seconds},
                       {"bytes_moved", r.result.bytes_moved}});
  int64_t slice_bytes = 0;
  for (const UnitTask& t : tasks) slice_bytes += t.bytes;
  return {{"name", c.name}, {"src_mesh", c.src_mesh}, {"src_spec", c.src_spec}, {"dst_mesh", c.dst_mesh},
          {"dst_spec", c.dst_spec}, {"shape", c.shape}, {"unit_tasks", tasks.size()}, {"slice_bytes", slice_bytes},
          {"results", results}};
}

void Run(const ReshardCliOptions& o) {
  const Topology topology = Unwrap(ReadTopologyFile(o.topology));
  const std::vector<Mesh> declared = Unwrap(ReadTopologyMeshes(o.topology, topology));
  ReshardSuite suite;
  if (!o.suite.empty()) {
    if (!o.src_mesh.empty() || !o.src_spec.empty() || !o.dst_mesh.empty() || !o.dst_spec.empty() || !o.shape.empty())
      throw CliError("--suite: give either a suite or one case (--src-mesh ... --shape), not both");
    suite = Unwrap(ReadReshardSuiteFile(o.suite));
  } else {
    if (o.src_mesh.empty() || o.src_spec.empty() || o.dst_mesh.empty() || o.dst_spec.empty() || o.shape.empty())
      throw CliError("reshard: needs --suite, or all of --src-mesh, --src-spec, --dst-mesh, --dst-spec and --shape");
    suite.elem_bytes = o.elem_bytes;
    suite.cases.push_back({"reshard", o.src_mesh, o.src_spec, o.dst_mesh, o.dst_spec, ParseShape(o.shape), ""});
  }
  // Resolve every case before pricing any, so that a bad case fails before output starts.
  std::vector<std::vector<UnitTask>> tasks;
  for (size_t i = 0; i < suite.cases.size(); ++i)
    tasks.push_back(CaseTasks(suite.cases[i], suite.elem_bytes, topology, declared,
                              o.suite.empty() ? "" : o.suite + ": cases[" + std::to_string(i) + "]."));
  nlohmann::json cases = nlohmann::json::array();
  for (size_t i = 0; i < suite.cases.size(); ++i) {
    const ReshardCase& c = suite.cases[i];
    const std::vector<Row> rows = PriceAll(o, topology, tasks[i]);
    cases.push_back(CaseJson(c, tasks[i], rows));
    if (o.json) continue;
    std::cout << (o.suite.empty() ? "reshard" : c.name) << ": shape " << FormatShape(c.shape) << " ("
              << tasks[i].size() << " unit tasks) from " << c.src_spec << " on " << c.src_mesh << " to " << c.dst_spec
              << " on " << c.dst_mesh << " of '" << topology.name() << "'" << (c.note.empty() ? "" : "; " + c.note)
              << "\n";
    for (const Row& r : rows)
      std::cout << "  " << ToString(r.method) << " / " << ToString(r.balance)
                << (r.balance == ReshardBalance::kOurs ? " (" + std::string(ToString(r.result.chosen)) + ")" : "")
                << ": " << FormatSeconds(r.result.seconds) << ", " << FormatBytes(r.result.bytes_moved) << " moved\n";
  }
  if (o.json) {
    if (o.suite.empty()) {
      nlohmann::json one = cases[0];
      one["topology"] = topology.name();
      PrintJson(one);
    }
    else PrintJson({{"topology", topology.name()}, {"suite", o.suite}, {"cases", cases}});
  }
}

}  // namespace

void RegisterReshardCommand(CLI::App& app, CommandContext& /*ctx*/) {
  auto opts = std::make_shared<ReshardCliOptions>();
  CLI::App* cmd = app.add_subcommand("reshard", "Simulated time of a cross-mesh resharding on an idle machine");
  cmd->add_option("-t,--topology", opts->topology, "Topology YAML file (may declare meshes:)")->required();
  cmd->add_option("--src-mesh", opts->src_mesh, "Source mesh: a declared name or SHAPE@FIRST, e.g. 1x4@0");
  cmd->add_option("--src-spec", opts->src_spec, "Source spec in Alpa's notation, e.g. S0,R,S1");
  cmd->add_option("--dst-mesh", opts->dst_mesh, "Destination mesh, e.g. 1x4@4");
  cmd->add_option("--dst-spec", opts->dst_spec, "Destination spec, e.g. R,S1,R");
  cmd->add_option("--shape", opts->shape, "Tensor shape, e.g. 1024,1024,512");
  cmd->add_option("--suite", opts->suite, "Suite YAML of cases instead of one case (configs/suites/reshard-*.yaml)");
  cmd->add_option("--method", opts->method, "broadcast, send-recv, alpa, global-allgather or all")
      ->capture_default_str();
  cmd->add_option("--balance", opts->balance, "naive, lb-only, dfs, random-greedy, ours or all")
      ->capture_default_str();
  cmd->add_option("--chunks", opts->chunks, "Chunks per slice of a broadcast")->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--trials", opts->trials, "Orders tried by random-greedy")->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--elem-bytes", opts->elem_bytes, "Bytes per element")->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{64}));
  cmd->add_option("--seed", opts->seed, "Seed of random-greedy")->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts] { Run(*opts); });
}

}  // namespace devplace::cli
