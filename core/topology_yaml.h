// YAML form of a Topology (format in docs/topology-format.md). Unknown keys are rejected; errors read
// "<file>: <field path>: <reason>".
#pragma once

#include <string>

#include "core/status.h"
#include "core/topology.h"

namespace devplace {

Expected<Topology> TopologyFromYaml(const std::string& text, const std::string& source);
Expected<Topology> ReadTopologyFile(const std::string& path);
// Serialises `topology` to YAML that TopologyFromYaml reads back to an equal machine.
std::string TopologyToYaml(const Topology& topology);

}  // namespace devplace
