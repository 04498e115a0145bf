#include "src/cli/byte_size.h"

#include <cctype>
#include <limits>

#include "scalebench/error.h"

namespace sb {

uint64_t parse_byte_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) throw UsageError("invalid size '" + text + "' (examples: 4096, 512K, 8M, 2G)");
  std::string suffix = text.substr(digits);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() > 1 && suffix.back() == 'B') suffix.pop_back();          // "MB", "MIB" -> "M", "MI"
  if (suffix.size() == 2 && suffix[1] == 'I') suffix.pop_back();             // "MI" -> "M"
  int shift = 0;
  if (suffix.empty() || suffix == "B") {
    shift = 0;
  } else if (suffix == "K") {
    shift = 10;
  } else if (suffix == "M") {
    shift = 20;
  } else if (suffix == "G") {
    shift = 30;
  } else if (suffix == "T") {
    shift = 40;
  } else {
    throw UsageError("invalid size suffix in '" + text + "' (accepted: K, M, G, T; binary multiples)");
  }
  uint64_t value = 0;
  for (size_t i = 0; i < digits; ++i) {
    if (value > (std::numeric_limits<uint64_t>::max() - 9) / 10) throw UsageError("size '" + text + "' is too large");
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    throw UsageError("size '" + text + "' is too large");
  }
  return value << shift;
}

std::string format_byte_size(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

}  // namespace sb
