#pragma once
// What one rank of a run holds at its peak, from the configuration alone: computed before any
// allocation, so a run that cannot fit is refused in one line (available_memory.h), and recorded
// beside the measured peak (/memory/estimated_bytes) so the estimate is checked on every run.
// src/schemes/<scheme>/<scheme>_memory.h holds each scheme's accounting.
#include <cstddef>
#include <cstdint>
#include <string>

namespace mlps {

enum class Precision;

struct MemoryNeed {
  double parameters = 0;   // bytes of parameter values held
  double gradients = 0;    // bytes of their gradients
  double optimizer = 0;    // Adam moments, and fp32 master weights with 16-bit storage
  double activations = 0;  // saved activations and backward scratch at this rank's rows
  double buffers = 0;      // communication, gathered-parameter and staging buffers
  double disk = 0;         // state kept in a scratch file instead (--offload-to disk:DIR)
  // A GPU's run: host memory for its offloaded state and the staging that moves it
  // (--offload optimizer), beside the device memory the rest counts.
  double host = 0;
  // Memory that --offload optimizer would free (the state it moves, less its staging buffers);
  // 0 where it is in use or cannot apply. The memory check names the option when this fits.
  double offloadable = 0;
  // In memory (the device's, on a GPU); `disk` and `host` are not.
  double total() const { return parameters + gradients + optimizer + activations + buffers; }
  // "parameters 1.2 GiB, gradients 1.2 GiB, optimizer 2.4 GiB, activations 0.3 GiB, buffers 0"
  // (", on disk 2.4 GiB", ", in host memory 2.4 GiB" when some is offloaded)
  std::string breakdown() const;
};

// Bytes per stored element: 8 for fp64, else 4 (bf16/fp16 emulated: fp32 storage holding values
// rounded to 16 bits, see Device; typed storage (bin/serial, bin/data) is counted in
// model_memory.h).
size_t element_bytes(Precision precision);
// Bytes per element of what a rank stores: `stored`, activations, their gradients and parameter
// values; `kept`, what beside them stays wide (LayerNorm statistics, probabilities, losses,
// parameters' gradients, the optimizer's master and moments). Typed 16-bit storage (`typed`,
// bin/serial's bf16 and fp16) stores 2 and keeps 4; otherwise both are element_bytes.
struct ElementSizes {
  double stored, kept;
};
ElementSizes element_sizes(Precision precision, bool typed);
// Bytes per element on the wire: 2 for the 16-bit precisions' payloads, 4 for their weight
// gradients under --fp32-grad-comm (fp32_gradients), else element_bytes.
size_t wire_element_bytes(Precision precision, bool fp32_gradients = false);

}  // namespace mlps
