// bin/bench_floor: the serial step time against its floor. The floor is the step's GEMM flops at
// the rates bin/bench_kernels measured for exactly those GEMM shapes, plus the optimizer's bytes
// at the memory bandwidth it measured (device-to-device copy): no implementation of this step on
// this machine can be much faster. Reads bench_kernels' JSON (--kernels), runs the serial
// training through the shared driver, and prints the ratio.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "src/data/dataset.h"
#include "src/driver/training_driver.h"
#include "src/errors.h"
#include "src/mpi_session.h"
#include "src/results/run_info.h"
#include "src/results/run_record.h"
#include "src/schemes/serial_trainer.h"
#include "src/timing/step_statistics.h"

namespace mlps {
namespace {

// Counter values of bench_kernels' benchmarks, by name without Google Benchmark's suffixes.
class KernelRates {
 public:
  explicit KernelRates(const std::string& path) : path_(path) {
    std::error_code error;
    std::ifstream in(path);
    if (!std::filesystem::is_regular_file(path, error) || !in)
      throw InputError(path + ": cannot read a file there (run bin/bench_kernels --benchmark_out=" +
                       path + " first)");
    try {
      const nlohmann::json doc = nlohmann::json::parse(in);
      // With --benchmark_repetitions the median aggregate is the rate; without, the single run.
      for (const auto& b : doc.value("benchmarks", nlohmann::json::array())) {
        const std::string name = b.value("run_name", b.value("name", ""));
        const bool median = b.value("aggregate_name", "") == "median";
        if (median) entries_[name] = b;
        else if (b.value("run_type", "iteration") == "iteration") entries_.emplace(name, b);
      }
    } catch (const nlohmann::json::exception& e) {  // syntax, or JSON of another shape
      throw InputError(path + ": not bench_kernels JSON: " + e.what());
    }
  }
  double counter(const std::string& name, const std::string& counter) const {
    const auto it = entries_.find(name);
    if (it == entries_.end() || !it->second.contains(counter))
      throw InputError(path_ + ": no '" + counter + "' for " + name +
                       " (was bench_kernels run with the same model options and backend?)");
    return it->second.at(counter).get<double>();
  }
  // The first benchmark whose name starts with `prefix` (sizes vary with the model options).
  double counter_by_prefix(const std::string& prefix, const std::string& counter) const {
    const auto it = entries_.lower_bound(prefix);
    if (it == entries_.end() || it->first.rfind(prefix, 0) != 0)
      throw InputError(path_ + ": no benchmark named " + prefix + "*");
    return this->counter(it->first, counter);
  }

 private:
  std::string path_;
  std::map<std::string, nlohmann::json> entries_;
};

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
  const KernelRates rates(kernels_json);
  const DeviceKind device = resolve_device(o.device);
  const std::string backend = to_string(device);
  const std::string type = o.precision == Precision::fp64 ? "f64" : "f32";

  const auto dataset = open_dataset(o.data, o.seed);
  const auto schedule = TrainingSchedule::make(o, dataset->size(Split::train));
  std::unique_ptr<Trainer> trainer;
  if (o.precision == Precision::fp64)
    trainer = std::make_unique<SerialTrainer<double>>(device, o.model, o.optimizer, o.seed, o.batch);
  else
    trainer = std::make_unique<SerialTrainer<float>>(device, o.model, o.optimizer, o.seed, o.batch);

  // The floor, before the run so that a missing rate fails fast.
  double gemm_seconds = 0, gemm_flops = 0;
  for (const auto& g : training_step_gemms(o.model, o.batch)) {
    gemm_flops += g.flops();
    gemm_seconds += g.flops() / (rates.counter(gemm_name(g, backend, type), "TFLOP/s") * 1e12);
  }
  // Memory bandwidth is the device-to-device copy's (the ceiling), not the update kernel's own
  // rate, so that a slow optimizer kernel shows up as a gap instead of lowering the floor.
  const std::string copy_prefix = "copy/" + backend + "/" + type + "/";
  const double bandwidth = rates.counter_by_prefix(copy_prefix, "GB/s") * 1e9;
  const double optimizer_seconds = trainer->optimizer_bytes_per_step() / bandwidth;
  const double floor_seconds = gemm_seconds + optimizer_seconds;

  RunContext context{"bench_floor", command_line(argc, argv), MPI_COMM_WORLD, 0, 1};
  const int code = run_training(context, o, schedule, *trainer, *dataset);
  if (code != 0) return code;
  const RunRecord record = read_results_hdf5(o.out);
  const StepSummary measured =
      summarise_steps(record.timing.at("step"), o.warmup, o.batch,
                      model_flops_per_sample(o.model, false));

  std::printf("\nstep-time floor (%s, %s, batch %lld)\n", backend.c_str(), type.c_str(),
              (long long)o.batch);
  std::printf("  GEMMs       %8.2f GFLOP at the measured per-shape rates   %10.3f ms\n",
              gemm_flops / 1e9, gemm_seconds * 1e3);
  std::printf("  optimizer   %8.2f GB at %.1f GB/s (measured copy bandwidth)   %10.3f ms\n",
              trainer->optimizer_bytes_per_step() / 1e9, bandwidth / 1e9,
              optimizer_seconds * 1e3);
  std::printf("  floor                                                      %10.3f ms\n",
              floor_seconds * 1e3);
  std::printf("  measured    median step                                    %10.3f ms\n",
              measured.median_step_seconds * 1e3);
  const double ratio = measured.median_step_seconds / floor_seconds;
  std::printf("  ratio       measured / floor = %.3f (target <= 1.25: %s)\n", ratio,
              ratio <= 1.25 ? "met" : "NOT met");
  return 0;
}

}  // namespace
}  // namespace mlps

int main(int argc, char** argv) {
  mlps::MpiSession mpi(argc, argv);
  return mpi.run("bench_floor", [&] { return mlps::run(mpi, argc, argv); });
}
