// What the command line tells a user (src/cli/command_line_help.h): close matches for typos, unknown options
// and subcommands named instead of a missing --workload, outputs a subcommand does not write refused, nccl-tests'
// `-c 1`, and the help text's defaults, placeholders and global options.
#include <gtest/gtest.h>

#include "scalebench/error.h"
#include "src/cli/command_line.h"
#include "src/cli/command_line_help.h"

namespace sb {
namespace {

CommandLine parse(std::vector<const char*> args) {
  args.insert(args.begin(), "scalebench");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

std::string usage_error(std::vector<const char*> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& error) {
    return error.what();
  }
  return "";
}

TEST(CommandLineHelp, ClosestMatchOffersTyposOnly) {
  const std::vector<std::string> commands{"bandwidth", "topo", "list", "run", "compare", "report", "plan"};
  EXPECT_EQ(closest_match("bandwith", commands), "bandwidth");
  EXPECT_EQ(closest_match("comapre", commands), "compare");
  EXPECT_EQ(closest_match("xyzzy", commands), "");
  EXPECT_EQ(closest_match("--jsn", {"--json", "--csv", "--force"}), "--json");
  EXPECT_EQ(closest_match("--foo", {"--json", "--csv", "--force"}), "");
}

TEST(CommandLineHelp, UnknownArgumentsAreNamedBeforeMissingOnes) {
  EXPECT_EQ(usage_error({"bandwith"}),
            "unknown subcommand 'bandwith'; did you mean 'bandwidth'? (run 'scalebench --help')");
  const std::string flag = usage_error({"--foo"});
  EXPECT_EQ(flag, "unknown option '--foo' (run 'scalebench --help')");
  EXPECT_EQ(flag.find("required"), std::string::npos) << flag;
  EXPECT_NE(usage_error({"-w", "bert_base", "--stpes", "3"}).find("did you mean '--steps'?"), std::string::npos);
  EXPECT_NE(usage_error({"bandwidth", "--iter", "5"}).find("for bandwidth; did you mean '--iters'?"),
            std::string::npos);
}

TEST(CommandLineHelp, OutputsASubcommandDoesNotWriteAreRefused) {
  EXPECT_NE(usage_error({"list", "--csv", "l.csv"}).find("list does not write CSV (it writes --json)"),
            std::string::npos);
  EXPECT_NE(usage_error({"topo", "--csv", "t.csv"}).find("topo does not write CSV"), std::string::npos);
  EXPECT_NE(usage_error({"compare", "a.json", "--json", "c.json"}).find("compare does not write JSON"),
            std::string::npos);
  EXPECT_NE(usage_error({"report", "a.json", "--csv", "r.csv"}).find("report does not write CSV"), std::string::npos);
  EXPECT_NE(usage_error({"suite", "--json", "s.json"}).find("suite does not write JSON"), std::string::npos);
  EXPECT_EQ(usage_error({"list", "--json", "l.json"}), "");
  EXPECT_EQ(usage_error({"bandwidth", "--csv", "b.csv", "--json", "b.json"}), "");
}

TEST(CommandLineHelp, BandwidthTakesNcclTestsCheckValue) {
  EXPECT_TRUE(parse({"bandwidth", "-c", "1"}).bandwidth.check);
  EXPECT_FALSE(parse({"bandwidth", "-c", "0"}).bandwidth.check);
  EXPECT_TRUE(parse({"bandwidth", "-c"}).bandwidth.check);
  EXPECT_TRUE(parse({"bandwidth", "--check", "1", "-n", "5"}).bandwidth.check);
}

TEST(CommandLineHelp, SubcommandHelpShowsDefaultsUnitsAndGlobalOptions) {
  const CommandLine run = parse({"run", "--help"});
  ASSERT_TRUE(run.help_requested);
  const std::string& help = run.help_text;
  EXPECT_NE(help.find("Global options"), std::string::npos) << help;
  EXPECT_NE(help.find("--device"), std::string::npos) << help;
  EXPECT_NE(help.find("--json FILE"), std::string::npos) << help;
  EXPECT_NE(help.find("--bucket-mb MiB"), std::string::npos) << help;
  // --steps' default, as CLI11 prints it ("=20" after the range in 2.1, "[20]" later).
  EXPECT_TRUE(help.find("--steps N:INT in [1, 1000000]=20") != std::string::npos ||
              help.find("[20]") != std::string::npos)
      << help;
  EXPECT_EQ(help.find("TEXT"), std::string::npos) << help;
  const std::string version = parse({"--version"}).help_text;
  EXPECT_NE(version.find("(git "), std::string::npos) << version;
}

}  // namespace
}  // namespace sb
