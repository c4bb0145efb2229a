#pragma once
// Putting a finished file in place so that nothing ever sees part of it, a killed process
// included.
#include <span>
#include <string>

namespace mlps {

// Writes `bytes` to `path` (whose directory must exist): into an unnamed file (O_TMPFILE) in
// that directory, flushed to disk, then linked in as `path` (an existing `path` is removed just
// before), so a process killed at any point, SIGKILL included, leaves the whole file or none,
// and never a temporary. Without O_TMPFILE (or /proc/self/fd, through which it is linked), a
// named "<path>.tmp.<pid>" is renamed into place (removed on failure; only a SIGKILL can leave
// it). Throws std::runtime_error naming what failed ("writing 5821 bytes: No space left on
// device"). For tests: MLPSCALE_TEST_PUBLISH_DELAY_MS=N waits N ms between writing and linking.
void publish_file(const std::string& path, std::span<const char> bytes);

}  // namespace mlps
