#include "apps/launcher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "apps/cli_util.h"
#include "core/atomic_file.h"
#include "core/graph_json.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"

extern char** environ;

namespace devplace::cli {

namespace {

// A loopback port nothing listens on now (the kernel's choice for an ephemeral bind).
int FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw CliError(std::string("cannot open a socket to pick MASTER_PORT: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) throw CliError(std::string("cannot pick a free loopback port for MASTER_PORT: ") + std::strerror(errno));
  return ntohs(addr.sin_port);
}

std::string Describe(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

int LaunchLocalRanks(int processes, const std::vector<std::string>& args, double grace_seconds,
                     const std::string& stdout_path) {
  const int port = FreeLoopbackPort();
  std::vector<std::string> base_env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('='));
    if (name != "MASTER_ADDR" && name != "MASTER_PORT" && name != "RANK" && name != "WORLD_SIZE" &&
        name != "LOCAL_RANK" && name.rfind("OMPI_COMM_WORLD_", 0) != 0)
      base_env.push_back(entry);
  }
  std::vector<pid_t> pids;
  for (int rank = 0; rank < processes; ++rank) {
    std::vector<std::string> env = base_env;
    for (const std::string& v : {std::string("MASTER_ADDR=127.0.0.1"), "MASTER_PORT=" + std::to_string(port),
                                 "RANK=" + std::to_string(rank), "WORLD_SIZE=" + std::to_string(processes),
                                 "LOCAL_RANK=" + std::to_string(rank)})
      env.push_back(v);
    std::vector<std::string> argv_text{"devplace"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (std::string& a : argv_text) argv.push_back(a.data());
    for (std::string& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (rank != 0) posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    else if (!stdout_path.empty())
      posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int err = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      for (pid_t p : pids) ::waitpid(p, nullptr, 0);
      throw CliError("cannot start rank " + std::to_string(rank) + ": " + std::strerror(err));
    }
    pids.push_back(pid);
  }
  using Clock = std::chrono::steady_clock;
  int first_failed = -1, first_status = 0, alive = processes;
  Clock::time_point kill_at = Clock::time_point::max();
  std::vector<char> done(processes, 0);
  while (alive > 0) {
    bool reaped = false;
    for (int rank = 0; rank < processes; ++rank) {
      int status = 0;
      if (done[rank] || ::waitpid(pids[rank], &status, WNOHANG) != pids[rank]) continue;
      done[rank] = 1;
      --alive;
      reaped = true;
      if ((WIFEXITED(status) && WEXITSTATUS(status) == 0) || first_failed >= 0) continue;
      first_failed = rank;
      first_status = status;
      kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace_seconds * 1000));
    }
    if (Clock::now() >= kill_at)
      for (int rank = 0; rank < processes; ++rank)
        if (!done[rank]) ::kill(pids[rank], SIGKILL);
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (first_failed < 0) return 0;
  std::cerr << "devplace: rank " << first_failed << " of " << processes << " " << Describe(first_status)
            << "; the run failed" << std::endl;
  return 1;
}

Expected<ExecResult> ExecuteInLocalProcesses(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                             const ExecOptions& options, int32_t processes,
                                             const std::string& work_dir, double timeout_seconds) {
  const std::string g = work_dir + "/graph.json", t = work_dir + "/topology.yaml", p = work_dir + "/strategy.json",
                    out = work_dir + "/rank0.json";
  if (Status s = WriteGraphFile(graph, g); !s) return s.error();
  if (Status s = WriteFileAtomic(t, TopologyToYaml(topology)); !s) return s.error();
  if (Status s = WriteStrategyFile(strategy, graph, topology, p); !s) return s.error();
  const std::vector<std::string> args{"run", "-g", g, "-t", t, "-p", p, "--json",
                                      "--warmup", std::to_string(options.warmup_steps),
                                      "--repeats", std::to_string(options.timed_steps),
                                      "--seed", std::to_string(options.seed), "--backend", options.backend,
                                      "--timeout", std::to_string(timeout_seconds)};
  if (LaunchLocalRanks(processes, args, timeout_seconds + 5.0, out) != 0)
    return Error{"the " + std::to_string(processes) + "-process run failed (see the ranks' errors above)"};
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("measured_ms") || !j.contains("cuda_index"))
    return Error{"rank 0 of the " + std::to_string(processes) + "-process run printed no result to " + out};
  ExecResult r;
  for (double ms : j["measured_ms"]["steps"]) r.step_seconds.push_back(ms / 1e3);
  r.median_step = j["measured_ms"]["median"].get<double>() / 1e3;
  r.min_step = j["measured_ms"]["min"].get<double>() / 1e3;
  r.max_step = j["measured_ms"]["max"].get<double>() / 1e3;
  r.spread = j["measured_ms"]["spread"].get<double>();
  r.num_copies = j["copies"].get<int32_t>();
  r.bytes_copied = j["bytes_copied"].get<int64_t>();
  r.stand_in_ops = j["stand_in_ops"].get<int32_t>();
  r.backend.name = j["backend"].get<std::string>();
  r.backend.note = j["backend_note"].get<std::string>();
  r.backend.cuda_index = j["cuda_index"].get<std::vector<int32_t>>();
  return r;
}

std::vector<std::string> WithoutOption(const std::vector<std::string>& args, const std::string& name) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == name) ++i;
    else if (args[i].rfind(name + "=", 0) != 0) kept.push_back(args[i]);
  }
  return kept;
}

}  // namespace devplace::cli
