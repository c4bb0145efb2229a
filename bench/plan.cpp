// bin/plan: every scheme and grid that fits a model on N ranks of a machine, ranked by predicted
// step time, from the schemes' own volume and memory accounting and the machine's rates
// (inputs/machines/*.json; docs/planning.md). Runs nothing on the cluster: it answers "which
// configuration, and why" before any run.
#include <cstdio>
#include <algorithm>
#include <exception>
#include <optional>
#include <thread>

#include "src/options/cli_validators.h"
#include "src/base/errors.h"
#include "src/options/options.h"
#include "src/memory/available_memory.h"
#include "src/plan/machine_calibration.h"
#include "src/plan/offload_weighing.h"
#include "src/plan/plan_report.h"
#include "src/plan/run_prediction.h"
#include "src/schemes/scheme_registry.h"
#include "src/base/publish_file.h"

namespace mlps {
namespace {

int write_calibration(const std::string& path, const std::string& kernels_path,
                      const std::string& comm_path, int ranks_per_node,
                      const std::vector<std::string>& by_rows_paths,
                      const std::string& optimizer_path,
                      const std::vector<std::string>& restream_paths,
                      const std::vector<std::string>& offload_paths,
                      const std::string& core_path, const std::string& cold_comm_path,
                      const std::string& inter_comm_path) {
  if (kernels_path.empty() || comm_path.empty())
    throw InputError("--calibrate needs --kernels and --comm-bench");
  const KernelRates kernels(kernels_path);
  const CommBenchRecord comm = read_comm_bench_hdf5(comm_path);
  const std::string device = comm.string_attributes.at("device");
  const DeviceKind kind = device == "cpu" ? DeviceKind::cpu : DeviceKind::cuda;
  if (ranks_per_node == 0)
    ranks_per_node = kind == DeviceKind::cpu
                         ? static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))
                         : static_cast<int>(comm.integer_attributes.at("ranks"));
  const AvailableMemory memory = available_memory_per_rank(kind, RankPlacement{});
  std::vector<KernelRates> by_rows;
  for (const std::string& file : by_rows_paths) by_rows.emplace_back(file);
  std::optional<KernelRates> optimizer;
  if (!optimizer_path.empty()) optimizer.emplace(optimizer_path);
  std::vector<KernelRates> restream;
  for (const std::string& file : restream_paths) restream.emplace_back(file);
  std::vector<KernelRates> offload;
  for (const std::string& file : offload_paths) offload.emplace_back(file);
  std::optional<KernelRates> core;
  if (!core_path.empty()) core.emplace(core_path);
  std::optional<CommBenchRecord> cold;
  if (!cold_comm_path.empty()) cold.emplace(read_comm_bench_hdf5(cold_comm_path));
  std::optional<CommBenchRecord> inter;
  if (!inter_comm_path.empty()) inter.emplace(read_comm_bench_hdf5(inter_comm_path));
  const nlohmann::json description =
      calibrated_machine({kernels, comm, comm_path, ranks_per_node, memory.bytes,
                          "measured when calibrating: " + memory.where, by_rows,
                          optimizer ? &*optimizer : nullptr, restream,
                          core ? &*core : nullptr, cold ? &*cold : nullptr, cold_comm_path,
                          inter ? &*inter : nullptr, inter_comm_path, std::move(offload)});
  // Checked as plans will read it before it is written: a refused one never reaches the file.
  const MachineDescription m =
      check_machine_description(description, path + " (as calibrated, not written)");
  const std::string text = description.dump(2) + "\n";
  publish_file(path, std::span<const char>(text.data(), text.size()));
  std::printf("wrote %s: %s, %d ranks per node, GEMM %.3g / %.3g TFLOP/s (fp32 / fp64), "
              "%.3g GB/s (optimizer %.3g GB/s), link %.3g us per step and %.3g GB/s\n",
              path.c_str(), m.name.c_str(), m.ranks_per_node, m.gemm_fp32_flops / 1e12,
              m.gemm_fp64_flops / 1e12, m.memory_bandwidth / 1e9, m.optimizer_bandwidth / 1e9,
              m.intra_node.latency_seconds * 1e6, m.intra_node.bus_bandwidth / 1e9);
  double best_size = 0, best_fraction = 0;
  for (const auto& [bytes, fraction] : m.intra_node.bandwidth_bytes_fraction)
    if (fraction > best_fraction) best_size = bytes, best_fraction = fraction;
  if (best_fraction > 0)
    std::printf("  link busbw by size: at most %.2f of that rate, at %g KiB\n", best_fraction,
                best_size / 1024);
  for (const auto& [bytes, fraction] : m.intra_node.cold_bytes_fraction)
    std::printf("  link busbw at %g KiB with its buffers out of the caches: %.2f of in them\n",
                bytes / 1024, fraction);
  for (const auto& [rows, fraction] : m.gemm_rows_fraction)
    std::printf("  GEMM at %g rows: %.2f of that rate\n", rows, fraction);
  if (m.core_memory_bandwidth > 0)
    std::printf("  one core alone streams %.3g GB/s (optimizer %.3g GB/s)\n",
                m.core_memory_bandwidth / 1e9, m.core_optimizer_bandwidth / 1e9);
  if (m.weight_restream_bandwidth > 0)
    std::printf("  a pipeline's later micro-batches re-read its weights at %.3g GB/s\n",
                m.weight_restream_bandwidth / 1e9);
  for (const auto& [rows, fraction] : m.weight_restream_rows_fraction)
    std::printf("    at %g rows: %.2f of that rate\n", rows, fraction);
  if (m.sample_load_seconds > 0)
    std::printf("  the data loader makes a sample in %.3g us on one core\n",
                m.sample_load_seconds * 1e6);
  return 0;
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  using namespace mlps;
  try {
    OptionParser parser("plan", "Rank every scheme and grid for a model on --world ranks of "
                                "--machine by predicted step time and memory (the model options "
                                "and --config are the schemes').");
    int world = 0, ranks_per_node = 0;
    std::string out, calibrate, kernels_path, comm_path, optimizer_path, core_path,
        cold_comm_path, inter_comm_path;
    std::vector<std::string> precision_names, by_rows_paths, restream_paths,
        offload_paths;
    size_t top = 20, explain = 0;
    bool list_schemes = false;
    CLI::App& app = parser.app();
    app.get_option("--machine")->description("machine description (inputs/machines/*.json; "
                                             "default: inputs/machines/local.json, which "
                                             "`make calibrate` writes)");
    app.add_option("--world", world, "ranks to plan for (GPUs, or processes on CPUs)")
        ->check(integer_between(1, 1 << 24));
    app.add_option("--precisions", precision_names, "precisions to weigh, e.g. fp32,bf16 "
                   "(default: --precision)")
        ->delimiter(',')->check(CLI::IsMember({"fp32", "fp64", "bf16", "fp16"}));
    app.add_option("--top", top, "rows of the ranked table to print")
        ->capture_default_str()->check(integer_between(1, 1 << 30));
    app.add_flag("--list-schemes", list_schemes, "print every scheme's executable name, one a "
                 "line, in the registry's order, and exit (what jobs/sweep and the docs list)");
    app.add_option("--explain", explain, "print the breakdown of this row of the table (0: none)");
    app.add_option("--json", out, "write every candidate and its prediction to this JSON file");
    app.add_option("--calibrate", calibrate, "instead of planning, write this machine's "
                   "description to this file from --kernels and --comm-bench");
    app.add_option("--kernels", kernels_path, "with --calibrate: bin/bench_kernels' JSON "
                   "(--benchmark_out=FILE)");
    app.add_option("--comm-bench", comm_path, "with --calibrate: a bin/bench_comm result file "
                   "of 2 or more ranks");
    app.add_option("--kernels-by-rows", by_rows_paths, "with --calibrate: bin/bench_kernels JSON "
                   "files of the same model at several --batch values, for the GEMM rate by "
                   "rows (comma-separated)")
        ->delimiter(',');
    app.add_option("--optimizer-kernels", optimizer_path, "with --calibrate: bin/bench_kernels "
                   "JSON with adam_update at a size that does not fit in cache, for the "
                   "optimizer's bandwidth (default: the streaming bandwidth)");
    app.add_option("--restream-kernels", restream_paths, "with --calibrate: bin/bench_kernels "
                   "JSON with weight_restream (one copy per core, as a pipeline's ranks), for "
                   "what a micro-batch pays to read its stage's weights again (default: nothing); "
                   "several files at different --batch values (comma-separated): that rate by "
                   "micro-batch rows, relative to the first's")
        ->delimiter(',');
    app.add_option("--comm-bench-cold", cold_comm_path, "with --calibrate: a bin/bench_comm "
                   "--evict-bytes result file of the --comm-bench collective, for its busbw with "
                   "the buffers out of the caches (default: as in them)");
    app.add_option("--inter-node-comm-bench", inter_comm_path, "with --calibrate: a "
                   "bin/bench_comm result file of ranks on 2 or more nodes (one a node), for the "
                   "inter-node link; --comm-bench then ran on one node (default: --comm-bench "
                   "gives both links)");
    app.add_option("--offload-kernels", offload_paths, "with --calibrate: bin/bench_kernels "
                   "JSON with offload_adam/disk, one file per process of a run in as many "
                   "processes at once as the node runs ranks: offload_bandwidth is all their "
                   "bytes over the longest one's time (default: --kernels' one process)")->delimiter(',')->check(CLI::ExistingFile);
    app.add_option("--core-kernels", core_path, "with --calibrate: bin/bench_kernels JSON with "
                   "copy, stream_add and adam_update on one thread while the other cores idle, "
                   "for what a core streams alone (default: the node's share)");
    app.add_option("--ranks-per-node", ranks_per_node, "with --calibrate: the ranks a node runs "
                   "(default: its cores on CPUs, bench_comm's ranks on GPUs)")
        ->check(integer_between(1, 1 << 20));
    // A run's options are accepted (so a run's --config file plans as it is) but change nothing.
    for (const char* run_only : {"--epochs", "--iters", "--warmup", "--seed", "--data", "--device",
                                 "--comm", "--out", "--trace", "--print-every", "--eval-samples",
                                 "--verify", "--timeout", "--skip-memory-check", "--check-grid",
                                 "--inference", "--lr",
                                 // weighed both ways: every configuration with and without it
                                 "--checkpoint-activations"})
      if (CLI::Option* option = app.get_option_no_throw(run_only)) option->group("");
    if (!parser.parse(argc, argv)) {
      std::printf("%s", parser.help_text().c_str());
      return 0;
    }
    if (list_schemes) {
      for (const auto& scheme : scheme_registry()) std::printf("%s\n", scheme->name().c_str());
      return 0;
    }
    const Options& o = parser.options();
    for (const auto& [flag, path] : {std::pair{"--json", out}, {"--calibrate", calibrate}})
      if (const std::string problem = path.empty() ? "" : output_target_problem(path);
          !problem.empty())
        throw InputError(std::string(flag) + " " + problem + " (nothing there is touched)");
    if (!calibrate.empty()) return write_calibration(calibrate, kernels_path, comm_path,
                                                     ranks_per_node, by_rows_paths,
                                                     optimizer_path, restream_paths,
                                                     offload_paths, core_path,
                                                     cold_comm_path, inter_comm_path);
    const std::string machine_path = machine_file_for_run(o.machine);
    if (world == 0 || machine_path.empty())
      throw InputError("--world and --machine are required (--machine defaults to " +
                       std::string(kCalibratedMachineFile) + ", which `make calibrate` writes)");
    std::vector<Precision> precisions;
    for (const std::string& name : precision_names)
      for (Precision p : {Precision::fp32, Precision::fp64, Precision::bf16, Precision::fp16})
        if (name == to_string(p)) precisions.push_back(p);
    if (precisions.empty()) precisions.push_back(o.precision);
    const MachineDescription machine = load_machine_description(machine_path);

    std::vector<PlannedCandidate> plan;
    for (PlanCandidate& c : enumerate_candidates(o, world, precisions)) {
      StepPrediction p = predict_step(c, machine);
      plan.push_back({std::move(c), std::move(p)});
    }
    const std::string offloaded = weigh_offloaded(plan, machine);
    if (plan.empty())
      throw InputError("no scheme accepts this model and batch on " + std::to_string(world) +
                       " ranks");
    rank_candidates(plan);
    if (explain > plan.size())
      throw InputError("--explain " + std::to_string(explain) + ": the table has " +
                       std::to_string(plan.size()) + " rows");
    const size_t fitting = static_cast<size_t>(std::count_if(
        plan.begin(), plan.end(), [](const auto& p) { return p.prediction.fits(); }));
    std::printf("plan: %s; %d ranks (%d per node); H %lld, L %lld, F %lld, S %lld, batch %lld\n",
                machine.name.c_str(), world, machine.ranks_per_node,
                static_cast<long long>(o.model.hidden), static_cast<long long>(o.model.layers),
                static_cast<long long>(o.model.ffn_hidden()),
                static_cast<long long>(o.model.image_size), static_cast<long long>(o.batch));
    std::printf("%zu configurations, %zu fit in memory; predicted, not measured (docs/"
                "planning.md)\n", plan.size(), fitting);
    if (!offloaded.empty()) std::printf("%s\n", offloaded.c_str());
    print_gemm_rates(stdout, plan);
    print_plan_table(stdout, plan, top);
    if (explain > 0) print_explanation(stdout, plan[explain - 1], explain);
    if (!out.empty()) {
      write_plan_json(out, plan, machine.name, o.resolved_json);
      std::printf("wrote %s\n", out.c_str());
    }
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "plan: error: %s\n", e.what());
    return 2;
  } catch (const OutputError& e) {
    std::fprintf(stderr, "plan: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "plan: fatal: %s\n", e.what());
    return 1;
  }
}
