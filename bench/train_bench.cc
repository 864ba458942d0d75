// Training throughput, two ways; reported per configuration:
//   rollout_placements_per_s  placements sampled (and simulated) per second of the rollout phase
//   train_placements_per_s    placements per second of whole iterations (rollouts, PPO update, held-out
//                             evaluation), after the first iteration
//   rollout_s_per_it, update_s_per_it (the rest of an iteration)
// - BM_TrainThreads/threads:T: one process training with `rollout_threads: T` (the experiment's games played,
//   and their PPO losses computed, on T threads), with cpu_s, the process's CPU seconds (all threads, start-up
//   included). The experiment is copied beside itself with that key set (so its relative paths still resolve)
//   and removed afterwards.
// - BM_TrainGroup/ranks:R: a data-parallel group of R local ranks (child processes of this program, set up as
//   scripts/launch-train.sh does), with these counters too:
//   end_to_end_placements_per_s  including process start-up (LibTorch load, games) and the first iteration
//   cpu_s              CPU seconds (user + system) of all ranks together, start-up included: the work the group
//                      did whatever else ran on the machine (2 ranks doing 1 rank's work in half the wall
//                      time use about the same CPU seconds)
//   startup_s          launch to the end of iteration 1, less one steady iteration (LibTorch load,
//                      rendezvous, building the games)
// Iteration 1 (warm-up) is left out of the steady-state figures. Usage:
//   train_bench [--experiment=E.yaml] [--train-iterations=K] [benchmark flags]
// (default configs/experiments/quick.yaml, K = 4). Results and the commands are in docs/performance.md.
#include <benchmark/benchmark.h>

#include <netinet/in.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "distributed/config.h"
#include "agents/learned/learning.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Settings {
  std::string experiment = std::string(DEVPLACE_SOURCE_DIR) + "/configs/experiments/quick.yaml";
  int iterations = 4;
};

// Seconds on the system-wide monotonic clock (comparable between processes on Linux).
double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds (user + system) of this process, all threads.
double ProcessCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// A loopback port nobody listens on now.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (fd >= 0) ::close(fd);
  return ok ? ntohs(addr.sin_port) : 29500;
}

// One rank (this program re-run with --worker): trains and, on rank 0, writes one line per iteration to
// `report`: rollout seconds, placements, the monotonic clock at the iteration's end.
int RunWorker(const std::string& experiment, const std::string& run_dir, int iterations, const std::string& report) {
  devplace::Expected<std::optional<devplace::DistributedConfig>> group = devplace::DistributedConfigFromEnv(
      [](const char* name) -> const char* { return std::getenv(name); }, 120.0);
  if (!group) {
    std::cerr << group.error().message << "\n";
    return 1;
  }
  std::ofstream out;
  devplace::TrainOptions options;
  options.config_path = experiment;
  options.run_dir = run_dir;
  options.max_iterations = iterations;
  options.distributed = *group;
  options.on_iteration = [&](const devplace::TrainIteration& it) {
    if (!out.is_open()) out.open(report);
    out.precision(17);
    out << it.rollout_seconds << " " << it.rollout_placements << " " << Now() << std::endl;
  };
  devplace::Expected<devplace::TrainSummary> trained = devplace::TrainPolicy(options);
  if (!trained) {
    std::cerr << trained.error().message << "\n";
    return 1;
  }
  return 0;
}

