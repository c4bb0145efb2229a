#pragma once
#include <cstdio>
#include <string>

namespace mlps {

// "512 B", "1.50 MiB": bytes in binary units, for the summaries and error messages.
inline std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 5) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.*f %s", unit == 0 ? 0 : 2, bytes, units[unit]);
  return text;
}

}  // namespace mlps
