#include "src/comm/comm_volume_report.h"

#include <set>

namespace mlps {
namespace {

double find_or_zero(const std::map<std::string, double>& figures, const std::string& kind) {
  const auto it = figures.find(kind);
  return it == figures.end() ? 0.0 : it->second;
}

// "N", or "MIN..MAX" when iterations differed.
std::string range_text(const IterationRange& range) {
  char text[64];
  if (range.min == range.max) std::snprintf(text, sizeof text, "%.0f", range.min);
  else std::snprintf(text, sizeof text, "%.0f..%.0f", range.min, range.max);
  return text;
}

bool matches(const IterationRange& range, double expected) {
  return range.min == expected && range.max == expected;
}

}  // namespace

bool print_comm_volumes(std::FILE* out, const std::string& who,
                        const std::map<std::string, double>& analytic,
                        const std::map<std::string, MeasuredVolume>& measured,
                        const CommCalls* analytic_calls) {
  std::set<std::string> kinds;
  for (const auto& [kind, bytes] : analytic) kinds.insert(kind);
  for (const auto& [kind, range] : measured) kinds.insert(kind);
  std::fprintf(out, "communication per iteration on %s (bytes, nccl-tests sizes%s):\n", who.c_str(),
               analytic_calls ? "; calls" : "");
  std::fprintf(out, "  %-20s %16s %16s", "collective", "analytic", "measured");
  if (analytic_calls) std::fprintf(out, " %8s %8s", "calls", "measured");
  std::fprintf(out, "\n");
  if (kinds.empty()) std::fprintf(out, "  (none)\n");
  bool all_equal = true;
  for (const auto& kind : kinds) {
    const auto m = measured.find(kind);
    const MeasuredVolume got = m == measured.end() ? MeasuredVolume{} : m->second;
    const double expected = find_or_zero(analytic, kind);
    bool equal = matches(got.bytes, expected);
    std::fprintf(out, "  %-20s %16.0f %16s", kind.c_str(), expected, range_text(got.bytes).c_str());
    if (analytic_calls) {
      const double calls = find_or_zero(*analytic_calls, kind);
      equal = equal && matches(got.calls, calls);
      std::fprintf(out, " %8.0f %8s", calls, range_text(got.calls).c_str());
    }
    all_equal = all_equal && equal;
    std::fprintf(out, "  %s\n", equal ? "equal" : "DIFFERENT");
  }
  return all_equal;
}

}  // namespace mlps
