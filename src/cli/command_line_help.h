// What the command line tells a user beyond CLI11's defaults: named placeholders in help (FILE, MiB, N),
// the global options under every subcommand's --help, "unknown option '--jsn'; did you mean '--json'?",
// and output options a subcommand does not write refused instead of ignored.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sb {

struct CommandLine;

// Placeholders that say what a value is ("FILE", "MiB", "SECONDS") instead of CLI11's type names ("TEXT").
void name_placeholders(CLI::App& app);

// `scalebench SUB --help`: the subcommand's own help, then the global options it also takes.
std::string subcommand_help(const CLI::App& app, const CLI::App& subcommand);

// The first argument nobody took (CLI11's "extras"), named, with the closest option or subcommand when there is
// a close one. `command` is the subcommand being parsed ("" for none); `command_named`: the user typed it (not
// `run` by default).
std::string unknown_argument_message(const CLI::App& app, const std::string& command, bool command_named,
                                     const std::vector<std::string>& extras);

// The closest of `candidates` to `word` when it is close enough to be a likely typo; "" otherwise.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

// --json / --csv given to a subcommand that does not write that format: a UsageError naming what it writes.
void refuse_unsupported_outputs(const CommandLine& command_line);

}  // namespace sb
