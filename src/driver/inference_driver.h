#pragma once
// --inference: forward passes only (no backward, no optimizer) over the test split with the
// initial weights, each batch timed like a training step; the result file has the training
// file's layout with mode "inference", a row per batch, /train/loss the batch's mean loss and
// /train/test_accuracy the accuracy over every batch.
#include "src/data/dataset.h"
#include "src/driver/run_context.h"
#include "src/options.h"
#include "src/schemes/trainer.h"

namespace mlps {

// Batch b covers test rows [(b mod n)·B, (b mod n + 1)·B), n = ⌊test samples / B⌋ (a partial
// last batch is dropped so every batch has B rows); --iters batches, or --epochs passes.
// Returns the exit code (3 when --verify fails), the same on every rank.
int run_inference(const RunContext& context, const Options& options, Trainer& trainer,
                  const Dataset& dataset);

}  // namespace mlps
