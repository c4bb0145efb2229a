#pragma once
// Putting a finished file in place so that nothing ever sees part of it, a killed process
// included.
#include <span>
#include <string>

namespace mlps {

// Writes `bytes` to `path`, whose directory must exist: all or nothing (an unnamed O_TMPFILE
// linked in; without one, "<path>.tmp.<pid>" renamed, which only a SIGKILL can leave behind).
// Throws std::runtime_error naming what failed. For tests: MLPSCALE_TEST_PUBLISH_DELAY_MS=N waits
// N ms between writing and putting the file in place.
void publish_file(const std::string& path, std::span<const char> bytes);

}  // namespace mlps
