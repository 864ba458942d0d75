// The multi-process tests' ranks: a free loopback port, a rank of a group started as a child process with the
// group's environment, waiting for it under a time limit, and reading the files it wrote.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace devplace::testing {

// A loopback port nobody listens on now (the kernel's choice for port 0); fails the test when there is none.
int FreeLoopbackPort();

// A running child process: one rank of a group, its stderr in a file.
struct RankProcess {
  pid_t pid = -1;
  std::string stderr_path;
};

// Starts `program` with `args` (argv[0] is `program`) as rank `rank` of a group of `world` on 127.0.0.1:`port`: the
// environment is this process's without any group variables (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, OMPI_*), plus those of the rank (LOCAL_RANK = RANK); stderr goes to `stderr_path` (truncated).
// Fails the test when it cannot start.
RankProcess SpawnRank(const std::string& program, const std::vector<std::string>& args, int rank, int world,
                      int port, const std::string& stderr_path);

// Waits up to `limit` for the rank to exit: its exit code (128 + the signal when a signal ended it), or -1 when it
// did not exit in time (it is killed then).
int WaitRank(const RankProcess& rank, std::chrono::duration<double> limit);

// The contents of the file at `path`; empty when it cannot be read.
std::string ReadText(const std::string& path);

}  // namespace devplace::testing
