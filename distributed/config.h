// Data-parallel training across processes (LibTorch-free part of devplace_learn): which process group a
// `devplace train` process belongs to, read from the environment variables torchrun sets (MASTER_ADDR,
// MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK) or Open MPI's mpirun sets (OMPI_COMM_WORLD_RANK,
// OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK). How the group trains is in docs/learning.md,
// "Distributed training".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/status.h"

namespace devplace {

// One process's place in a training group.
struct DistributedConfig {
  int32_t rank = 0;          // 0 .. world_size - 1; rank 0 writes the log and the checkpoints
  int32_t world_size = 1;
  int32_t local_rank = 0;    // rank among the processes of this machine (informational)
  std::string master_addr;   // host of rank 0's rendezvous store (TCP)
  int32_t master_port = 0;
  double timeout_seconds = 60.0;  // joining the group and every collective; a peer silent longer is lost
  std::string interface;     // network interface for Gloo (GLOO_SOCKET_IFNAME); empty: loopback when
                             // master_addr is a loopback address, else the address of this host's name
};

// Reads the group from environment variables through `getenv` (a lookup returning nullptr for unset names).
// No RANK / WORLD_SIZE (nor their OMPI_COMM_WORLD_* forms) set: nullopt, a single-process run. Errors name the
// variable: "RANK=x: expected an integer in [0, WORLD_SIZE)", "MASTER_ADDR: not set (needed with WORLD_SIZE=2)".
// GLOO_SOCKET_IFNAME, when set, names the interface. `timeout_seconds` is copied into the result.
Expected<std::optional<DistributedConfig>> DistributedConfigFromEnv(
    const std::function<const char*(const char*)>& getenv, double timeout_seconds);

}  // namespace devplace
