#pragma once
// The closing comparison of analytic and measured communication volumes per collective kind.
#include <cstdio>
#include <map>
#include <string>

namespace mlps {

// Smallest and largest bytes per iteration one collective kind moved on this rank.
struct ByteRange {
  double min = 0;
  double max = 0;
};

// Prints one line per kind present in either map: the analytic bytes per iteration, the
// measured ones (a range when iterations differed) and whether they agree. Returns true when
// every kind agrees exactly.
bool print_comm_volumes(std::FILE* out, const std::string& who,
                        const std::map<std::string, double>& analytic,
                        const std::map<std::string, ByteRange>& measured);

}  // namespace mlps
