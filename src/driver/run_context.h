#pragma once
// Who is running: the executable, its command line and the ranks taking part.
#include <mpi.h>

#include <string>

#include "src/results/run_record.h"

namespace mlps {

struct RunContext {
  std::string program;       // e.g. "serial"
  std::string command_line;  // as typed, for the result file
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int size = 1;
  // This rank's memory accounting (<scheme>_memory.h), bytes: recorded beside the measured peak.
  double estimated_bytes = 0;
  double largest_estimated_bytes = 0;  // the largest rank's
  double disk_bytes = 0;  // this rank's state in a scratch file (--offload-to disk:DIR)
  double host_bytes = 0;  // a GPU's: its offloaded state and staging in host memory
  // What bin/plan's model predicts for this run (--machine), recorded beside the measurement.
  RecordedPrediction prediction{};
  // Where this rank ran: its node (numbered in the order of each node's first rank) and its
  // rank among the ranks there; recorded per rank in /placement.
  int node = 0;
  int local_rank = 0;
  // --prefetch as resolved for this node (prefetch_mode.h): load batches on a thread of their own.
  bool loads_ahead = true;
  bool is_root() const { return rank == 0; }
};

}  // namespace mlps
