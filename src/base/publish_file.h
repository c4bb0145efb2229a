#pragma once
// Putting a finished file in place so that nothing ever sees part of it, a killed process
// included.
#include <span>
#include <string>

namespace mlps {

// Writes `bytes` to `path`, whose directory must exist: all or nothing (an unnamed O_TMPFILE,
// linked in as "<path>.tmp.<pid>" once complete and renamed over `path`; without O_TMPFILE that
// name is written directly; only a SIGKILL can leave it behind). Of several processes writing
// one path, the last to finish wins. Throws OutputError naming what failed (a full disk shows
// at the write or the fsync). For tests: MLPSCALE_TEST_PUBLISH_DELAY_MS=N waits N ms between
// writing and putting the file in place.
// Only a regular file at `path` is replaced (a symbolic link is followed): anything else there
// (a device, a FIFO, a socket, a directory) throws OutputError before anything is written.
void publish_file(const std::string& path, std::span<const char> bytes);

// Why `path` must not be published to: "" when nothing is there or a regular file is, else
// "<path> is a character device" (a FIFO, socket, block device, directory; links followed).
// Every program checks its output paths with it before any work (src/driver, bin/plan).
std::string output_target_problem(const std::string& path);

}  // namespace mlps
