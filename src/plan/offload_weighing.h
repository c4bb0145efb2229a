#pragma once
// bin/plan's offloaded configurations (bin/data --offload optimizer): weighed only when nothing
// fits in memory, and only where the machine description can price them: the host tier on a
// GPU node with host_offload_bandwidth, the disk tier on a CPU node with offload_bandwidth (a
// configuration the description cannot price would look free).
#include <string>
#include <vector>

#include "src/plan/machine_description.h"
#include "src/plan/plan_report.h"

namespace mlps {

// Removes the offloaded candidates that are not to be weighed; returns a line saying what was
// weighed or why not ("" when there were none).
std::string weigh_offloaded(std::vector<PlannedCandidate>& plan, const MachineDescription& m);

}  // namespace mlps
