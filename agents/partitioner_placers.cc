#include "agents/partitioner_placers.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include <unistd.h>

extern "C" {
#include <metis.h>
#include <scotch/scotch.h>
}

#include "agents/group_graph.h"

namespace devplace {

namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// While alive, the process's standard output goes to standard error. METIS prints its diagnostics ("***Cannot
// bisect a graph with 0 vertices!") with printf, which would corrupt the JSON that `--json` commands print.
class StdoutToStderr {
 public:
  StdoutToStderr() : saved_(dup(STDOUT_FILENO)) {
    std::fflush(stdout);
    if (saved_ >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  ~StdoutToStderr() {
    std::fflush(stdout);
    if (saved_ < 0) return;
    dup2(saved_, STDOUT_FILENO);
    close(saved_);
  }
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  int saved_;
};

// Relative device speeds as positive integers (f32 peak relative to the slowest device, x100).
std::vector<int32_t> SpeedWeights(const Topology& t) {
  double slowest = t.device(0).peak_flops_f32;
  for (const Device& d : t.devices()) slowest = std::min(slowest, d.peak_flops_f32);
  std::vector<int32_t> w;
  for (const Device& d : t.devices()) w.push_back(static_cast<int32_t>(std::lround(100 * d.peak_flops_f32 / slowest)));
  return w;
}

// RAII holders for Scotch objects.
struct ScotchGraph {
  SCOTCH_Graph g;
  ScotchGraph() { SCOTCH_graphInit(&g); }
  ~ScotchGraph() { SCOTCH_graphExit(&g); }
};
struct ScotchArch {
  SCOTCH_Arch a;
  ScotchArch() { SCOTCH_archInit(&a); }
  ~ScotchArch() { SCOTCH_archExit(&a); }
};
// A Scotch execution context with its own deterministic, seeded RNG (so the library-wide RNG is never used).
struct ScotchContext {
  SCOTCH_Context c;
  explicit ScotchContext(uint64_t seed) {
    SCOTCH_contextInit(&c);
    // One thread: Scotch 7.0.3's threaded mapping crashes on some graphs (seen on resnet152 over two hosts),
    // and the machines devplace targets for search are small.
    SCOTCH_contextThreadSpawn(&c, 1, nullptr);
    SCOTCH_contextOptionSetNum(&c, SCOTCH_OPTIONNUMDETERMINISTIC, 1);
    SCOTCH_contextOptionSetNum(&c, SCOTCH_OPTIONNUMRANDOMFIXEDSEED, 1);
    SCOTCH_contextRandomClone(&c);
    SCOTCH_contextRandomSeed(&c, static_cast<SCOTCH_Num>(seed & 0x7fffffff));
  }
  ~ScotchContext() { SCOTCH_contextExit(&c); }
};
struct ScotchStrat {
  SCOTCH_Strat s;
  ScotchStrat() { SCOTCH_stratInit(&s); }
  ~ScotchStrat() { SCOTCH_stratExit(&s); }
};

static_assert(sizeof(SCOTCH_Num) == sizeof(int32_t), "Debian's libscotch uses 32-bit SCOTCH_Num");
static_assert(sizeof(idx_t) == sizeof(int32_t), "Debian's libmetis uses 32-bit idx_t");

}  // namespace

Expected<SearchResult> PlaceWithScotch(const SearchProblem& problem, const SearchRequest& request) {
  auto start = std::chrono::steady_clock::now();
  const Topology& t = *problem.topology;
  GroupGraph gg = BuildGroupGraph(problem);
  const int32_t devices = t.num_devices();
  std::vector<int32_t> device_of_group(gg.num_vertices(), 0);
  if (devices > 1 && gg.num_vertices() > 1) {
    // Target architecture: complete graph of devices, edge weight = route time for 1 MiB in microseconds.
    std::vector<SCOTCH_Num> arch_offsets(devices + 1, 0), arch_adjacency, arch_weights;
    for (DeviceId a = 0; a < devices; ++a) {
      for (DeviceId b = 0; b < devices; ++b) {
        if (a == b) continue;
        double us = 0.5 * (t.transfer_time_estimate(a, b, 1 << 20) + t.transfer_time_estimate(b, a, 1 << 20)) * 1e6;
        arch_adjacency.push_back(b);
        arch_weights.push_back(static_cast<SCOTCH_Num>(std::max(1L, std::lround(us))));
      }
      arch_offsets[a + 1] = static_cast<SCOTCH_Num>(arch_adjacency.size());
    }
    std::vector<SCOTCH_Num> speed = SpeedWeights(t);
    ScotchGraph target;
    if (SCOTCH_graphBuild(&target.g, 0, devices, arch_offsets.data(), nullptr, speed.data(), nullptr,
                          static_cast<SCOTCH_Num>(arch_adjacency.size()), arch_adjacency.data(),
                          arch_weights.data()) != 0)
      return Error{"scotch: cannot build the target architecture graph"};
    ScotchContext context(request.seed);
    ScotchGraph bound_target;
    ScotchArch arch;
    ScotchStrat arch_strat;
    if (SCOTCH_contextBindGraph(&context.c, &target.g, &bound_target.g) != 0 ||
        SCOTCH_archBuild0(&arch.a, &bound_target.g, 0, nullptr, &arch_strat.s) != 0)
      return Error{"scotch: cannot build the target architecture from topology '" + t.name() + "'"};

    ScotchGraph source;
    if (SCOTCH_graphBuild(&source.g, 0, gg.num_vertices(), gg.offsets.data(), nullptr, gg.vertex_weights.data(),
                          nullptr, static_cast<SCOTCH_Num>(gg.adjacency.size()), gg.adjacency.data(),
                          gg.edge_weights.data()) != 0 ||
        SCOTCH_graphCheck(&source.g) != 0)
      return Error{"scotch: cannot build the graph of '" + problem.graph->name() + "'"};
    ScotchStrat strat;
    ScotchGraph bound;
    if (SCOTCH_contextBindGraph(&context.c, &source.g, &bound.g) != 0 ||
        SCOTCH_graphMap(&bound.g, &arch.a, &strat.s, device_of_group.data()) != 0)
      return Error{"scotch: mapping failed for '" + problem.graph->name() + "'"};
  }
  return SearchResult{PlacementFromGroups(gg.groups, device_of_group), 0, SecondsSince(start)};
}

Expected<SearchResult> PlaceWithMetis(const SearchProblem& problem, const SearchRequest& request) {
  auto start = std::chrono::steady_clock::now();
  const Topology& t = *problem.topology;
  GroupGraph gg = BuildGroupGraph(problem);
  idx_t vertices = gg.num_vertices(), constraints = 1, parts = t.num_devices(), cut = 0;
  std::vector<idx_t> device_of_group(vertices, 0);
  if (parts > 1 && vertices > parts) {
    std::vector<int32_t> speed = SpeedWeights(t);
    double total_speed = 0;
    for (int32_t s : speed) total_speed += s;
    std::vector<real_t> target_weights;
    for (int32_t s : speed) target_weights.push_back(static_cast<real_t>(s / total_speed));
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(request.seed & 0x7fffffff);
    real_t imbalance = 1.05f;
    StdoutToStderr quiet_stdout;
    int status = METIS_PartGraphKway(&vertices, &constraints, gg.offsets.data(), gg.adjacency.data(),
                                     gg.vertex_weights.data(), nullptr, gg.edge_weights.data(), &parts,
                                     target_weights.data(), &imbalance, options, &cut, device_of_group.data());
    if (status != METIS_OK)
      return Error{"metis: partitioning '" + problem.graph->name() + "' failed (status " + std::to_string(status) + ")"};
  } else if (parts > 1) {
    // Fewer groups than devices: one group per device.
    for (idx_t g = 0; g < vertices; ++g) device_of_group[g] = g;
  }
  return SearchResult{PlacementFromGroups(gg.groups, device_of_group), 0, SecondsSince(start)};
}

}  // namespace devplace
