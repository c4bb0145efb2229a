#include "src/plan/kernel_rates.h"

#include <filesystem>
#include <fstream>

#include "src/base/errors.h"

namespace mlps {

KernelRates::KernelRates(const std::string& path) : path_(path) {
  std::error_code error;
  // Checked before opening: a FIFO's open would block until a writer came.
  if (!std::filesystem::is_regular_file(path, error))
    throw InputError(path + ": cannot read a file there (run bin/bench_kernels --benchmark_out=" +
                     path + " first)");
  std::ifstream in(path);
  if (!in)
    throw InputError(path + ": cannot read a file there (run bin/bench_kernels --benchmark_out=" +
                     path + " first)");
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    const nlohmann::json context = doc.value("context", nlohmann::json::object());
    if (context.contains("mlpscale_cpu_threads"))
      cpu_threads_ = std::stoi(context.at("mlpscale_cpu_threads").get<std::string>());
    if (context.contains("mlpscale_blas")) blas_ = context.at("mlpscale_blas").get<std::string>();
    if (context.contains("mlpscale_model")) {  // "image_size 64, ..., batch 32"
      const std::string model = context.at("mlpscale_model").get<std::string>();
      const size_t at = model.rfind("batch ");
      if (at != std::string::npos) model_batch_ = std::stoi(model.substr(at + 6));
    }
    for (const auto& b : doc.value("benchmarks", nlohmann::json::array())) {
      const std::string name = b.value("run_name", b.value("name", ""));
      const bool iteration = b.value("run_type", "iteration") == "iteration";
      if (!iteration && b.value("aggregate_name", "") != "median") continue;
      const auto [it, fresh] = entries_.emplace(name, b);
      const bool was_median = it->second.value("run_type", "iteration") != "iteration";
      if (!fresh && (was_median || (iteration && b.value("real_time", 0.0) <
                                                     it->second.value("real_time", 0.0))))
        it->second = b;
    }
  } catch (const std::exception& e) {  // syntax, JSON of another shape, a bad thread count
    throw InputError(path + ": not bench_kernels JSON: " + e.what());
  }
}

double KernelRates::counter(const std::string& name, const std::string& counter) const {
  const auto it = entries_.find(name);
  if (it == entries_.end() || !it->second.contains(counter))
    throw InputError(path_ + ": no '" + counter + "' for " + name +
                     " (was bench_kernels run with the same model options and backend?)");
  return it->second.at(counter).get<double>();
}

bool KernelRates::has_prefix(const std::string& prefix) const {
  const auto it = entries_.lower_bound(prefix);
  return it != entries_.end() && it->first.rfind(prefix, 0) == 0;
}

double KernelRates::counter_by_prefix(const std::string& prefix,
                                      const std::string& counter) const {
  if (!has_prefix(prefix)) throw InputError(path_ + ": no benchmark named " + prefix + "*");
  return this->counter(entries_.lower_bound(prefix)->first, counter);
}

std::vector<std::pair<std::string, double>> KernelRates::counters_by_prefix(
    const std::string& prefix, const std::string& counter) const {
  std::vector<std::pair<std::string, double>> found;
  for (auto it = entries_.lower_bound(prefix);
       it != entries_.end() && it->first.rfind(prefix, 0) == 0; ++it)
    found.emplace_back(it->first, this->counter(it->first, counter));
  return found;
}

}  // namespace mlps
