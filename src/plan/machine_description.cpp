#include "src/plan/machine_description.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "src/base/errors.h"
#include "src/base/file_kind.h"
#include "src/options/options.h"

namespace mlps {

namespace {

// A (rows, fraction) table (or bytes, fraction) at `rows`: interpolated in log(rows), the end
// values beyond it; 1 when empty.
double fraction_at(const std::vector<std::pair<double, double>>& t, double rows) {
  if (t.empty()) return 1.0;
  if (rows <= t.front().first) return t.front().second;
  if (rows >= t.back().first) return t.back().second;
  size_t i = 1;
  while (t[i].first < rows) ++i;
  const double x = std::log(rows / t[i - 1].first) / std::log(t[i].first / t[i - 1].first);
  return t[i - 1].second + x * (t[i].second - t[i - 1].second);
}

class DescriptionReader {
 public:
  explicit DescriptionReader(const std::string& path) : path_(path) {
    if (const std::string problem = input_file_problem(path); !problem.empty())
      throw InputError("--machine " + problem);
    std::ifstream in(path);
    if (!in) throw InputError("--machine " + path + ": cannot be read");
    try {
      json_ = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw InputError("--machine " + path + ": not JSON (" + e.what() + ")");
    }
  }
  // A description not yet in a file; `label` names it in messages.
  DescriptionReader(nlohmann::json json, std::string label)
      : path_(std::move(label)), json_(std::move(json)) {}
  // A positive figure: {"value": x, "source": "..."} at key path a.b.
  double figure(const std::string& a, const std::string& b = "") const {
    const std::string name = b.empty() ? a : a + "." + b;
    const nlohmann::json* node = json_.contains(a) ? &json_[a] : nullptr;
    if (node && !b.empty()) node = node->contains(b) ? &(*node)[b] : nullptr;
    if (!node || !node->is_object() || !node->contains("value") ||
        !(*node)["value"].is_number() || !node->contains("source") ||
        !(*node)["source"].is_string() || (*node)["source"].get<std::string>().empty())
      fail(name + " must be {\"value\": <number>, \"source\": \"<where it comes from>\"}");
    const double value = (*node)["value"].get<double>();
    if (!(value >= 0)) fail(name + " must not be negative");
    return value;
  }
  bool has(const std::string& key) const { return json_.contains(key); }
  bool is_integer(const std::string& key) const {
    return json_.contains(key) && json_[key].is_number_integer();
  }
  LinkModel link(const std::string& name) const {
    LinkModel link;
    link.latency_seconds = figure(name, "latency_seconds");
    link.bus_bandwidth = figure(name, "bus_bandwidth");
    if (link.bus_bandwidth <= 0) fail(name + ".bus_bandwidth must be positive");
    link.bandwidth_bytes_fraction =
        fraction_table(json_.at(name), name + ".bandwidth_bytes_fraction", "bytes");
    link.cold_bytes_fraction =
        fraction_table(json_.at(name), name + ".cold_bandwidth_bytes_fraction", "bytes");
    return link;
  }
  // The optional {"rows": [...], "fraction": [...], "source": "..."} table at `key`.
  std::vector<std::pair<double, double>> rows_table(const std::string& key) const {
    return fraction_table(json_, key, "rows");
  }
  // The optional {"<axis>": [...], "fraction": [...], "source": "..."} table at the last part of
  // `name` in `parent`.
  std::vector<std::pair<double, double>> fraction_table(const nlohmann::json& parent,
                                                        const std::string& name,
                                                        const std::string& axis) const {
    std::vector<std::pair<double, double>> table;
    const std::string key = name.substr(name.rfind('.') + 1);
    if (!parent.contains(key)) return table;
    const nlohmann::json& t = parent[key];
    const std::string shape = name + " must be {\"" + axis +
                              "\": [ascending numbers], \"fraction\": [positive numbers of "
                              "the same count], \"source\": \"...\"}";
    if (!t.is_object() || !t.contains(axis) || !t.contains("fraction") || !t.contains("source") ||
        !t[axis].is_array() || !t["fraction"].is_array() || !t["source"].is_string() ||
        t["source"].get<std::string>().empty() || t[axis].size() != t["fraction"].size() ||
        t[axis].empty())
      fail(shape);
    for (size_t i = 0; i < t[axis].size(); ++i) {
      if (!t[axis][i].is_number() || !t["fraction"][i].is_number()) fail(shape);
      const double at = t[axis][i].get<double>(), fraction = t["fraction"][i].get<double>();
      if (!(at > 0) || !(fraction > 0) || (!table.empty() && at <= table.back().first))
        fail(shape);
      table.emplace_back(at, fraction);
    }
    return table;
  }
  template <typename T>
  T value(const std::string& key) const {
    if (!json_.contains(key)) fail("no \"" + key + "\"");
    try {
      return json_[key].get<T>();
    } catch (const nlohmann::json::exception&) {
      fail("\"" + key + "\" has the wrong type");
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("--machine " + path_ + ": " + what);
  }

 private:
  std::string path_;
  nlohmann::json json_;
};

}  // namespace

double LinkModel::seconds(CommKind kind, int ranks, double bytes, bool cold) const {
  if (ranks <= 1 && kind != CommKind::send_recv) return 0;
  const double steps = latency_steps(kind, ranks);
  const double transfer = bytes * bus_bandwidth_factor(kind, ranks) /
                          (bus_bandwidth * fraction_at(bandwidth_bytes_fraction, bytes) *
                           (cold ? fraction_at(cold_bytes_fraction, bytes) : 1.0));
  if (bandwidth_bytes_fraction.empty()) return steps * latency_seconds + transfer;
  return std::max(steps * latency_seconds, transfer);
}

double MachineDescription::rate_share(int ranks_on_node, int threads_per_rank) const {
  if (!ranks_share_node) return 1.0;
  const double ranks = std::max(1, ranks_on_node), cores = std::max(1, ranks_per_node);
  if (threads_per_rank <= 0) return 1.0 / ranks;
  return std::min(static_cast<double>(threads_per_rank), cores / ranks) / cores;
}

std::string GemmRate::describe() const {
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.4g TFLOP/s", flops / 1e12);
  if (tensor_cores) return math + " tensor cores at " + rate;
  if (figure == "gemm_" + math + "_flops") return math + " at " + rate;
  return math + " at the fp32 rate, " + rate + " (no gemm_" + math + "_flops)";
}

GemmRate MachineDescription::gemm_rate(Precision precision, GemmCompute math, int ranks_on_node,
                                       int threads_per_rank) const {
  GemmRate r{"fp64", "gemm_fp64_flops", gemm_fp64_flops};
  if (precision != Precision::fp64) {
    const GemmCompute compute = gemm_compute(precision, math);
    const double tensor_core = compute == GemmCompute::bf16   ? gemm_bf16_flops
                               : compute == GemmCompute::fp16 ? gemm_fp16_flops
                               : compute == GemmCompute::tf32 ? gemm_tf32_flops
                                                              : 0;
    r.math = to_string(compute);
    r.tensor_cores = tensor_core > 0;
    r.figure = r.tensor_cores ? "gemm_" + r.math + "_flops" : "gemm_fp32_flops";
    r.flops = r.tensor_cores ? tensor_core : gemm_fp32_flops;
  }
  r.flops *= rate_share(ranks_on_node, threads_per_rank);
  return r;
}

double MachineDescription::streaming_share(double node_rate, double core_rate, int ranks_on_node,
                                           int threads_per_rank) const {
  const double share = rate_share(ranks_on_node, threads_per_rank);
  if (!ranks_share_node || core_rate <= 0) return node_rate * share;
  const double cores = std::max(1, ranks_per_node);
  const double threads = share * cores;  // the cores its threads use (less when time-shared)
  const double busy = std::min(cores, std::max(1, ranks_on_node) * threads);
  return threads * std::min(core_rate, node_rate / busy);
}

double MachineDescription::restream_bandwidth(int ranks_on_node, int threads_per_rank,
                                              double rows) const {
  const double at_rows = rows > 0 ? fraction_at(weight_restream_rows_fraction, rows) : 1.0;
  return weight_restream_bandwidth * at_rows * rate_share(ranks_on_node, threads_per_rank);
}

double MachineDescription::gemm_efficiency(double rows) const {
  return fraction_at(gemm_rows_fraction, rows);
}

int MachineDescription::busy_threads(int ranks_on_node, int threads_per_rank) const {
  if (!ranks_share_node) return 0;
  const int ranks = std::max(1, ranks_on_node);
  return ranks * (threads_per_rank > 0 ? threads_per_rank
                                       : std::max(1, std::max(1, ranks_per_node) / ranks));
}

bool MachineDescription::loads_ahead(PrefetchMode mode, int ranks_on_node,
                                     int threads_per_rank) const {
  return mlps::loads_ahead(mode, busy_threads(ranks_on_node, threads_per_rank),
                           std::max(1, ranks_per_node));
}

double MachineDescription::data_loading_seconds(double rows, int ranks_on_node,
                                                int threads_per_rank, PrefetchMode mode) const {
  if (sample_load_seconds <= 0) return 0;
  const double cores = std::max(1, ranks_per_node), ranks = std::max(1, ranks_on_node);
  // In the data phase, on the rank's own thread: time-shared where ranks outnumber cores.
  if (!loads_ahead(mode, ranks_on_node, threads_per_rank))
    return rows * sample_load_seconds * (ranks_share_node ? std::max(1.0, ranks / cores) : 1.0);
  if (busy_threads(ranks_on_node, threads_per_rank) < cores) return 0;  // on an idle core
  return ranks * rows * sample_load_seconds / cores;
}

namespace {

MachineDescription read_description(const DescriptionReader& in) {
  MachineDescription m;
  m.name = in.value<std::string>("name");
  m.ranks_per_node = in.value<int>("ranks_per_node");
  if (m.ranks_per_node < 1 || !in.is_integer("ranks_per_node"))
    in.fail("ranks_per_node must be a whole number of at least 1");
  m.ranks_share_node = in.value<bool>("ranks_share_node");
  m.comm_overlaps_compute = in.value<bool>("comm_overlaps_compute");
  if (in.has("reduce_scatter_copies_send_buffer"))
    m.reduce_scatter_copies_send_buffer = in.value<bool>("reduce_scatter_copies_send_buffer");
  m.memory_bytes = in.figure("memory_bytes");
  if (m.memory_bytes <= 0) in.fail("memory_bytes must be positive");
  m.gemm_fp32_flops = in.figure("gemm_fp32_flops");
  m.gemm_fp64_flops = in.figure("gemm_fp64_flops");
  m.memory_bandwidth = in.figure("memory_bandwidth");
  m.optimizer_bandwidth = in.has("optimizer_bandwidth") ? in.figure("optimizer_bandwidth")
                                                        : m.memory_bandwidth;
  if (m.gemm_fp32_flops <= 0 || m.gemm_fp64_flops <= 0 || m.memory_bandwidth <= 0 ||
      m.optimizer_bandwidth <= 0)
    in.fail("GEMM rates and bandwidths must be positive");
  // Tensor cores' rates, where the machine has them (absent: GEMMs in that math at the fp32 rate).
  for (auto [key, field] : {std::pair{"gemm_bf16_flops", &m.gemm_bf16_flops},
                            std::pair{"gemm_fp16_flops", &m.gemm_fp16_flops},
                            std::pair{"gemm_tf32_flops", &m.gemm_tf32_flops}})
    if (in.has(key)) {
      *field = in.figure(key);
      if (*field <= 0) in.fail(std::string(key) + " must be positive");
    }
  for (auto [key, field] : {std::pair{"core_memory_bandwidth", &m.core_memory_bandwidth},
                            std::pair{"core_optimizer_bandwidth", &m.core_optimizer_bandwidth}})
    if (in.has(key)) *field = in.figure(key);
  for (auto [key, field] : {std::pair{"weight_restream_bandwidth", &m.weight_restream_bandwidth},
                            std::pair{"sample_load_seconds", &m.sample_load_seconds},
                            std::pair{"offload_bandwidth", &m.offload_bandwidth},
                            std::pair{"host_offload_bandwidth", &m.host_offload_bandwidth}})
    if (in.has(key)) {
      *field = in.figure(key);
      if (*field <= 0) in.fail(std::string(key) + " must be positive");
    }
  m.intra_node = in.link("intra_node");
  m.inter_node = in.link("inter_node");
  m.gemm_rows_fraction = in.rows_table("gemm_rows_fraction");
  m.weight_restream_rows_fraction = in.rows_table("weight_restream_rows_fraction");
  if (!m.weight_restream_rows_fraction.empty() && m.weight_restream_bandwidth <= 0)
    in.fail("weight_restream_rows_fraction needs weight_restream_bandwidth");
  return m;
}

}  // namespace

MachineDescription load_machine_description(const std::string& path) {
  return read_description(DescriptionReader(path));
}

MachineDescription check_machine_description(const nlohmann::json& description,
                                             const std::string& label) {
  return read_description(DescriptionReader(description, label));
}

}  // namespace mlps
