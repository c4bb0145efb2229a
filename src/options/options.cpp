#include "src/options/options.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "src/options/cli_validators.h"
#include "src/device/device.h"
#include "src/base/errors.h"
#include "src/base/file_kind.h"
#include "src/options/json_config.h"

namespace mlps {

const char* to_string(Precision precision) {
  constexpr const char* kNames[] = {"fp32", "fp64", "bf16", "fp16"};  // in the enum's order
  return kNames[static_cast<int>(precision)];
}

StorageFormat storage_format(Precision precision) {
  if (precision == Precision::bf16) return StorageFormat::bf16;
  if (precision == Precision::fp16) return StorageFormat::fp16;
  return StorageFormat::full;
}

GemmCompute gemm_compute(Precision precision, GemmCompute math) {
  if (precision == Precision::fp64) return GemmCompute::fp32;  // unused: fp64 GEMMs are exact
  return gemm_compute(storage_format(precision), math);
}

OptionParser::OptionParser(const std::string& program, const std::string& description)
    : app_(std::make_unique<CLI::App>(description, program)) {
  CLI::App& app = *app_;
  Options& o = options_;
  // A repeated option takes its last value, so scripts can append overrides.
  app.option_defaults()->always_capture_default()->multi_option_policy(
      CLI::MultiOptionPolicy::TakeLast);
  app.config_formatter(std::make_shared<JsonConfig>());
  app.set_config("--config", "", "JSON file setting any of these options by long name "
                 "(e.g. {\"hidden\": 256}); the command line overrides it")
      // Before CLI11 opens it: a FIFO would block the open until a writer came.
      ->check([](const std::string& path) { return input_file_problem(path); });
  app.allow_config_extras(false);

  constexpr long long kLargestCount = 1LL << 40;  // of sizes and counts: beyond any real run
  const auto positive = integer_between(1, kLargestCount);
  const auto non_negative = integer_between(0, kLargestCount);
  app.add_option("--layers", o.model.layers, "number of MLP blocks")
      ->check(integer_between(0, kMaxLayers));
  app.add_option("--hidden", o.model.hidden, "hidden size H")->check(positive);
  app.add_option("--ffn-mult", o.model.ffn_mult, "F = ffn-mult × H in each block")->check(positive);
  app.add_option("--ffn-hidden", o.model.ffn_width, "F itself, each block's inner width, for "
                 "widths that are no multiple of H (e.g. Llama-2-7B's 11008); 0: ffn-mult × H")
      ->check(non_negative);
  app.add_option("--image-size", o.model.image_size, "input images are S×S (28×28 data is "
                 "bilinear-resized)")->check(integer_between(1, 4096));
  app.add_option("--block", block_, "block kind: mlp (LayerNorm, Linear, ReLU, Linear, residual) "
                 "or plain (Linear, ReLU)")->check(CLI::IsMember({"mlp", "plain"}));
  app.add_option("--batch", o.batch, "global batch size (split over data-parallel ranks)")
      ->check(positive);
  app.add_option("--epochs", o.epochs, "passes over the training split (used when --iters is "
                 "not given)")->check(non_negative);
  app.add_option("--iters", o.iters, "iterations to run (wins over --epochs when both are "
                 "given)")->check(non_negative);
  app.add_option("--warmup", o.warmup, "leading iterations trained but left out of timing "
                 "statistics")->check(non_negative);
  app.add_option("--lr", o.optimizer.lr, "learning rate")->check(positive_real());
  app.add_option("--optimizer", optimizer_, "adam (betas 0.9/0.999, eps 1e-8) or sgd")
      ->check(CLI::IsMember({"adam", "sgd"}));
  app.add_option("--seed", o.seed, "seed of weights, synthetic data and shuffling")
      ->check(integer_between(0, std::numeric_limits<long long>::max()));
  app.add_option("--data", o.data, "synthetic, or idx:DIR with MNIST-format files "
                 "(e.g. idx:/usr/share/datasets/fashion-mnist)");
  app.add_option("--prefetch", prefetch_, "load the next batch on a thread while the step "
                 "computes (on), or in the step's data phase (off); auto: on unless the node's "
                 "ranks' compute threads fill its cores (CPU ranks on every core)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_option("--device", o.device, "auto (cuda when built with CUDA and a GPU is visible), "
                 "cpu or cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--comm", o.comm, "collectives backend: auto, mpi or nccl")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}));
  app.add_option("--precision", precision_, "fp32, fp64, or mixed precision bf16 / fp16 (16-bit "
                 "activations and weights; fp32 weight gradients, master weights and optimizer; "
                 "fp16 with dynamic loss scaling)")
      ->check(CLI::IsMember({"fp32", "fp64", "bf16", "fp16"}));
  app.add_option("--math", math_, "fp32 GEMMs in true fp32, or on TF32 tensor cores (tf32: "
                 "GPUs only, inputs rounded to 10-bit mantissas, sums in fp32)")
      ->check(CLI::IsMember({"fp32", "tf32"}));
  app.add_flag("--fp32-grad-comm", o.fp32_grad_comm, "with bf16/fp16: communicate weight "
               "gradients in fp32 instead of 16 bits");
  app.add_flag("--checkpoint-activations", o.model.checkpoint_activations, "keep only each "
               "block's input in forward and recompute the block in backward");
  app.add_flag("--inference", o.inference, "forward passes only, no optimizer, over the test "
               "split (--iters batches, or --epochs passes): latency per batch and samples/s");
  app.add_option("--out", o.out,
                 "HDF5 result file (default results/<scheme>-<UTC time>-<pid>.h5)");
  app.add_option("--trace", o.trace, "also write every rank's timeline (phases, steps, each "
                 "collective and send/recv with its group and bytes) to this Chrome trace-event "
                 "JSON file, for Perfetto, chrome://tracing or analysis/timeline_plot.py; held in "
                 "memory until the end, about 100 bytes per event (a step has a few events per "
                 "phase and one per communication call)");
  app.add_option("--machine", o.machine, "machine description (inputs/machines/*.json) whose "
                 "predicted step, communication, bubble and memory the run records and prints "
                 "beside its measurement; none: no prediction (default: inputs/machines/local.json "
                 "when `make calibrate` has written it)");
  app.add_option("--print-every", o.print_every, "progress line every N iterations (0: none)")
      ->check(non_negative);
  app.add_option("--eval-samples", o.eval_samples, "test samples evaluated at the end of each "
                 "epoch, and those --inference cycles through (0: the whole test split)")
      ->check(non_negative);
  // The environment sets the default, so a whole sweep or job script can have one.
  if (const char* env = std::getenv("MLPSCALE_TIMEOUT"); env && *env) {
    std::string text = env;
    if (!non_negative_real()(text).empty())
      throw InputError("MLPSCALE_TIMEOUT=" + std::string(env) + " is not a number of seconds");
    o.timeout = std::stod(text);
  }
  app.add_option("--timeout", o.timeout, "seconds without a completed step or evaluation batch "
                 "after which a rank prints its last communication calls and ends the job "
                 "(0: never; default $MLPSCALE_TIMEOUT, else 1800)")->check(non_negative_real());
  app.add_option("--check-grid", o.check_grid, "check these options and the grid for N ranks "
                 "on one process, print the grid and exit: status 0 if it fits, 3 with the reason "
                 "if the grid does not fit N ranks, this batch or this model, 2 for a bad option "
                 "(jobs/sweep asks this)")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_flag("--list-options", o.list_options, "print the long names of the options every "
               "executable shares and of this scheme's own as JSON ({\"program\": ..., "
               "\"shared\": [...], \"scheme\": [...]}) and exit (jobs/sweep reads this)");
  app.add_flag("--skip-memory-check", o.skip_memory_check, "start even when the memory "
               "accounting says a rank needs more memory than it has (the estimate is printed "
               "and recorded either way)");
  app.add_flag("--verify", o.verify, "recompute the run serially in fp64 (and in the run's "
               "precision) on the CPU and compare losses and final weights (with --inference: "
               "each batch's loss)");
  for (const CLI::Option* option : app.get_options())
    if (!option->get_lnames().empty() && option->get_lnames().front() != "help")
      shared_.push_back(option->get_lnames().front());
}

