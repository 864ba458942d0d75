#include "env/config.h"

#include <cmath>
#include <string>

namespace devplace {

Status ValidateEnvConfig(const EnvConfig& config) {
  if (!std::isfinite(config.oom_penalty) || config.oom_penalty < 0)
    return Error{"env.oom_penalty: must be >= 0 and finite, got " + std::to_string(config.oom_penalty)};
  if (config.action_space == ActionSpace::kSoap && config.data_parallel_action)
    return Error{"env.data_parallel_action: must be false with action_space soap (its candidates include the "
                 "all-devices sample split)"};
  if (Status s = ValidateSimOptions(config.sim); !s) return Error{"env.sim." + s.error().message};
  return Status::Ok();
}

std::string_view ToString(MdpKind kind) {
  switch (kind) {
    case MdpKind::kIterative: return "iterative";
    case MdpKind::kOneShot: return "one_shot";
  }
  return "?";
}

std::string_view ToString(InitialPlacement placement) {
  switch (placement) {
    case InitialPlacement::kSingle: return "single";
    case InitialPlacement::kRoundRobin: return "round_robin";
    case InitialPlacement::kRandom: return "random";
  }
  return "?";
}

std::string_view ToString(ActionSpace space) { return space == ActionSpace::kSoap ? "soap" : "devices"; }

bool ParseActionSpace(std::string_view text, ActionSpace* space) {
  for (ActionSpace a : {ActionSpace::kDevices, ActionSpace::kSoap}) {
    if (text == ToString(a)) {
      *space = a;
      return true;
    }
  }
  return false;
}

bool ParseMdpKind(std::string_view text, MdpKind* kind) {
  for (MdpKind k : {MdpKind::kIterative, MdpKind::kOneShot}) {
    if (text == ToString(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

bool ParseInitialPlacement(std::string_view text, InitialPlacement* placement) {
  for (InitialPlacement p : {InitialPlacement::kSingle, InitialPlacement::kRoundRobin, InitialPlacement::kRandom}) {
    if (text == ToString(p)) {
      *placement = p;
      return true;
    }
  }
  return false;
}

}  // namespace devplace
