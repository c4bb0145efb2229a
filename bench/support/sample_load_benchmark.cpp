#include "bench/support/sample_load_benchmark.h"

#include <benchmark/benchmark.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "src/data/batch_loader.h"
#include "src/data/synthetic_dataset.h"

namespace mlps::kernel_bench {

void register_sample_load_benchmark(const KernelBenchOptions& options) {
  const int image = static_cast<int>(options.model.image_size);
  const int64_t rows = options.batch;
  const std::string name = "sample_load/host/synthetic/image:" + std::to_string(image) +
                           "/rows:" + std::to_string(rows);
  benchmark::RegisterBenchmark(name.c_str(), [image, rows](benchmark::State& state) {
    const std::unique_ptr<Dataset> dataset = make_synthetic_dataset(1);
    std::vector<int64_t> order(static_cast<size_t>(kSyntheticTrainSize));
    std::iota(order.begin(), order.end(), int64_t{0});
    int64_t first = 0;  // successive batches, as training reads them
    for (auto _ : state) {
      if (first + rows > kSyntheticTrainSize) first = 0;
      benchmark::DoNotOptimize(load_batch(*dataset, Split::train, order, first, rows, image));
      first += rows;
    }
    state.counters["samples/s"] = benchmark::Counter(static_cast<double>(rows),
                                                     benchmark::Counter::kIsIterationInvariantRate);
  })->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace mlps::kernel_bench