std::string OptionParser::options_json() const {
  nlohmann::json scheme = nlohmann::json::array();
  for (const CLI::Option* option : app_->get_options()) {
    if (option->get_lnames().empty()) continue;
    const std::string& name = option->get_lnames().front();
    if (name != "help" && std::find(shared_.begin(), shared_.end(), name) == shared_.end())
      scheme.push_back(name);
  }
  return nlohmann::json{{"program", app_->get_name()}, {"shared", shared_}, {"scheme", scheme}}
      .dump();
}

std::string OptionParser::describe_parse_error(const CLI::ParseError& e) const {
  const std::string what = e.what();
  const CLI::Option* config = app_->get_config_ptr();
  // The raw value: as<>() would validate it again, and throw outside this handler.
  const std::string file =
      config && !config->results().empty() ? config->results().front() : "config file";
  const std::string unknown_key = "INI was not able to parse ";
  if (what.rfind(unknown_key, 0) == 0)
    return file + ": unknown key '" + what.substr(unknown_key.size()) +
           "' (keys are the long option names, see --help)";
  const std::string from_file = "config file: ";
  if (what.rfind(from_file, 0) == 0) return file + ": " + what.substr(from_file.size());
  return what;
}

bool OptionParser::parse(int argc, char** argv) {
  try {
    app_->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return false;
  } catch (const CLI::ParseError& e) {
    throw InputError(describe_parse_error(e));
  }
  validate();
  options_.resolved_json = app_->config_to_str(true, false);
  return true;
}

