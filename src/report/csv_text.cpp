// src/report/csv_text.h
#include "src/report/csv_text.h"

#include <cstdio>

namespace sb {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_number(std::optional<double> value) {
  if (!value) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", *value);
  return text;
}

}  // namespace sb
