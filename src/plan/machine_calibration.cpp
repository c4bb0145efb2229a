#include "src/plan/machine_calibration.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "src/comm/comm_log.h"
#include "src/base/errors.h"

namespace mlps {

namespace {

nlohmann::json figure(double value, const std::string& source) {
  return {{"value", value}, {"source", source}};
}

// Model GEMMs over the files' median square (a file's own single run once gave 0.97, not 0.89).
nlohmann::json rows_fraction(const std::vector<KernelRates>& files, const std::string& device) {
  const std::string prefix = "gemm/" + device + "/f32/";
  const std::string square = prefix + "NN/m:2048/n:2048/k:2048";
  std::vector<double> squares;
  for (const KernelRates& file : files) squares.push_back(file.counter(square, "TFLOP/s"));
  std::sort(squares.begin(), squares.end());
  const size_t middle = squares.size() / 2;
  const double ceiling = squares.size() % 2 ? squares[middle]
                                            : (squares[middle - 1] + squares[middle]) / 2;
  std::vector<std::pair<double, double>> points;
  std::string names;
  for (const KernelRates& file : files) {
    const int rows = file.model_batch();
    if (rows <= 0) throw InputError(file.path() + ": no model batch recorded (bench_kernels "
                                    "writes it in the JSON's context)");
    const std::string m = "/m:" + std::to_string(rows) + "/", k = "/k:" + std::to_string(rows);
    double sum = 0;
    int count = 0;
    for (const auto& [name, rate] : file.counters_by_prefix(prefix, "TFLOP/s"))
      if (name != square && (name.find(m) != std::string::npos || name.ends_with(k))) {
        sum += rate;
        ++count;
      }
    if (count == 0) throw InputError(file.path() + ": no " + prefix + " GEMM at " +
                                     std::to_string(rows) + " rows");
    points.emplace_back(rows, sum / count / ceiling);
    names += (names.empty() ? "" : ", ") + file.path();
  }
  std::sort(points.begin(), points.end());
  nlohmann::json rows = nlohmann::json::array(), fraction = nlohmann::json::array();
  for (const auto& [r, f] : points) {
    if (!rows.empty() && rows.back().get<double>() == r)
      throw InputError("two bench_kernels files at " + std::to_string(static_cast<int>(r)) +
                       " rows");
    rows.push_back(r);
    fraction.push_back(f);
  }
  return {{"rows", rows},
          {"fraction", fraction},
          {"source", "measured by bin/bench_kernels (" + names + "): per file the mean " + prefix +
                         " rate of the model's GEMMs at its batch over the files' median 2048^3 "
                         "square GEMM"}};
}

// Bytes of weights per second of the time weight_restream spends per weight beyond the time
// with its one weight in cache (the GB/s counters are weight bytes per second of each).
template <typename NodeRates>
nlohmann::json restream_bandwidth(const KernelRates& file, const std::string& device,
                                  const NodeRates& node) {
  const std::string prefix = "weight_restream/" + device + "/f32/";
  const auto variants = file.counters_by_prefix(prefix, "GB/s");
  const auto one = std::find_if(variants.begin(), variants.end(),
                                [](const auto& v) { return v.first.ends_with("/sets:1"); });
  const auto many = std::find_if(variants.begin(), variants.end(),
                                 [](const auto& v) { return !v.first.ends_with("/sets:1"); });
  if (one == variants.end() || many == variants.end())
    throw InputError(file.path() + ": no " + prefix + " pair (sets:1 and more sets)");
  const double extra = 1 / (many->second * 1e9) - 1 / (one->second * 1e9);  // seconds per byte
  if (!(extra > 0))
    throw InputError(file.path() + ": " + many->first + " is not slower than " + one->first +
                     ": its weights stayed in cache; drop --restream-kernels");
  return figure(node.scale / extra, node.source + "the weights' bytes over the time " +
                                        many->first + " takes per weight beyond " + one->first);
}

// Bytes/s of a file's faster streaming kernel, copy or STREAM add (`stream`: "/cpu/f32/").
double faster_stream(const KernelRates& file, const std::string& stream) {
  const double copy = file.counter_by_prefix("copy" + stream, "GB/s") * 1e9;
  const double add = file.has_prefix("stream_add" + stream)
                         ? file.counter_by_prefix("stream_add" + stream, "GB/s") * 1e9
                         : 0.0;
  return std::max(copy, add);
}

// A least-squares line in log-log: one file's re-read rate is the difference of two timings.
template <typename NodeRatesOf>
void restream_by_rows(const std::vector<KernelRates>& files, const std::string& device,
                      const NodeRatesOf& node_rates, nlohmann::json& machine) {
  std::vector<std::pair<double, double>> points;  // (log rows, log rate)
  std::string names;
  for (const KernelRates& file : files) {
    if (file.model_batch() <= 0) throw InputError(file.path() + ": no model batch recorded");
    for (const auto& [x, y] : points)
      if (x == std::log(file.model_batch()))
        throw InputError("two weight_restream files at " + std::to_string(file.model_batch()) +
                         " rows");
    const double rate = restream_bandwidth(file, device, node_rates(file))["value"];
    points.emplace_back(std::log(file.model_batch()), std::log(rate));
    names += (names.empty() ? "" : ", ") + file.path();
  }
  double mean_x = 0, mean_y = 0;
  for (const auto& [x, y] : points) {
    mean_x += x / static_cast<double>(points.size());
    mean_y += y / static_cast<double>(points.size());
  }
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : points) {
    sxy += (x - mean_x) * (y - mean_y);
    sxx += (x - mean_x) * (x - mean_x);
  }
  const double slope = sxy / sxx;
  const double first = points.front().first;
  const std::string source = "measured by bin/bench_kernels (" + names + "): a least-squares "
                             "line through log(re-read rate) against log(rows) over the files";
  machine["weight_restream_bandwidth"] =
      figure(std::exp(mean_y + slope * (first - mean_x)),
             source + ", at " + files.front().path() + "'s rows");
  std::sort(points.begin(), points.end());
  nlohmann::json rows = nlohmann::json::array(), fraction = nlohmann::json::array();
  for (const auto& [x, y] : points) {
    rows.push_back(std::round(std::exp(x)));
    fraction.push_back(std::exp(slope * (x - first)));
  }
  machine["weight_restream_rows_fraction"] = {
      {"rows", rows}, {"fraction", fraction}, {"source", source + ", over its value there"}};
}

// One link's figures from a bench_comm sweep (its all-reduce, else its first collective), with
// the cold fraction by size when an --evict-bytes sweep of the same collective is given.
nlohmann::json comm_link(const CommBenchRecord& comm, const std::string& comm_path,
                         const CommBenchRecord* cold_comm, const std::string& cold_comm_path) {
  const std::string device = comm.string_attributes.at("device");
  const std::string hosts = comm.string_attributes.at("hosts");
  const auto sweep = std::find_if(comm.sweeps.begin(), comm.sweeps.end(),
                                  [](const CommBenchSweep& s) { return s.op == "allreduce"; });
  const CommBenchSweep& s = sweep != comm.sweeps.end() ? *sweep : comm.sweeps.front();
  const int ranks = static_cast<int>(comm.integer_attributes.at("ranks"));
  const CommKind kind = comm_kind_of(s.op);
  const double steps = latency_steps(kind, ranks);
  if (ranks < 2) throw InputError(comm_path + ": bench_comm ran on one rank: no link to time");
  // The link's rates are nccl-tests' calls in a row; a sweep of evicted buffers prices none.
  if (const auto evict = comm.integer_attributes.find("evict_bytes");
      evict != comm.integer_attributes.end() && evict->second > 0)
    throw InputError(comm_path + ": bench_comm ran with --evict-bytes: calibrate from a "
                     "sweep without it");
  const std::string measured = "measured by bin/bench_comm (" + comm_path + ", " +
                               std::to_string(ranks) + " " + device + " ranks on " + hosts +
                               "), " + s.op + ": ";
  nlohmann::json link = {
      {"latency_seconds",
       figure(s.time_seconds.front() / steps,
              measured + "the smallest message's time (" + std::to_string(s.bytes.front()) +
                  " B) over its " + std::to_string(static_cast<int>(steps)) + " ring steps")},
      // The largest message's: gradients and activations are large messages, and a
      // mid-sized one that stays in cache overstates a CPU's bandwidth.
      {"bus_bandwidth", figure(s.busbw.back() * 1e9,
                               measured + "the busbw of the largest message (" +
                                   std::to_string(s.bytes.back()) + " B)")},
      {"bandwidth_bytes_fraction", bandwidth_by_size(s, measured)}};
  if (cold_comm) {
    const auto cold = std::find_if(cold_comm->sweeps.begin(), cold_comm->sweeps.end(),
                                   [&](const CommBenchSweep& c) { return c.op == s.op; });
    const auto evict = cold_comm->integer_attributes.find("evict_bytes");
    if (cold == cold_comm->sweeps.end() || evict == cold_comm->integer_attributes.end() ||
        evict->second <= 0)
      throw InputError(cold_comm_path + ": not a bench_comm --evict-bytes sweep of " + s.op);
    link["cold_bandwidth_bytes_fraction"] = cold_fraction_by_size(
        s, *cold, "measured by bin/bench_comm (" + cold_comm_path + ", --evict-bytes " +
                      std::to_string(evict->second) + ") against " + comm_path + ", " + s.op +
                      ": ");
  }
  return link;
}

}  // namespace

