// include/scalebench/byte_text.h
#include "scalebench/byte_text.h"

#include <cstdio>

namespace sb {

std::string gib_text(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

std::string mib_text(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

std::string byte_text(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return gib_text(bytes);
  if (bytes >= (1ull << 20)) return mib_text(bytes);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return text;
}

}  // namespace sb
