// Checked JSON field reads for plan's data files (src/plan/json_fields.h).
#include "src/plan/json_fields.h"

#include "scalebench/error.h"

namespace sb::detail {

void JsonFields::fail(const std::string& what) const { throw UsageError(origin_ + ": " + what); }

const nlohmann::json& JsonFields::require(const std::string& key) const {
  if (!has(key)) fail("missing \"" + where(key) + "\"");
  return node_.at(key);
}

JsonFields JsonFields::object(const std::string& key) const {
  const nlohmann::json& value = require(key);
  if (!value.is_object()) fail("\"" + where(key) + "\" is not an object");
  return JsonFields(origin_, value, where(key));
}

std::vector<JsonFields> JsonFields::array_of_objects(const std::string& key) const {
  const nlohmann::json& value = require(key);
  if (!value.is_array()) fail("\"" + where(key) + "\" is not an array");
  std::vector<JsonFields> items;
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string path = where(key) + "[" + std::to_string(i) + "]";
    if (!value[i].is_object()) fail("\"" + path + "\" is not an object");
    items.emplace_back(origin_, value[i], path);
  }
  return items;
}

std::string JsonFields::string(const std::string& key) const {
  const nlohmann::json& value = require(key);
  if (!value.is_string()) fail("\"" + where(key) + "\" is not a string");
  return value.get<std::string>();
}

std::string JsonFields::string_or(const std::string& key, const std::string& fallback) const {
  return has(key) && !node_.at(key).is_null() ? string(key) : fallback;
}

double JsonFields::number(const std::string& key) const {
  const nlohmann::json& value = require(key);
  if (!value.is_number()) fail("\"" + where(key) + "\" is not a number");
  return value.get<double>();
}

double JsonFields::positive(const std::string& key) const {
  const double value = number(key);
  if (!(value > 0)) fail("\"" + where(key) + "\" must be positive");
  return value;
}

std::optional<double> JsonFields::optional_positive(const std::string& key) const {
  if (!has(key) || node_.at(key).is_null()) return std::nullopt;
  return positive(key);
}

int64_t JsonFields::integer(const std::string& key) const {
  const nlohmann::json& value = require(key);
  if (!value.is_number_integer()) fail("\"" + where(key) + "\" is not an integer");
  return value.get<int64_t>();
}

bool JsonFields::boolean(const std::string& key) const {
  const nlohmann::json& value = require(key);
  if (!value.is_boolean()) fail("\"" + where(key) + "\" is not true or false");
  return value.get<bool>();
}

bool JsonFields::boolean_or(const std::string& key, bool fallback) const { return has(key) ? boolean(key) : fallback; }

std::optional<bool> JsonFields::optional_boolean(const std::string& key) const {
  if (!has(key) || node_.at(key).is_null()) return std::nullopt;
  return boolean(key);
}

std::vector<std::string> JsonFields::strings(const std::string& key) const {
  const nlohmann::json& value = require(key);
  if (!value.is_array()) fail("\"" + where(key) + "\" is not an array");
  std::vector<std::string> items;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) fail("\"" + where(key) + "[" + std::to_string(i) + "]\" is not a string");
    items.push_back(value[i].get<std::string>());
  }
  return items;
}

nlohmann::json parse_json_document(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(origin + ": not valid JSON (" + std::string(e.what()) + ")");
  }
}

}  // namespace sb::detail
