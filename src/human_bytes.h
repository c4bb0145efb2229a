#pragma once
#include <string>

namespace mlps {

// "512 B", "1.50 MiB": bytes in binary units, for the summaries and error messages.
std::string human_bytes(double bytes);

}  // namespace mlps