pid_t Spawn(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> a = args;
  std::vector<char*> argv, envp;
  for (std::string& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  return pid;
}

// Steady-state sums over the rows (rollout seconds, placements, clock at the iteration's end) of one run,
// iteration 1 left out.
struct Steady {
  double rollout_s = 0, placements = 0, wall = 0;
  int iterations = 0;
  void Add(const std::vector<std::vector<double>>& rows) {
    for (size_t i = 1; i < rows.size(); ++i) {
      rollout_s += rows[i][0];
      placements += rows[i][1];
      wall += rows[i][2] - rows[i - 1][2];
      ++iterations;
    }
  }
  void Report(benchmark::State& state) const {
    state.counters["rollout_placements_per_s"] = placements / rollout_s;
    state.counters["train_placements_per_s"] = placements / wall;
    state.counters["rollout_s_per_it"] = rollout_s / iterations;
    state.counters["update_s_per_it"] = (wall - rollout_s) / iterations;
  }
};

void BM_TrainThreads(benchmark::State& state, Settings settings) {
  const int threads = static_cast<int>(state.range(0));
  const fs::path dir = fs::temp_directory_path() / ("devplace-train-bench-" + std::to_string(::getpid()));
  const fs::path config = fs::path(settings.experiment).parent_path() /
                          (".train-bench-" + std::to_string(::getpid()) + "-" + std::to_string(threads) + ".yaml");
  std::ifstream original(settings.experiment);
  std::ostringstream yaml;
  for (std::string line; std::getline(original, line);)
    if (line.rfind("rollout_threads:", 0) != 0) yaml << line << "\n";
  yaml << "rollout_threads: " << threads << "\n";
  std::ofstream(config) << yaml.str();
  Steady steady;
  double cpu = 0;
  for (auto _ : state) {
    fs::remove_all(dir);
    std::vector<std::vector<double>> rows;
    devplace::TrainOptions options;
    options.config_path = config.string();
    options.run_dir = (dir / "run").string();
    options.max_iterations = settings.iterations;
    options.on_iteration = [&](const devplace::TrainIteration& it) {
      rows.push_back({it.rollout_seconds, static_cast<double>(it.rollout_placements), Now()});
    };
    const double started = Now(), cpu_started = ProcessCpuSeconds();
    devplace::Expected<devplace::TrainSummary> trained = devplace::TrainPolicy(options);
    state.SetIterationTime(Now() - started);
    cpu += ProcessCpuSeconds() - cpu_started;
    if (!trained) {
      state.SkipWithError(trained.error().message.c_str());
      break;
    }
    steady.Add(rows);
  }
  fs::remove_all(dir);
  fs::remove(config);
  if (steady.iterations == 0) return;
  steady.Report(state);
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
}

void BM_TrainGroup(benchmark::State& state, Settings settings) {
  const int ranks = static_cast<int>(state.range(0));
  const fs::path dir = fs::temp_directory_path() / ("devplace-train-bench-" + std::to_string(::getpid()));
  double startup = 0, total_placements = 0, end_to_end = 0, cpu = 0;
  Steady steady;
  for (auto _ : state) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string report = (dir / "report.txt").string();
    const int port = FreePort();
    const double started = Now();
    std::vector<pid_t> pids;
    for (int r = 0; r < ranks; ++r)
      pids.push_back(Spawn({"/proc/self/exe", "--worker", settings.experiment, (dir / "run").string(),
                            std::to_string(settings.iterations), report},
                           {"RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r),
                            "WORLD_SIZE=" + std::to_string(ranks), "MASTER_ADDR=127.0.0.1",
                            "MASTER_PORT=" + std::to_string(port)}));
    bool ok = true;
    for (pid_t pid : pids) {
      int status = 0;
      rusage usage{};
      const bool exited = pid > 0 && ::wait4(pid, &status, 0, &usage) == pid;  // always reap every rank
      ok = ok && exited && WIFEXITED(status) && WEXITSTATUS(status) == 0;
      cpu += static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
             1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    }
    const double seconds = Now() - started;
    state.SetIterationTime(seconds);
    if (!ok) {
      state.SkipWithError("a rank failed (its error is on stderr)");
      break;
    }
    std::ifstream in(report);
    std::vector<std::vector<double>> rows;
    for (double a, b, c; in >> a >> b >> c;) rows.push_back({a, b, c});
    if (rows.size() < 2) {
      state.SkipWithError("fewer than two iterations reported");
      break;
    }
    end_to_end += seconds;
    startup += (rows[0][2] - started) - (rows.back()[2] - rows[0][2]) / static_cast<double>(rows.size() - 1);
    for (const std::vector<double>& row : rows) total_placements += row[1];
    steady.Add(rows);
  }
  fs::remove_all(dir);
  if (steady.iterations == 0) return;
  steady.Report(state);
  state.counters["end_to_end_placements_per_s"] = total_placements / end_to_end;
  state.counters["startup_s"] = startup / static_cast<double>(state.iterations());
  state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--worker")
    return RunWorker(argv[2], argv[3], std::atoi(argv[4]), argv[5]);
  Settings settings;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--experiment=", 0) == 0)
      settings.experiment = arg.substr(13);
    else if (arg.rfind("--train-iterations=", 0) == 0)
      settings.iterations = std::atoi(arg.c_str() + 19);
    else
      rest.push_back(argv[i]);
  }
  if (settings.iterations < 2) {
    std::cerr << "train_bench: --train-iterations must be at least 2 (the first is warm-up)\n";
    return 2;
  }
  benchmark::RegisterBenchmark("BM_TrainThreads", BM_TrainThreads, settings)
      ->ArgName("threads")
      ->Arg(1)
      ->Arg(2)
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kSecond);
  benchmark::RegisterBenchmark("BM_TrainGroup", BM_TrainGroup, settings)
      ->ArgName("ranks")
      ->Arg(1)
      ->Arg(2)
      ->Iterations(1)
      ->UseManualTime()
      ->Unit(benchmark::kSecond);
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