nlohmann::json calibrated_machine(const CalibrationInputs& in) {
  const std::string device = in.comm.string_attributes.at("device");
  const std::string hosts = in.comm.string_attributes.at("hosts");
  const bool cpu = device == "cpu";
  // A CPU node's rates are its cores': kernels timed on fewer threads are scaled up to them.
  struct NodeRates {
    double scale;
    std::string source;  // the file and the scaling, before the benchmark's name
  };
  auto node_rates = [&](const KernelRates& file) {
    const int threads = file.cpu_threads();
    const double scale =
        cpu && threads > 0 ? static_cast<double>(in.ranks_per_node) / threads : 1.0;
    return NodeRates{scale, "measured by bin/bench_kernels (" + file.path() +
                                (file.blas().empty() ? "" : "; " + file.blas()) + ")" +
                                (scale != 1.0 ? " on " + std::to_string(threads) +
                                                    " thread(s), times " +
                                                    std::to_string(in.ranks_per_node) +
                                                    " cores / " + std::to_string(threads) +
                                                    " for the node"
                                              : std::string()) +
                                ": "};
  };
  const NodeRates node = node_rates(in.kernels);
  auto gemm = [&](const std::string& type) {
    const std::string prefix = "gemm/" + device + "/" + type + "/";
    // counter_by_prefix throws when no benchmark has the prefix.
    double fastest = std::max(0.0, in.kernels.counter_by_prefix(prefix, "TFLOP/s"));
    for (const auto& [name, rate] : in.kernels.counters_by_prefix(prefix, "TFLOP/s"))
      fastest = std::max(fastest, rate);
    return figure(fastest * 1e12 * node.scale, node.source + "the fastest of " + prefix + "*");
  };
  const std::string stream = "/" + device + "/f32/";

  nlohmann::json intra = comm_link(in.comm, in.comm_path, in.cold_comm, in.cold_comm_path);
  nlohmann::json inter = intra;
  if (in.inter_comm) {
    if (hosts.find(',') != std::string::npos)
      throw InputError(in.comm_path + ": bench_comm ran on " + hosts + ": the intra-node link "
                       "wants a run on one node when --inter-node-comm-bench gives the other");
    const std::string inter_hosts = in.inter_comm->string_attributes.at("hosts");
    if (inter_hosts.find(',') == std::string::npos)
      throw InputError(in.inter_comm_path + ": bench_comm ran on one node (" + inter_hosts +
                       "): the inter-node link wants a run over 2 or more");
    inter = comm_link(*in.inter_comm, in.inter_comm_path, nullptr, "");
  } else if (hosts.find(',') == std::string::npos) {
    for (auto& [key, value] : inter.items())
      value["source"] = "not measured (bench_comm ran on one node): the intra-node figure";
  }

  nlohmann::json machine = {{"name", "calibrated on " + hosts + " (" + device + ")"},
          {"description", "Written by bin/plan --calibrate from this machine's benchmarks."},
          {"ranks_per_node", in.ranks_per_node},
          {"ranks_share_node", cpu},
          {"comm_overlaps_compute", !cpu},
          {"reduce_scatter_copies_send_buffer", cpu},  // MPI's collectives, NCCL's on GPUs
          {"memory_bytes", figure(in.memory_bytes, in.memory_source)},
          {"gemm_fp32_flops", gemm("f32")},
          {"gemm_fp64_flops", gemm("f64")},
          {"memory_bandwidth",
           figure(faster_stream(in.kernels, stream) * node.scale,
                  node.source + "the faster of copy" + stream + "* and stream_add" + stream + "*")},
          {"intra_node", intra},
          {"inter_node", inter}};
  if (!in.by_rows.empty()) machine["gemm_rows_fraction"] = rows_fraction(in.by_rows, device);
  if (in.optimizer) {
    const NodeRates adam_node = node_rates(*in.optimizer);
    const std::string adam = "adam_update" + stream;
    machine["optimizer_bandwidth"] =
        figure(in.optimizer->counter_by_prefix(adam, "GB/s") * 1e9 * adam_node.scale,
               adam_node.source + adam + "*");
  }
  if (in.core) {
    const KernelRates& core = *in.core;
    if (core.cpu_threads() != 1)
      throw InputError(core.path() + ": ran on " + std::to_string(core.cpu_threads()) +
                       " threads; one core's bandwidth wants one (OPENBLAS_NUM_THREADS=1)");
    const std::string source = "measured by bin/bench_kernels (" + core.path() +
                               ") on one thread while the other cores idled: ";
    machine["core_memory_bandwidth"] =
        figure(faster_stream(core, stream),
               source + "the faster of copy" + stream + "* and stream_add" + stream + "*");
    if (core.has_prefix("adam_update" + stream))
      machine["core_optimizer_bandwidth"] =
          figure(core.counter_by_prefix("adam_update" + stream, "GB/s") * 1e9,
                 source + "adam_update" + stream + "*");
  }
  // Offloaded updates (bench_kernels' offload_adam): Adam streaming its state through bin/data
  // --offload's scratch file (--offload-dir), what one rank's update moves a second, its
  // arithmetic included; a GPU's update with its state on the host, the bytes crossing the link
  // a second, the host's Adam included.
  for (const auto& [key, prefix, what] :
       {std::tuple{"offload_bandwidth", "offload_adam/disk/",
                   "Adam's moments read from and written to the scratch file while it updates "
                   "them"},
        std::tuple{"host_offload_bandwidth", "offload_adam/host/",
                   "the gradients down and the values up while the host updates the state"}})
    if (key == std::string("offload_bandwidth") && !in.offload.empty()) {
      // The node's ranks stream their state at once, and a disk may serve several queues
      // faster than one: every process's bytes over the longest one's time (they started
      // together), the node's rate.
      double bytes = 0, longest = 0;
      std::string files;
      for (const KernelRates& f : in.offload) {
        f.counter_by_prefix(prefix, "GB/s");  // InputError naming the file when absent
        const std::string name = f.counters_by_prefix(prefix, "GB/s").front().first;
        const double seconds = f.counter(name, "iterations") * f.counter(name, "real_time");
        bytes += f.counter(name, "GB/s") * seconds;
        longest = std::max(longest, seconds);
        files += (files.empty() ? "" : ", ") + f.path();
      }
      machine[key] = figure(bytes / longest * 1e9,
                            "measured by bin/bench_kernels in " +
                                std::to_string(in.offload.size()) + " processes at once (" +
                                files + "): " + prefix + "*, " + what +
                                ", every process's bytes over the longest one's time");
    } else if (in.kernels.has_prefix(prefix)) {
      machine[key] = figure(in.kernels.counter_by_prefix(prefix, "GB/s") * 1e9,
                            "measured by bin/bench_kernels (" + in.kernels.path() + "): " +
                                prefix + "*, " + what + ", one process on the node");
    }
  // The data loader's samples, made on one thread whatever the kernels ran on (no scaling).
  if (cpu && in.kernels.has_prefix("sample_load/host/"))
    machine["sample_load_seconds"] =
        figure(1 / in.kernels.counter_by_prefix("sample_load/host/", "samples/s"),
               "measured by bin/bench_kernels (" + in.kernels.path() +
                   "): one over the samples/s of sample_load/host/* on one thread");
  if (in.restream.size() == 1)
    machine["weight_restream_bandwidth"] =
        restream_bandwidth(in.restream.front(), device, node_rates(in.restream.front()));
  else if (in.restream.size() > 1)
    restream_by_rows(in.restream, device, node_rates, machine);
  return machine;
}

