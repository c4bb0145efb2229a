#include "src/data/dataset.h"

#include "src/data/idx_reader.h"
#include "src/data/synthetic_dataset.h"
#include "src/base/errors.h"

namespace mlps {

std::unique_ptr<Dataset> open_dataset(const std::string& spec, uint64_t seed) {
  if (spec == "synthetic") return make_synthetic_dataset(seed);
  const std::string idx_prefix = "idx:";
  if (spec.rfind(idx_prefix, 0) == 0) {
    const std::string dir = spec.substr(idx_prefix.size());
    if (dir.empty()) throw InputError("--data idx: needs a directory, as in idx:/path/to/mnist");
    return open_idx_dataset(dir);
  }
  throw InputError("--data must be 'synthetic' or 'idx:DIR', not '" + spec + "'");
}

}  // namespace mlps
