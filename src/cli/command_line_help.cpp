// src/cli/command_line_help.h
#include "src/cli/command_line_help.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>

#include "scalebench/error.h"
#include "src/cli/command_line.h"
#include "src/core/edit_distance.h"

namespace sb {
namespace {

// What each value-taking option's value is, by long name; options not listed keep CLI11's type name.
const std::map<std::string, std::string>& placeholders() {
  static const std::map<std::string, std::string> kPlaceholders = {
      {"json", "FILE"},       {"csv", "FILE"},        {"trace", "FILE"},       {"out", "PATH"},
      {"html", "FILE"},       {"timeout", "SECONDS"}, {"min-time", "SECONDS"}, {"bucket-mb", "MiB"},
      {"memory", "GiB"},      {"min-bytes", "SIZE"},  {"max-bytes", "SIZE"},   {"factor", "X"},
      {"batch", "B"},         {"warmup", "N"},        {"steps", "N"},          {"iters", "N"},
      {"check-steps", "K"},   {"verify-steps", "N"},  {"seed", "S"},           {"lr", "RATE"},
      {"clip-norm", "NORM"},  {"workload", "NAME"},   {"workloads", "A,B"},    {"op", "LIST"},
      {"phases", "LIST"},     {"root", "RANK"},       {"baseline", "LABEL"},   {"label", "FILE=LABEL"},
      {"device", "DEVICE"},   {"backend", "BACKEND"}, {"emulate", "MODE"},     {"scale", "SCALE"},
      {"optimizer", "NAME"},  {"precision", "PRECISION"}, {"grad-dtype", "DTYPE"}, {"comm-priority", "PRIORITY"},
      {"dtype", "DTYPE"},     {"redop", "OP"},        {"gpu", "NAME"},         {"gpus", "N"},
      {"cuda-graph", "MODE"}, {"gpus-sweep", "LIST"}, {"embedding-grad", "MODE"},
      {"overlap-ctas", "N"},  {"grad-registration", "MODE"},
      {"strategy", "NAME"},
  };
  return kPlaceholders;
}

void name_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (option->get_lnames().empty() || option->get_expected_max() == 0) continue;
    const auto found = placeholders().find(option->get_lnames().front());
    if (found != placeholders().end()) option->type_name(found->second);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) name_options(*sub);
}

// Every option name `app` takes: "--json", "-n", ...
void option_names(const CLI::App& app, std::vector<std::string>& names) {
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
  }
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

}  // namespace

void name_placeholders(CLI::App& app) { name_options(app); }

std::string subcommand_help(const CLI::App& app, const CLI::App& subcommand) {
  std::string text = subcommand.help();
  std::vector<const CLI::Option*> globals =
      app.get_options([](const CLI::Option* option) { return option->get_name() != "--help" && option->get_name() != "--version"; });
  const auto formatter = std::dynamic_pointer_cast<CLI::Formatter>(app.get_formatter());
  if (formatter && !globals.empty()) {
    text += formatter->make_group("Global options (any subcommand, before or after its name)", false, globals) + "\n";
  }
  return text;
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::string::npos;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  // A typo: a letter or two off, or a third of a long word; "--foo" is no misspelling of "--force".
  const size_t tolerated = std::max<size_t>(2, word.size() / 3);
  return best_distance <= tolerated && best_distance < word.size() / 2 + 1 ? best : "";
}

std::string unknown_argument_message(const CLI::App& app, const std::string& command, bool command_named,
                                     const std::vector<std::string>& extras) {
  const std::string& word = extras.front();
  const std::string value = word.substr(0, word.find('='));  // "--jsn=a.json": the option's name
  const std::string help = command_named ? "run 'scalebench " + command + " --help'" : "run 'scalebench --help'";
  if (value.size() > 1 && value[0] == '-') {
    std::vector<std::string> names;
    option_names(app, names);
    if (!command.empty()) option_names(*app.get_subcommand(command), names);
    const std::string match = closest_match(value, names);
    return "unknown option '" + value + "'" + (command_named ? " for " + command : "") +
           (match.empty() ? "" : "; did you mean '" + match + "'?") + " (" + help + ")";
  }
  // A word where a subcommand would go (`run` is only the default): most likely a misspelt subcommand.
  const std::vector<std::string> commands = subcommand_names(app);
  const std::string match = closest_match(word, commands);
  if (!match.empty()) {
    return "unknown subcommand '" + word + "'; did you mean '" + match + "'? (run 'scalebench --help')";
  }
  std::string list;
  for (const std::string& name : commands) list += (list.empty() ? "" : ", ") + name;
  return "unexpected argument '" + word + "' (subcommands: " + list + "; run 'scalebench --help')";
}

void refuse_unsupported_outputs(const CommandLine& cl) {
  // What each subcommand writes; compare and report have their own --csv/--markdown/--out/--html.
  static const std::map<std::string, std::pair<bool, bool>> kWrites = {
      {"run", {true, true}},    {"bandwidth", {true, true}}, {"maxbatch", {true, true}}, {"topo", {true, false}},
      {"list", {true, false}},  {"plan", {true, false}},     {"suite", {false, false}},  {"compare", {false, false}},
      {"report", {false, false}},
  };
  const auto found = kWrites.find(cl.command);
  if (found == kWrites.end()) return;
  const auto [json, csv] = found->second;
  const char* instead = cl.command == "suite"                                  ? " (it writes its --out folder)"
                        : cl.command == "compare" || cl.command == "report" ? " (see --markdown, --csv, --out, --html)"
                                                                             : "";
  if (!json && !cl.common.json_path.empty()) {
    throw UsageError("--json: " + cl.command + " does not write JSON" + instead);
  }
  if (!csv && !cl.common.csv_path.empty()) {
    throw UsageError("--csv FILE: " + cl.command + " does not write CSV" + (json ? " (it writes --json)" : instead));
  }
}

}  // namespace sb
