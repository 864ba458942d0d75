#include "distributed/config.h"

#include <charconv>

namespace devplace {

namespace {

struct Variable {
  std::string name;
  const char* value = nullptr;  // nullptr: unset
};

// The first of `names` that is set (torchrun's name first, then mpirun's).
Variable Lookup(const std::function<const char*(const char*)>& getenv, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* value = getenv(name); value != nullptr && *value != '\0') return {name, value};
  return {*names.begin(), nullptr};
}

Expected<int64_t> ParseInt(const Variable& v, int64_t min, int64_t max, const std::string& range) {
  const std::string text(v.value);
  int64_t out = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size() || out < min || out > max)
    return Error{v.name + "=" + text + ": expected an integer in " + range};
  return out;
}

}  // namespace

Expected<std::optional<DistributedConfig>> DistributedConfigFromEnv(
    const std::function<const char*(const char*)>& getenv, double timeout_seconds) {
  const Variable rank = Lookup(getenv, {"RANK", "OMPI_COMM_WORLD_RANK"});
  const Variable world = Lookup(getenv, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"});
  if (rank.value == nullptr && world.value == nullptr) return std::optional<DistributedConfig>{};
  if (world.value == nullptr) return Error{"WORLD_SIZE: not set (RANK is)"};
  if (rank.value == nullptr) return Error{"RANK: not set (WORLD_SIZE is)"};
  DistributedConfig config;
  config.timeout_seconds = timeout_seconds;
  Expected<int64_t> w = ParseInt(world, 1, 1 << 20, "[1, 1048576]");
  if (!w) return w.error();
  config.world_size = static_cast<int32_t>(*w);
  Expected<int64_t> r = ParseInt(rank, 0, *w - 1, "[0, WORLD_SIZE)");
  if (!r) return r.error();
  config.rank = static_cast<int32_t>(*r);
  if (const Variable local = Lookup(getenv, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}); local.value != nullptr) {
    Expected<int64_t> l = ParseInt(local, 0, 1 << 20, "[0, 1048576]");
    if (!l) return l.error();
    config.local_rank = static_cast<int32_t>(*l);
  }
  if (const Variable ifname = Lookup(getenv, {"GLOO_SOCKET_IFNAME"}); ifname.value != nullptr)
    config.interface = ifname.value;
  if (config.world_size == 1) return std::optional<DistributedConfig>(config);
  const std::string needed = " (needed with WORLD_SIZE=" + std::to_string(config.world_size) + ")";
  const Variable addr = Lookup(getenv, {"MASTER_ADDR"});
  if (addr.value == nullptr) return Error{"MASTER_ADDR: not set" + needed};
  config.master_addr = addr.value;
  const Variable port = Lookup(getenv, {"MASTER_PORT"});
  if (port.value == nullptr) return Error{"MASTER_PORT: not set" + needed};
  Expected<int64_t> p = ParseInt(port, 1, 65535, "[1, 65535]");
  if (!p) return p.error();
  config.master_port = static_cast<int32_t>(*p);
  return std::optional<DistributedConfig>(config);
}

}  // namespace devplace
