#include "apps/profile_table.h"

namespace devplace::cli {

CostTable ProfileToCostTable(const ProfileResult& profile) {
  CostTable table;
  for (const OpProfile& p : profile.entries) {
    ProfiledEntry e;
    e.device_kind = p.device_kind;
    e.op_type = p.op_type;
    e.role = p.role;
    e.dtype = p.dtype;
    e.shape = p.shape;
    e.flops = p.flops;
    e.seconds = p.seconds;
    table.entries.push_back(std::move(e));
  }
  return table;
}

}  // namespace devplace::cli
