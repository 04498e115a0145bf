// Checked reads of plan's JSON data files: every missing or mistyped field is a UsageError naming the file and
// the path ("gpus.json: gpus[3].memory_gb is not a number"), so a bad edit of the database fails loudly.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sb::detail {

class JsonFields {
 public:
  JsonFields(std::string origin, const nlohmann::json& node, std::string path = "")
      : origin_(std::move(origin)), node_(node), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const;
  std::string where(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  bool has(const std::string& key) const { return node_.is_object() && node_.contains(key); }
  const nlohmann::json& require(const std::string& key) const;
  JsonFields object(const std::string& key) const;  // must be an object
  std::vector<JsonFields> array_of_objects(const std::string& key) const;
  std::string string(const std::string& key) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;  // absent: fallback
  double number(const std::string& key) const;
  double positive(const std::string& key) const;                          // > 0
  std::optional<double> optional_positive(const std::string& key) const;  // null or absent: none
  int64_t integer(const std::string& key) const;
  bool boolean(const std::string& key) const;
  bool boolean_or(const std::string& key, bool fallback) const;
  std::optional<bool> optional_boolean(const std::string& key) const;
  std::vector<std::string> strings(const std::string& key) const;  // an array of strings (may be empty)
  const nlohmann::json& node() const { return node_; }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  const nlohmann::json& node_;
  std::string path_;
};

// Parses `text` as JSON; a syntax error is a UsageError naming `origin`.
nlohmann::json parse_json_document(const std::string& text, const std::string& origin);

}  // namespace sb::detail
