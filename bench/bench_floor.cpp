// bin/bench_floor: the serial step time, phase by phase, against its floor. The floor is the
// step's GEMM flops at the rates bin/bench_kernels measured for exactly those GEMM shapes (with
// the threads the step uses), plus the element-wise kernels' and the optimizer's bytes at the
// best all-core memory bandwidth it measured (copy or STREAM add, on every thread of the rank):
// no implementation of this step on this machine can be much faster, and a kernel that leaves
// cores idle shows as a gap. Reads bench_kernels' JSON (--kernels), runs the serial training
// through the shared driver with the optimizer in its own phase, and prints each phase beside
// its floor; then runs it again with the weight update fused into backward (bin/serial
// --fused-update), which moves fewer bytes than the floor counts, and prints that step too.
// Beside that floor of what the library achieves stands the machine's: the same GEMM flops at
// the processor's FMA peak (bench_kernels' fma_peak, one core's, times the step's threads) and
// the same bytes at the same measured streams, so the report shows both how close the step is
// to the library and how close the library is to the machine.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "kernels/kernels.h"
#include "src/data/dataset.h"
#include "src/driver/training_driver.h"
#include "src/base/errors.h"
#include "src/model/fused_weight_update.h"
#include "src/plan/kernel_rates.h"
#include "src/comm/mpi_session.h"
#include "src/results/run_info.h"
#include "src/results/run_record.h"
#include "src/schemes/serial/serial_trainer.h"
#include "src/timing/step_statistics.h"

