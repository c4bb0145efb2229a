#include "src/memory/memory_need.h"

#include "src/base/human_bytes.h"
#include "src/options/options.h"

namespace mlps {

std::string MemoryNeed::breakdown() const {
  return "parameters " + human_bytes(parameters) + ", gradients " + human_bytes(gradients) +
         ", optimizer " + human_bytes(optimizer) + ", activations " + human_bytes(activations) +
         ", buffers " + human_bytes(buffers) +
         (disk > 0 ? ", on disk " + human_bytes(disk) : std::string()) +
         (host > 0 ? ", in host memory " + human_bytes(host) : std::string());
}

size_t element_bytes(Precision precision) { return precision == Precision::fp64 ? 8 : 4; }

ElementSizes element_sizes(Precision precision, bool typed) {
  if (typed && storage_format(precision) != StorageFormat::full) return {2, 4};
  const auto e = static_cast<double>(element_bytes(precision));
  return {e, e};
}

size_t wire_element_bytes(Precision precision, bool fp32_gradients) {
  const StorageFormat wire = storage_format(precision);
  if (fp32_gradients && wire != StorageFormat::full) return 4;
  return wire_bytes(wire, element_bytes(precision));
}

}  // namespace mlps