nlohmann::json cold_fraction_by_size(const CommBenchSweep& hot, const CommBenchSweep& cold,
                                     const std::string& source) {
  nlohmann::json bytes = nlohmann::json::array(), fraction = nlohmann::json::array();
  for (size_t i = 0; i < cold.bytes.size(); ++i) {
    const auto same = std::find(hot.bytes.begin(), hot.bytes.end(), cold.bytes[i]);
    if (same == hot.bytes.end()) continue;
    bytes.push_back(cold.bytes[i]);
    fraction.push_back(std::min(1.0, cold.busbw[i] / hot.busbw[same - hot.bytes.begin()]));
  }
  if (bytes.empty()) throw InputError(source + "no message size in both sweeps");
  return {{"bytes", bytes}, {"fraction", fraction},
          {"source", source + "each size's busbw with the buffers out of the caches over its "
                              "busbw in them, at most 1"}};
}

nlohmann::json bandwidth_by_size(const CommBenchSweep& s, const std::string& source) {
  nlohmann::json bytes = nlohmann::json::array(), fraction = nlohmann::json::array();
  std::vector<double> busbw(s.bytes.size());
  double fastest_from_here = s.time_seconds.back();
  for (size_t i = s.bytes.size(); i-- > 0;) {
    fastest_from_here = std::min(fastest_from_here, s.time_seconds[i]);
    busbw[i] = s.busbw[i] * s.time_seconds[i] / fastest_from_here;
  }
  for (size_t i = 0; i < s.bytes.size(); ++i) {
    bytes.push_back(s.bytes[i]);
    fraction.push_back(busbw[i] / busbw.back());
  }
  return {{"bytes", bytes}, {"fraction", fraction},
          {"source", source + "each size's busbw over the largest's, each size's time the "
                              "least of its own and every larger size's"}};
}

}  // namespace mlps
