// Fault plumbing without a launcher: the test-only SCALEBENCH_FAULT grammar (typos are usage errors, never a
// silently fault-free run), the messages that name phase, step and suspects, and --emulate's variables.
#include <gtest/gtest.h>

#include <csignal>

#include "scalebench/emulation.h"
#include "scalebench/error.h"
#include "scalebench/fault.h"
#include "src/core/fault_injection.h"

namespace sb {
namespace {

TEST(FaultSpec, ParsesEveryField) {
  const FaultSpec spec = parse_fault_spec("sleep:rank=1:phase=dp:step=3:seconds=12.5");
  EXPECT_EQ(spec.action, "sleep");
  EXPECT_EQ(spec.rank, 1);
  EXPECT_EQ(spec.phase, "dp");
  EXPECT_EQ(spec.step, 3);
  EXPECT_DOUBLE_EQ(spec.seconds, 12.5);
  const FaultSpec all = parse_fault_spec("term:rank=all:phase=solo:step=1");
  EXPECT_EQ(all.rank, -1);
  EXPECT_EQ(all.action, "term");
}

TEST(FaultSpec, MistakesAreUsageErrors) {
  for (const char* text : {"", "nap:rank=1:phase=dp:step=3", "kill:rank=1:phase=dp", "kill:rank=x:phase=dp:step=1",
                           "kill:rank=1:phase=warmup:step=1", "kill:rank=1:phase=dp:step=0",
                           "kill:rank=1:phase=dp:step=2:when=now", "kill:rank=1:phase=dp:step"}) {
    EXPECT_THROW(parse_fault_spec(text), UsageError) << text;
  }
  try {
    parse_fault_spec("kill:rank=1");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("SCALEBENCH_FAULT"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("test-only"), std::string::npos);
  }
}

TEST(FaultSpec, FiresOnlyOnTheTargetedRankAndStep) {
  // gtest_discover_tests runs every test in a process of its own, so the stop flag set here stays here.
  install_stop_handlers();
  arm_fault_injection(std::string("term:rank=1:phase=dp:step=2"), 0);
  inject_fault("dp", 2);
  EXPECT_EQ(stop_signal(), 0) << "rank 0 is not the target";
  arm_fault_injection(std::string("term:rank=all:phase=dp:step=2"), 0);
  inject_fault("solo", 2);
  inject_fault("dp", 1);
  EXPECT_EQ(stop_signal(), 0) << "not yet the phase and step";
  inject_fault("dp", 2);
  EXPECT_EQ(stop_signal(), SIGTERM);
  EXPECT_GE(seconds_since_stop_signal(), 0);
  arm_fault_injection(std::nullopt, 0);
}

TEST(FaultSpec, NanPoisonsOneLossReadOnce) {
  arm_fault_injection(std::string("nan:rank=all:phase=solo:step=3"), 0);
  inject_fault("solo", 2);
  EXPECT_FALSE(take_injected_nan_loss()) << "not yet the step";
  inject_fault("solo", 3);
  EXPECT_TRUE(take_injected_nan_loss());
  EXPECT_FALSE(take_injected_nan_loss()) << "taken once";
  arm_fault_injection(std::nullopt, 0);
}

TEST(FaultMessages, NamePhaseStepAndSuspects) {
  set_progress("dp", 3);
  const std::string one = timeout_message("all_reduce of 10 fp32 (MPI)", 2, {1});
  EXPECT_NE(one.find("[dp phase, step 3]"), std::string::npos) << one;
  EXPECT_NE(one.find("within 2 s"), std::string::npos) << one;
  EXPECT_NE(one.find("suspect: rank 1 "), std::string::npos) << one;
  EXPECT_NE(timeout_message("x", 2, {1, 3}).find("suspect: ranks 1, 3"), std::string::npos);
  EXPECT_NE(timeout_message("x", 2, {}).find("no rank is suspect"), std::string::npos);
  set_progress("building the replica");
  EXPECT_EQ(progress_text(), "building the replica");
  EXPECT_EQ(seconds_in_step(), 0);
}

TEST(FaultMessages, GracePeriodsAreBounded) {
  EXPECT_DOUBLE_EQ(roll_call_seconds(2), 2);
  EXPECT_DOUBLE_EQ(roll_call_seconds(300), 10);
  EXPECT_DOUBLE_EQ(stop_grace_seconds(300), 10);
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
}

TEST(Emulation, HostAndSocketTurnOffTheFasterPaths) {
  auto has = [](const std::vector<std::pair<std::string, std::string>>& vars, const char* name, const char* value) {
    for (const auto& [n, v] : vars) {
      if (n == name) return v == value;
    }
    return false;
  };
  EXPECT_TRUE(emulation_variables(Emulation::kNone).empty());
  const auto host = emulation_variables(Emulation::kHost);
  EXPECT_TRUE(has(host, "NCCL_P2P_DISABLE", "1"));
  EXPECT_FALSE(has(host, "NCCL_SHM_DISABLE", "1"));
  const auto socket = emulation_variables(Emulation::kSocket);
  EXPECT_TRUE(has(socket, "NCCL_P2P_DISABLE", "1"));
  EXPECT_TRUE(has(socket, "NCCL_SHM_DISABLE", "1"));
  EXPECT_TRUE(has(socket, "NCCL_NET", "Socket"));
  EXPECT_EQ(parse_emulation("socket"), Emulation::kSocket);
  EXPECT_THROW(parse_emulation("nvlink"), UsageError);
  EXPECT_NE(emulation_label(Emulation::kHost).find("emulated"), std::string::npos);
  EXPECT_EQ(emulation_label(Emulation::kNone), "");
}

TEST(Emulation, AConflictingUserVariableIsRefused) {
  EXPECT_FALSE(emulation_conflict(Emulation::kHost, {{"NCCL_P2P_DISABLE", "1"}}));
  const auto conflict = emulation_conflict(Emulation::kSocket, {{"NCCL_SHM_DISABLE", "0"}});
  ASSERT_TRUE(conflict);
  EXPECT_NE(conflict->find("NCCL_SHM_DISABLE=0"), std::string::npos);
  EXPECT_FALSE(emulation_conflict(Emulation::kNone, {{"NCCL_P2P_DISABLE", "0"}}));
}

}  // namespace
}  // namespace sb
