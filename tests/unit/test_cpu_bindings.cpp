// The CPU executor's node bindings (src/cpu/cpu_bindings.h): each family in cpu_bindings.cpp's one list binds
// only the ops the op catalogue puts in that family (so an op's binding sits in src/cpu/<family>.cpp), the
// executor's table is exactly the families' bindings, and a name bound twice is refused instead of silently
// dropping one of the two kernels.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

#include "src/core/ops/op_bindings.h"
#include "src/core/ops/op_catalogue.h"
#include "src/cpu/cpu_bindings.h"

namespace sb::detail {
namespace {

void nothing(CpuExecutor&, const Node&) {}

TEST(CpuBindings, ANameBoundTwiceIsRefused) {
  CpuKernelTable table;
  bind_cpu_kernels(table, {{"relu", nothing}, {"gelu", nothing}});
  EXPECT_EQ(table.size(), 2u);
  try {
    bind_cpu_kernels(table, {{"tanh", nothing}, {"gelu", nothing}});  // a second family binds gelu again
    FAIL() << "binding 'gelu' twice was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("'gelu'"), std::string::npos) << e.what();
  }
  CpuKernelTable fresh;
  EXPECT_THROW(bind_cpu_kernels(fresh, {{"relu", nothing}, {"relu", nothing}}), std::logic_error);  // one list
}

TEST(CpuBindings, EachFamilyBindsOnlyItsOwnOps) {
  std::set<std::string> families;
  for (const CpuFamilyBinding& family : cpu_family_bindings()) {
    EXPECT_TRUE(families.insert(std::string(family.family)).second) << "family '" << family.family << "' listed twice";
    CpuKernelTable table;
    family.bind(table);
    EXPECT_FALSE(table.empty()) << "family '" << family.family << "' binds no op";
    for (const auto& entry : table) {
      const OpInfo* info = find_op_info(entry.first);
      ASSERT_NE(info, nullptr) << "op '" << entry.first << "' (bound by " << family.family << ") is not catalogued";
      EXPECT_EQ(info->family, family.family) << "op '" << entry.first << "' is bound in src/cpu/" << family.family
                                             << ".cpp but belongs to the family '" << info->family << "'";
    }
  }
}

TEST(CpuBindings, TheExecutorsTableIsTheFamiliesBindings) {
  CpuKernelTable all;
  for (const CpuFamilyBinding& family : cpu_family_bindings()) family.bind(all);  // throws on a repeated name
  std::set<std::string> expected;
  for (const auto& entry : all) expected.insert(entry.first);
  const std::vector<std::string> listed = cpu_kernel_ops();
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), expected);
  EXPECT_EQ(listed.size(), expected.size());
  EXPECT_EQ(cpu_kernels().size(), expected.size());
  for (const std::string& op : expected) EXPECT_TRUE(has_cpu_kernel(op)) << op;
  EXPECT_FALSE(has_cpu_kernel("no_such_op"));
}

}  // namespace
}  // namespace sb::detail