void OptionParser::validate() {
  Options& o = options_;
  o.model.block = block_ == "plain" ? BlockKind::plain : BlockKind::residual_mlp;
  o.optimizer.kind = optimizer_ == "sgd" ? OptimizerKind::sgd : OptimizerKind::adam;
  for (const PrefetchMode m : {PrefetchMode::automatic, PrefetchMode::on, PrefetchMode::off})
    if (prefetch_ == to_string(m)) o.prefetch = m;
  for (const Precision p : {Precision::fp32, Precision::fp64, Precision::bf16, Precision::fp16})
    if (precision_ == to_string(p)) o.precision = p;
  o.math = math_ == "tf32" ? GemmCompute::tf32 : GemmCompute::fp32;
  if (o.math == GemmCompute::tf32 && o.precision != Precision::fp32)
    throw InputError(std::string("--math tf32 applies to fp32 GEMMs, not to --precision ") +
                     to_string(o.precision));
  if (o.fp32_grad_comm && storage_format(o.precision) == StorageFormat::full)
    throw InputError("--fp32-grad-comm needs --precision bf16 or fp16 (with " +
                     std::string(to_string(o.precision)) + " gradients already travel in " +
                     to_string(o.precision) + ")");
  // --epochs N alone runs N epochs; the default of --iters only applies without --epochs.
  if (o.epochs > 0 && app_->get_option("--iters")->count() == 0) o.iters = 0;
  if (o.epochs == 0 && o.iters == 0)
    throw InputError("nothing to run: --epochs and --iters are both 0");
  if (o.iters > 0 && o.warmup >= o.iters)
    throw InputError("--warmup " + std::to_string(o.warmup) + " leaves none of the " +
                     std::to_string(o.iters) + " iterations to time");
  if (o.data != "synthetic" && o.data.rfind("idx:", 0) != 0)
    throw InputError("--data must be 'synthetic' or 'idx:DIR', not '" + o.data + "'");
  check_sizes_countable(o.model, o.batch);
}

}  // namespace mlps
