#include "src/comm/comm_volume_report.h"

#include <set>

namespace mlps {

bool print_comm_volumes(std::FILE* out, const std::string& who,
                        const std::map<std::string, double>& analytic,
                        const std::map<std::string, ByteRange>& measured) {
  std::set<std::string> kinds;
  for (const auto& [kind, bytes] : analytic) kinds.insert(kind);
  for (const auto& [kind, range] : measured) kinds.insert(kind);
  std::fprintf(out, "communication per iteration on %s (bytes, nccl-tests sizes):\n", who.c_str());
  std::fprintf(out, "  %-16s %16s %16s\n", "collective", "analytic", "measured");
  if (kinds.empty()) std::fprintf(out, "  (none)\n");
  bool all_equal = true;
  for (const auto& kind : kinds) {
    const auto a = analytic.find(kind);
    const auto m = measured.find(kind);
    const double expected = a == analytic.end() ? 0.0 : a->second;
    const ByteRange got = m == measured.end() ? ByteRange{} : m->second;
    const bool equal = got.min == expected && got.max == expected;
    all_equal = all_equal && equal;
    char measured_text[64];
    if (got.min == got.max) std::snprintf(measured_text, sizeof measured_text, "%.0f", got.min);
    else std::snprintf(measured_text, sizeof measured_text, "%.0f..%.0f", got.min, got.max);
    std::fprintf(out, "  %-16s %16.0f %16s  %s\n", kind.c_str(), expected, measured_text,
                 equal ? "equal" : "DIFFERENT");
  }
  return all_equal;
}

}  // namespace mlps
