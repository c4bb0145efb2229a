#include "src/memory/available_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "kernels/cuda/device_select.h"
#include "src/comm/broadcast_refusal.h"
#include "src/base/human_bytes.h"

namespace mlps {
namespace {

// "MemAvailable:   23068672 kB" from /proc/meminfo, in bytes; 0 if absent.
double meminfo_available() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return 0;
}

// A cgroup file holding one number: -1 when absent or unlimited ("max" in v2; v1 writes a
// number near 2^63 instead).
double cgroup_value(const std::string& path) {
  std::ifstream file(path);
  std::string text;
  if (!(file >> text) || text == "max") return -1;
  try {
    const double value = std::stod(text);
    return value < 0x1p60 ? value : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

// The room left under the memory limits of this process's cgroup and of each above it, the
// least of them (limit minus usage): cgroup v2 (memory.max, memory.current) or v1's memory
// controller (memory.limit_in_bytes, memory.usage_in_bytes), as /proc/self/cgroup names the
// cgroup; -1 when no limit applies or none can be read.
double cgroup_room() {
  std::ifstream self("/proc/self/cgroup");
  std::string line;
  double room = -1;
  while (std::getline(self, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1 memory controller)
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    std::string root, limit_file, usage_file;
    if (controllers.empty()) {
      root = "/sys/fs/cgroup", limit_file = "/memory.max", usage_file = "/memory.current";
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      root = "/sys/fs/cgroup/memory", limit_file = "/memory.limit_in_bytes",
      usage_file = "/memory.usage_in_bytes";
    } else {
      continue;
    }
    while (true) {  // the cgroup, then each parent up to the root
      const std::string dir = root + (path == "/" ? "" : path);
      const double limit = cgroup_value(dir + limit_file), used = cgroup_value(dir + usage_file);
      if (limit > 0 && used >= 0) {
        const double left = std::max(0.0, limit - used);
        room = room < 0 ? left : std::min(room, left);
      }
      if (path.empty() || path == "/") break;
      const size_t slash = path.rfind('/');
      path = slash == 0 ? "/" : path.substr(0, slash);
    }
  }
  return room;
}

std::string shared_by(int ranks) {
  return ranks > 1 ? ", shared by " + std::to_string(ranks) + " ranks" : "";
}

// The host memory the kernel would give this process now (MemAvailable, capped by the room
// under its cgroups' limits); 0 when neither can be read.
double available_host_bytes() {
  double available = meminfo_available();
  if (const double room = cgroup_room(); room >= 0)
    available = available > 0 ? std::min(available, room) : room;
  return available;
}

}  // namespace

AvailableMemory available_memory_per_rank(DeviceKind device, const RankPlacement& placement) {
  if (device == DeviceKind::cuda) {
#ifdef MLPSCALE_WITH_CUDA
    const int gpus = std::max(1, cuda::device_count());
    // Ranks are bound to GPU local_rank % gpus (bind_gpu): count those sharing this one.
    const int sharing = (placement.local_size - placement.local_rank % gpus + gpus - 1) / gpus;
    const double free = static_cast<double>(cuda::free_device_memory());
    return {free / sharing,
            "of GPU memory (" + human_bytes(free) + " free on the GPU of rank " +
                std::to_string(placement.world_rank) + shared_by(sharing) + ")"};
#endif
  }
  const double available = available_host_bytes();
  const int sharing = std::max(1, placement.local_size);
  return {available / sharing, "of host memory (" + human_bytes(available) + " available on " +
                                   (placement.host.empty() ? "this node" : placement.host) +
                                   shared_by(sharing) + ")"};
}

void check_memory_fits(MPI_Comm comm, double need, const std::string& what,
                       const AvailableMemory& available) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // An unknown amount of memory (0: nothing could be read) is no reason to refuse.
  struct {
    double ratio;
    int rank;
  } local{available.bytes > 0 ? need / available.bytes : 0.0, rank}, worst{};
  MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  if (worst.ratio <= 1) return;
  std::string message;
  if (rank == worst.rank)
    message = "rank " + std::to_string(rank) + " needs about " + human_bytes(need) + " (" + what +
              ") but has " + human_bytes(available.bytes) + " " + available.where;
  refuse_together(comm, message, worst.rank);  // not empty: worst.rank does not fit
}

void check_verify_memory_fits(MPI_Comm comm, double rank_need, DeviceKind device,
                              double replay_bytes) {
  // The ranks sharing rank 0's memory: on CPUs their whole need sits beside the replay.
  MPI_Comm node;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  double held = device == DeviceKind::cpu ? rank_need : 0.0, node_held = 0;
  MPI_Allreduce(&held, &node_held, 1, MPI_DOUBLE, MPI_SUM, node);
  MPI_Comm_free(&node);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string message;
  if (rank == 0) {
    const double available = available_host_bytes();
    if (available > 0 && replay_bytes + node_held > available)
      message = "--verify: rank 0's serial replay needs about " + human_bytes(replay_bytes) +
                " of host memory" +
                (node_held > 0 ? " beside the " + human_bytes(node_held) + " its node's ranks hold"
                               : std::string()) +
                ", and " + human_bytes(available) + " is available there: verify at a smaller "
                "--hidden, --layers or --batch (the check is of the scheme, not of the size), or "
                "leave out --verify";
  }
  refuse_together(comm, message, 0);
}

}  // namespace mlps
