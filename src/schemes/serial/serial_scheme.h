#pragma once
// bin/serial: the whole model on one process, the reference every scheme is checked against.
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_serial_scheme();

}  // namespace mlps