namespace mlps {
namespace {

std::string gemm_name(const GemmShape& g, const std::string& backend, const std::string& type) {
  return "gemm/" + backend + "/" + type + "/" + (g.trans_a ? "T" : "N") + (g.trans_b ? "T" : "N") +
         "/m:" + std::to_string(g.m) + "/n:" + std::to_string(g.n) + "/k:" + std::to_string(g.k);
}

int run(const MpiSession& mpi, int argc, char** argv) {
  OptionParser parser("bench_floor", "Measure the serial step time and compare it with the floor "
                      "made of the step's GEMM flops and optimizer bytes at the rates "
                      "bin/bench_kernels measured.");
  std::string kernels_json = "results/bench/kernels.json";
  parser.app().add_option("--kernels", kernels_json, "bench_kernels JSON output");
  parser.app().get_option("--iters")->default_val(12);
  parser.app().get_option("--out")->default_val("results/bench/floor-serial.h5");
  if (!parser.parse(argc, argv)) {
    std::printf("%s", parser.help_text().c_str());
    return 0;
  }
  const Options& o = parser.options();
  if (mpi.size() != 1) throw InputError("bin/bench_floor runs on one rank");
  // Its floor comes from --kernels; a machine description would be silently unused.
  if (!o.machine.empty() && o.machine != "none")
    throw InputError("--machine " + o.machine + ": bin/bench_floor predicts nothing (its floor "
                     "comes from --kernels); leave --machine out");
  // Two files are written, the second named after the first: an unnamed first is no name.
  if (o.out.empty())
    throw InputError("--out '': name the result file (default results/bench/floor-serial.h5)");
  const KernelRates rates(kernels_json);
  const DeviceKind device = resolve_device(o.device);
  const std::string backend = to_string(device);
  const std::string type = o.precision == Precision::fp64 ? "f64" : "f32";

  const auto dataset = open_dataset(o.data, o.seed);
  const auto schedule = TrainingSchedule::make(o, dataset->size(Split::train));
  const auto make_trainer = [&](bool fuse_update) -> std::unique_ptr<Trainer> {
    if (o.precision == Precision::fp64)
      return std::make_unique<SerialTrainer<double>>(device, o.model, o.optimizer, o.seed,
                                                     o.batch, fuse_update);
    return std::make_unique<SerialTrainer<float>>(device, o.model, o.optimizer, o.seed, o.batch,
                                                  fuse_update);
  };
  auto trainer = make_trainer(false);

  // The floor, before the run so that a missing rate fails fast.
  std::map<std::string, double> gemm_flops, gemm_seconds;  // by phase: "forward", "backward"
  for (const auto& g : training_step_gemms(o.model, o.batch)) {
    const std::string phase = g.name.ends_with(".forward") ? "forward" : "backward";
    gemm_flops[phase] += g.flops();
    const double rate = rates.counter(gemm_name(g, backend, type), "TFLOP/s") * 1e12;
    gemm_seconds[phase] += g.flops() / rate;
  }
  const std::string stream = "/" + backend + "/" + type + "/";
  const double copy_rate = rates.counter_by_prefix("copy" + stream, "GB/s") * 1e9;
  const double add_rate = rates.counter_by_prefix("stream_add" + stream, "GB/s") * 1e9;
  const double bandwidth = std::max(copy_rate, add_rate);
  // The optimizer reads more than it writes, which this memory serves faster: its bytes are
  // priced at the stream with its own read/write mix where bench_kernels measured one (CPU).
  const double update_rate =
      rates.has_prefix("stream_update" + stream)
          ? rates.counter_by_prefix("stream_update" + stream, "GB/s") * 1e9
          : 0.0;
  const double optimizer_bandwidth = std::max(bandwidth, update_rate);
  const double element = o.precision == Precision::fp64 ? 8.0 : 4.0;
  const StepElementwiseBytes elementwise =
      training_step_elementwise_bytes(o.model, o.batch, element);
  const double optimizer_bytes = trainer->optimizer_bytes_per_step();
  std::map<std::string, double> floors{
      {"forward", gemm_seconds["forward"] + elementwise.forward / bandwidth},
      {"backward", gemm_seconds["backward"] + elementwise.backward / bandwidth},
      {"optimizer", optimizer_bytes / optimizer_bandwidth}};
  const double floor_seconds = floors["forward"] + floors["backward"] + floors["optimizer"];
  // The machine's floor: no BLAS can beat the FMA peak; the bytes are priced at the measured
  // streams as above (STREAM-style loops, the memory's own speed, not a library's).
  const int threads = cpu::thread_count();
  const std::string peak_prefix = "fma_peak/" + backend + "/" + type + "/";
  const double peak = device == DeviceKind::cpu && rates.has_prefix(peak_prefix)
                          ? rates.counter_by_prefix(peak_prefix, "TFLOP/s") * 1e12 * threads
                          : 0.0;
  std::map<std::string, double> machine_floors;
  if (peak > 0)
    machine_floors = {
        {"forward", gemm_flops["forward"] / peak + elementwise.forward / bandwidth},
        {"backward", gemm_flops["backward"] / peak + elementwise.backward / bandwidth},
        {"optimizer", floors["optimizer"]}};
  const double machine_floor_seconds =
      peak > 0 ? machine_floors["forward"] + machine_floors["backward"] + machine_floors["optimizer"]
               : 0.0;

  RunContext context{"bench_floor", command_line(argc, argv), MPI_COMM_WORLD, 0, 1};
  const int code = run_training(context, o, schedule, *trainer, *dataset);
  if (code != 0) return code;
  trainer.reset();
  // The same training with the fused update where it applies, into a file beside the first.
  const bool fusable = fused_update_applies(device, storage_format(o.precision));
  Options fused = o;
  fused.out = std::filesystem::path(o.out).replace_extension().string() + "-fused.h5";
  if (fusable) {
    auto fused_trainer = make_trainer(true);
    const int fused_code = run_training(context, fused, schedule, *fused_trainer, *dataset);
    if (fused_code != 0) return fused_code;
  }
  const auto phase_median = [&](const RunRecord& run, const std::string& phase) {
    return median_slowest(run.timing.at(phase), o.warmup);
  };
  const RunRecord record = read_results_hdf5(o.out);
  const auto measured = [&](const std::string& phase) { return phase_median(record, phase); };

  std::printf("\nstep-time floor (%s, %s, batch %lld, %d thread%s per rank)\n", backend.c_str(),
              type.c_str(), (long long)o.batch, threads, threads == 1 ? "" : "s");
  std::printf("  bandwidth   %.1f GB/s, the better of all-core copy %.1f and STREAM add %.1f GB/s;"
              " optimizer %.1f GB/s (with Adam's read/write mix %.1f)\n",
              bandwidth / 1e9, copy_rate / 1e9, add_rate / 1e9, optimizer_bandwidth / 1e9,
              update_rate / 1e9);
  if (peak > 0)
    std::printf("  machine     GEMMs at the FMA peak, %.1f GFLOP/s (%d thread%s x one core's %.1f), "
                "bytes at the bandwidths above\n",
                peak / 1e9, threads, threads == 1 ? "" : "s", peak / threads / 1e9);
  else
    std::printf("  machine     no %s* in %s (a bench_kernels run of this build records it)\n",
                peak_prefix.c_str(), kernels_json.c_str());
  std::printf("  %-10s %11s %10s %8s %10s %8s   %s\n", "phase", "measured ms", "floor ms", "ratio",
              "machine ms", "ratio", "floor made of");
  const auto ratio_text = [](double measured_seconds, double floor) {
    char text[16] = "-";
    if (floor > 0) std::snprintf(text, sizeof text, "%.3f", measured_seconds / floor);
    return std::string(text);
  };
  const auto row = [&](const std::string& phase, const std::string& made_of) {
    const double m = measured(phase), f = floors.count(phase) ? floors[phase] : 0.0;
    const double machine = machine_floors.count(phase) ? machine_floors[phase] : 0.0;
    std::printf("  %-10s %11.3f %10.3f %8s %10.3f %8s   %s\n", phase.c_str(), m * 1e3, f * 1e3,
                ratio_text(m, f).c_str(), machine * 1e3, ratio_text(m, machine).c_str(),
                made_of.c_str());
  };
  const auto fixed = [](double value, const char* unit) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f %s", value, unit);
    return std::string(text);
  };
  row("forward", fixed(gemm_flops["forward"] / 1e9, "GFLOP") +
                     " of GEMMs at the per-shape rates; " +
                     fixed(elementwise.forward / 1e9, "GB") + " element-wise");
  row("backward", fixed(gemm_flops["backward"] / 1e9, "GFLOP") + " of GEMMs; " +
                      fixed(elementwise.backward / 1e9, "GB") + " element-wise");
  row("optimizer", fixed(optimizer_bytes / 1e9, "GB") + " (parameters, gradients, moments)");
  row("data", "nothing: prepared ahead, off the critical path");
  const double step = measured("step"), optimizer = measured("optimizer");
  const double ratio = step / floor_seconds;
  std::printf("  %-10s %11.3f %10.3f %8.3f %10.3f %8s   (target <= 1.15 of the library's floor: "
              "%s)\n", "step", step * 1e3, floor_seconds * 1e3, ratio, machine_floor_seconds * 1e3,
              ratio_text(step, machine_floor_seconds).c_str(), ratio <= 1.15 ? "met" : "NOT met");
  if (fusable) {
    const double fused_step = phase_median(read_results_hdf5(fused.out), "step");
    std::printf("  %-10s %11.3f %10.3f %8.3f %10.3f %8s   weight update fused into backward "
                "(bin/serial --fused-update):\n  %66s it moves 16 bytes per weight less than the "
                "floors count\n",
                "fused step", fused_step * 1e3, floor_seconds * 1e3, fused_step / floor_seconds,
                machine_floor_seconds * 1e3, ratio_text(fused_step, machine_floor_seconds).c_str(),
                "");
  }
  const double optimizer_rate = optimizer_bytes / optimizer;
  std::printf("  optimizer   %.1f GB/s = %.0f%% of the all-core copy bandwidth "
              "(target >= 80%%: %s)\n",
              optimizer_rate / 1e9, 100 * optimizer_rate / copy_rate,
              optimizer_rate >= 0.8 * copy_rate ? "met" : "NOT met");
  if (backend == "cpu") {
    const std::string adam = "/cpu/" + type + "/";
    const double fast = rates.counter_by_prefix("adam_update" + adam, "GB/s");
    const double reference = rates.counter_by_prefix("adam_update_reference" + adam, "GB/s");
    std::printf("  adam        %.1f GB/s, single-thread reference loop %.1f GB/s: %.2fx\n", fast,
                reference, fast / reference);
  }
  return 0;
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("bench_floor", [&] { return mlps::run(mpi, argc, argv); });
}
