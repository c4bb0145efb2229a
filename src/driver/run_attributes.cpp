#include "src/driver/run_attributes.h"

#include <cmath>

#include "kernels/kernels.h"
#include "src/results/run_info.h"

namespace mlps {

void fill_run_attributes(RunRecord& record, const RunContext& context, const Options& o,
                         const Trainer& trainer, const Dataset& dataset,
                         const RunDescription& run) {
  auto& s = record.string_attributes;
  s["scheme"] = trainer.scheme();
  s["grid"] = trainer.grid();
  s["device"] = to_string(trainer.device().kind());
  s["comm"] = trainer.comm_backend();
  s["precision"] = to_string(o.precision);
  s["grad_comm"] = storage_format(o.precision) == StorageFormat::full || o.fp32_grad_comm
                       ? (o.precision == Precision::fp64 ? "fp64" : "fp32")
                       : to_string(o.precision);
  s["mode"] = run.mode;
  s["data"] = dataset.describe();
  s["config_json"] = o.resolved_json;
  s["command_line"] = context.command_line;
  s["git_commit"] = git_commit();
  s["mpi_version"] = mpi_library_version();
  s["nccl_version"] = nccl_version();
  s["cuda_version"] = cuda_version();
  s["hdf5_version"] = hdf5_library_version();
  s["hosts"] = run.hosts;
  s["start_time"] = run.start_time;
  auto& n = record.integer_attributes;
  n["world_size"] = context.size;
  n["warmup_iterations"] = o.warmup;
  n["iterations"] = run.iterations;
  n["parameters"] = trainer.parameter_count();
  n["global_batch"] = run.global_batch;
  n["checkpoint_activations"] = o.model.checkpoint_activations ? 1 : 0;
  n["flops_per_sample"] = std::llround(run.flops_per_sample);
  n["cpu_threads"] = trainer.device().kind() == DeviceKind::cpu ? cpu::thread_count() : 0;
}

}  // namespace mlps
