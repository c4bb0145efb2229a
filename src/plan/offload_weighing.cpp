#include "src/plan/offload_weighing.h"

#include <algorithm>

namespace mlps {
namespace {

// "host", "disk:DIR", or "" for a candidate that does not offload.
std::string offload_tier(const PlanCandidate& c) {
  const auto it = std::find(c.flags.begin(), c.flags.end(), "--offload-to");
  return it == c.flags.end() || it + 1 == c.flags.end() ? "" : *(it + 1);
}

}  // namespace

std::string weigh_offloaded(std::vector<PlannedCandidate>& plan, const MachineDescription& m) {
  const bool gpu = !m.ranks_share_node;
  size_t offered = 0;
  bool in_memory_fits = false;
  for (const PlannedCandidate& p : plan) {
    const std::string tier = offload_tier(p.candidate);
    offered += !tier.empty();
    in_memory_fits = in_memory_fits || (tier.empty() && p.prediction.fits());
  }
  if (offered == 0) return "";
  const std::string wanted = gpu ? "host" : "disk:DIR";
  const double rate = gpu ? m.host_offload_bandwidth : m.offload_bandwidth;
  const bool weighed = !in_memory_fits && rate > 0;
  std::erase_if(plan, [&](const PlannedCandidate& p) {
    const std::string tier = offload_tier(p.candidate);
    return !tier.empty() && (!weighed || tier != wanted);
  });
  if (in_memory_fits) return "";
  if (!weighed)
    return std::string("offloaded optimizer state (bin/data --offload) not weighed: the "
                       "description has no ") +
           (gpu ? "host_offload_bandwidth" : "offload_bandwidth") + " to price it";
  return "nothing fits in memory: weighed with the optimizer state offloaded to " +
         std::string(gpu ? "host memory" : "disk") +
         " (bin/data --offload optimizer, and optimizer+params under ZeRO-3)";
}

}  // namespace mlps
