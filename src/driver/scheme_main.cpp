#include "src/driver/scheme_main.h"

#include <cstdio>
#include <thread>

#include "src/driver/startup_agreement.h"
#include "src/base/errors.h"
#include "src/base/human_bytes.h"
#include "src/memory/available_memory.h"
#include "src/memory/model_memory.h"
#include "src/comm/mpi_session.h"
#include "src/plan/run_prediction.h"
#include "src/results/run_info.h"

namespace mlps {
namespace {

// Records this rank's need in the context (and the largest over the ranks), then refuses
// unless every rank fits or `skip` (--skip-memory-check).
void account_memory(RunContext& context, const MemoryNeed& need, DeviceKind device,
                    const RankPlacement& placement, bool skip) {
  context.estimated_bytes = need.total();
  context.disk_bytes = need.disk;
  context.host_bytes = need.host;
  MPI_Allreduce(&context.estimated_bytes, &context.largest_estimated_bytes, 1, MPI_DOUBLE, MPI_MAX,
                context.comm);
  if (skip) return;
  const AvailableMemory available = available_memory_per_rank(device, placement);
  try {
    check_memory_fits(context.comm, need.total(), need.breakdown(), available);
  } catch (const AgreedError& e) {
    // Every rank holds the same state here, so this rank's figures answer for all.
    if (need.offloadable > 0 && need.total() - need.offloadable <= available.bytes)
      throw AgreedError(std::string(e.what()) + ": --offload optimizer " +
                        (device == DeviceKind::cuda ? "(to host memory)"
                                                    : "--offload-to disk:DIR") +
                        " would fit it, moving " + human_bytes(need.offloadable) +
                        " of optimizer state " +
                        (device == DeviceKind::cuda ? "out of the GPU" : "to a file in DIR") +
                        " (or use a smaller --hidden, --layers or --batch, or more ranks)");
    throw AgreedError(std::string(e.what()) + ": use a smaller --hidden, --layers or --batch, or "
                     "more ranks (--skip-memory-check to try anyway)");
  }
  // A GPU's offloaded state, in the host memory its node's ranks share.
  if (need.host > 0)
    check_memory_fits(context.comm, need.host, "offloaded optimizer state and its staging " +
                                                   human_bytes(need.host),
                      available_memory_per_rank(DeviceKind::cpu, placement));
}

// The model's prediction for this run on --machine (none for --inference: it predicts a training
// step), made on every rank so a malformed description stops each with the same line.
RecordedPrediction predict_this_run(const Scheme& scheme, const SchemeStart& s) {
  const std::string machine = machine_file_for_run(s.options.machine);
  if (machine.empty() || s.options.inference) return {};
  PlanCandidate c;
  c.scheme = scheme.name();
  c.options = s.options;
  c.world = s.context.size;
  c.ranks_on_node = s.placement.local_size;
  c.rank_nodes = s.placement.node_of_rank;
  c.threads_per_rank = s.device.kind == DeviceKind::cpu ? cpu::thread_count() : 0;
  scheme.describe(c);
  return predict_run(c, machine);
}

// --check-grid N: the grid rules for N ranks on this one process (no ranks needed), for
// jobs/sweep: 0 and the grid when it fits, 3 and the reason when it does not.
int dry_run_grid(const MpiSession& mpi, Scheme& scheme, const Options& o) {
  const auto ranks = static_cast<int>(o.check_grid);
  try {
    const std::string grid = scheme.check_grid(o, ranks);
    if (mpi.rank() == 0)
      std::printf("%s: fits %d ranks: %s\n", scheme.name().c_str(), ranks, grid.c_str());
    return 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: does not fit %d ranks: %s\n", scheme.name().c_str(), ranks,
                 e.what());
    return 3;
  }
}

int start(const MpiSession& mpi, int argc, char** argv, Scheme& scheme) {
  OptionParser parser(scheme.name(), scheme.description());
  scheme.add_options(parser.app());
  // Every rank parses and checks; then one collective, so that a rank refused alone does not
  // leave the others waiting in their first collective.
  std::string refusal;
  bool help = false;
  try {
    help = !parser.parse(argc, argv);
    if (!help && !parser.options().list_options) scheme.check_options(parser.options());
  } catch (const InputError& e) {
    refusal = e.what();
  }
  agree_options_accepted(MPI_COMM_WORLD, refusal);
  int any_help = help ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &any_help, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (any_help) {  // one rank's --help ends every rank's run
    if (mpi.rank() == 0) std::printf("%s", parser.help_text().c_str());
    return 0;
  }
  const Options& o = parser.options();
  agree_configuration(MPI_COMM_WORLD, scheme.name(), o.resolved_json);
  if (o.list_options) {
    if (mpi.rank() == 0) std::printf("%s\n", parser.options_json().c_str());
    return 0;
  }
  if (o.check_grid > 0) return dry_run_grid(mpi, scheme, o);
  check_launch_matches_slurm(mpi.size());
  scheme.check_grid(o, mpi.size());
  SchemeStart s{o, RunContext{scheme.name(), command_line(argc, argv), MPI_COMM_WORLD, mpi.rank(),
                              mpi.size()}};
  s.placement = discover_placement(MPI_COMM_WORLD);
  s.context.node = s.placement.node_of_rank[static_cast<size_t>(mpi.rank())];
  s.context.local_rank = s.placement.local_rank;
  s.device = DeviceConfig(resolve_device(o.device), storage_format(o.precision),
                          o.fp32_grad_comm, o.math);
  if (o.math == GemmCompute::tf32 && s.device.kind != DeviceKind::cuda)
    throw InputError("--math tf32 needs the CUDA backend: TF32 is a GPU tensor-core format, and "
                     "the CPU computes fp32 GEMMs in true fp32");
  share_node_cores(s.placement, s.device.kind);
  bind_gpu(s.placement, s.device.kind);
  s.backend = resolve_comm_backend(o.comm, s.device.kind, s.placement, MPI_COMM_WORLD);
  // The node's cores its ranks' compute threads keep busy (none where they compute on GPUs).
  const int busy =
      s.device.kind == DeviceKind::cpu ? s.placement.local_size * cpu::thread_count() : 0;
  s.context.loads_ahead =
      loads_ahead(o.prefetch, busy, static_cast<int>(std::thread::hardware_concurrency()));
  s.context.prediction = predict_this_run(scheme, s);
  const MemoryNeed need = scheme.memory(o, mpi.rank(), mpi.size());
  account_memory(s.context, need, s.device.kind, s.placement, o.skip_memory_check);
  if (o.verify && !o.skip_memory_check)
    check_verify_memory_fits(MPI_COMM_WORLD, need.total(), s.device.kind, verify_replay_bytes(o));
  s.dataset = open_dataset(o.data, o.seed);
  s.schedule = TrainingSchedule::make(o, s.dataset->size(Split::train));
  return scheme.train(s);
}

}  // namespace

int scheme_main(int argc, char** argv, Scheme& scheme) {
  MpiSession mpi(argc, argv);
  return mpi.run(scheme.name(), [&] { return start(mpi, argc, argv, scheme); });
}

}  // namespace mlps
