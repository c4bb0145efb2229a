#pragma once
// bin/serial: serial training, the reference every scheme is checked against.
// Its Scheme (flags, grid rules, memory, bin/plan's candidates and per-rank work, training),
// for scheme_main and the registry.
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_serial_scheme();

}  // namespace mlps
