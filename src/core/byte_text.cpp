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

std::string grouped_text(int64_t value) {
  const std::string digits = std::to_string(value < 0 ? -value : value);
  std::string text;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return (value < 0 ? "-" : "") + text;
}

}  // namespace sb
