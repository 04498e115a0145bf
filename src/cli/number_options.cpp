// Range and finiteness checks of numeric flags (src/cli/number_options.h).
#include "src/cli/number_options.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "scalebench/error.h"
#include "scalebench/gpus_sweep.h"

namespace sb {
namespace {

// The text CLI11 hands the validator, quoted only when it would read oddly bare.
std::string shown(const std::string& text) { return text.empty() ? "''" : text; }

bool is_decimal_integer(const std::string& text) {
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (i == text.size()) return false;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
  }
  return true;
}

}  // namespace

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.15g", value);
  return text;
}

CLI::Validator whole_number(int64_t min, int64_t max) {
  const std::string range = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        if (!is_decimal_integer(text)) return shown(text) + " is not " + range;
        errno = 0;
        const long long value = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == ERANGE || value < min || value > max) return shown(text) + " is out of range: " + range;
        return std::string();
      },
      "INT in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

CLI::Validator unsigned_number(uint64_t max) {
  const std::string range = "a whole number from 0 to " + std::to_string(max);
  return CLI::Validator(
      [max, range](std::string& text) -> std::string {
        if (!is_decimal_integer(text) || text[0] == '-') return shown(text) + " is not " + range;
        errno = 0;
        const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE || value > max) return shown(text) + " is out of range: " + range;
        return std::string();
      },
      "UINT in [0, " + std::to_string(max) + "]");
}

CLI::Validator finite_number(double min, double max, bool min_open) {
  const std::string range = std::string("a finite number ") + (min_open ? "above " : "from ") + number_text(min) +
                            (min_open ? " and up to " : " to ") + number_text(max);
  return CLI::Validator(
      [min, max, min_open, range](std::string& text) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) return shown(text) + " is not " + range;
        if (!std::isfinite(value) || errno == ERANGE) return shown(text) + " is not " + range;
        if (value > max || value < min || (min_open && value == min)) {
          return shown(text) + " is out of range: " + range;
        }
        return std::string();
      },
      std::string("NUMBER in ") + (min_open ? "(" : "[") + number_text(min) + ", " + number_text(max) + "]");
}

CLI::Validator gpus_sweep_list() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          parse_gpus_sweep(value);
        } catch (const UsageError& e) {
          return e.what();
        }
        return "";
      },
      "");
}

}  // namespace sb
