#pragma once
// The closing comparison of analytic and measured communication per collective kind: bytes
// per iteration and, where the scheme's volume formulas count them, calls per iteration.
#include <cstdio>
#include <map>
#include <string>

namespace mlps {

// Calls per iteration by collective kind, counted by a scheme's analytic volume formulas
// beside its bytes (bin/plan's latency terms read them).
using CommCalls = std::map<std::string, double>;

// Adds `count` calls of `bytes` in all to `kind` (the calls only where they are counted).
inline void add_volume(std::map<std::string, double>& volumes, CommCalls* calls,
                       const std::string& kind, double bytes, double count) {
  volumes[kind] += bytes;
  if (calls) (*calls)[kind] += count;
}

// Smallest and largest per-iteration figure of one collective kind on this rank.
struct IterationRange {
  double min = 0;
  double max = 0;
};

struct MeasuredVolume {
  IterationRange bytes, calls;
};

// Prints one line per kind present in either map: the analytic bytes per iteration, the
// measured ones (a range when iterations differed), with `analytic_calls` the calls likewise,
// and whether they agree. Returns true when every kind agrees exactly.
bool print_comm_volumes(std::FILE* out, const std::string& who,
                        const std::map<std::string, double>& analytic,
                        const std::map<std::string, MeasuredVolume>& measured,
                        const CommCalls* analytic_calls = nullptr);

}  // namespace mlps
