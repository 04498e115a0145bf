// Unit tests of the pure conversions behind `scalebench topo` (src/topo/topology_format.cpp): CPU masks,
// NVML enum values, NVLink versions and rates, PCIe link speeds, bus ids. The NVML and CUDA paths that use
// them only run on GPU machines, so these are the CI's view of them.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "src/topo/topology_detail.h"

namespace sb::detail {
namespace {

TEST(TopologyFormat, CpuListFromMaskCompactsRuns) {
  const uint64_t low16 = 0xFFFFull;
  EXPECT_EQ(cpu_list_from_mask({low16 | (low16 << 32)}), "0-15,32-47");
  EXPECT_EQ(cpu_list_from_mask({0b101}), "0,2");
  EXPECT_EQ(cpu_list_from_mask({0b110}), "1-2");
  EXPECT_EQ(cpu_list_from_mask({}), "");
  EXPECT_EQ(cpu_list_from_mask({0, 0}), "");
}

TEST(TopologyFormat, CpuListFromMaskRunsAcrossWords) {
  EXPECT_EQ(cpu_list_from_mask({uint64_t{1} << 63, 1}), "63-64");
  EXPECT_EQ(cpu_list_from_mask({~uint64_t{0}, ~uint64_t{0}}), "0-127");
  EXPECT_EQ(cpu_list_from_mask({0, uint64_t{1} << 63}), "127");
  // Two sockets of 56 cores with hyperthreads: node 0 owns 0-55 and 112-167.
  std::vector<uint64_t> words(3, 0);
  for (int cpu = 0; cpu < 56; ++cpu) words[cpu / 64] |= uint64_t{1} << (cpu % 64);
  for (int cpu = 112; cpu < 168; ++cpu) words[cpu / 64] |= uint64_t{1} << (cpu % 64);
  EXPECT_EQ(cpu_list_from_mask(words), "0-55,112-167");
}

TEST(TopologyFormat, NvmlTopologyLevelsAsNvidiaSmiPrintsThem) {
  EXPECT_EQ(pcie_path_from_nvml_level(0), "PIX");  // NVML_TOPOLOGY_INTERNAL: one board
  EXPECT_EQ(pcie_path_from_nvml_level(10), "PIX");
  EXPECT_EQ(pcie_path_from_nvml_level(20), "PXB");
  EXPECT_EQ(pcie_path_from_nvml_level(30), "PHB");
  EXPECT_EQ(pcie_path_from_nvml_level(40), "NODE");
  EXPECT_EQ(pcie_path_from_nvml_level(50), "SYS");
  EXPECT_EQ(pcie_path_from_nvml_level(35), "");
  EXPECT_EQ(pcie_path_from_nvml_level(-1), "");
}

TEST(TopologyFormat, PairLabelPrefersNvlink) {
  EXPECT_EQ(pair_label(18, "PIX"), "NV18");
  EXPECT_EQ(pair_label(12, ""), "NV12");
  EXPECT_EQ(pair_label(0, "SYS"), "SYS");
  EXPECT_EQ(pair_label(0, ""), "");
}

TEST(TopologyFormat, NvlinkVersionIsNvmlsEnumNotANumber) {
  EXPECT_EQ(nvlink_version_from_nvml(1), "1.0");
  EXPECT_EQ(nvlink_version_from_nvml(3), "2.2");
  EXPECT_EQ(nvlink_version_from_nvml(4), "3.0");
  EXPECT_EQ(nvlink_version_from_nvml(5), "3.1");  // what an A100 and an RTX 3090 report
  EXPECT_EQ(nvlink_version_from_nvml(6), "4.0");
  EXPECT_EQ(nvlink_version_from_nvml(7), "5.0");
  EXPECT_EQ(nvlink_version_from_nvml(0), "");  // NVML_NVLINK_VERSION_INVALID
  EXPECT_EQ(nvlink_version_from_nvml(99), "");
}

TEST(TopologyFormat, NvlinkVersionByArchitecture) {
  EXPECT_EQ(nvlink_version_for_compute_capability(90), "4.0");  // H100, H200
  EXPECT_EQ(nvlink_version_for_compute_capability(80), "3.0");
  EXPECT_EQ(nvlink_version_for_compute_capability(70), "2.0");
  EXPECT_EQ(nvlink_version_for_compute_capability(100), "5.0");
  EXPECT_EQ(nvlink_version_for_compute_capability(89), "");  // Ada: no NVLink
  EXPECT_EQ(nvlink_version_for_compute_capability(0), "");
}

TEST(TopologyFormat, NvlinkRawLinkRates) {
  EXPECT_DOUBLE_EQ(nvlink_link_gbps("4.0"), 26.5625);
  // ECOSYSTEM.md: 18 x 26.5625 = 478 GB/s, what nvidia-smi's per-link figures add up to on H100/H200.
  EXPECT_DOUBLE_EQ(18 * nvlink_link_gbps("4.0"), 478.125);
  EXPECT_DOUBLE_EQ(nvlink_link_gbps("5.0"), 53.125);
  EXPECT_DOUBLE_EQ(nvlink_link_gbps("2.0"), 25.78125);
  EXPECT_DOUBLE_EQ(nvlink_link_gbps("3.0"), 0);  // unknown rather than guessed
  EXPECT_DOUBLE_EQ(nvlink_link_gbps(""), 0);
}

TEST(TopologyFormat, PcieGenerationFromLinkSpeed) {
  EXPECT_EQ(pcie_gen_from_link_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_gen_from_link_speed("5.0 GT/s PCIe"), 2);
  EXPECT_EQ(pcie_gen_from_link_speed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcie_gen_from_link_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_gen_from_link_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_gen_from_link_speed("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(pcie_gen_from_link_speed("8 GT/s"), 3);
  EXPECT_EQ(pcie_gen_from_link_speed("Unknown"), 0);
  EXPECT_EQ(pcie_gen_from_link_speed(""), 0);
}

TEST(TopologyFormat, BusIdsFromCudaNvmlAndSysfsAgree) {
  EXPECT_EQ(normalize_bus_id("00000000:3B:00.0"), "0000:3b:00.0");  // NVML
  EXPECT_EQ(normalize_bus_id("0000:3B:00.0"), "0000:3b:00.0");      // CUDA
  EXPECT_EQ(normalize_bus_id("0000:3b:00.0"), "0000:3b:00.0");      // sysfs
  EXPECT_EQ(normalize_bus_id("3B:00.0"), "0000:3b:00.0");           // NVML busIdLegacy-style short form
  EXPECT_EQ(normalize_bus_id("0001:c1:1f.7"), "0001:c1:1f.7");
  EXPECT_EQ(normalize_bus_id(""), "");
  EXPECT_EQ(normalize_bus_id("GPU-1234"), "");
  EXPECT_EQ(normalize_bus_id("0000:3b:00.0x"), "");
  EXPECT_EQ(normalize_bus_id("0000:3b:20.0"), "");  // device numbers stop at 0x1f
}

TEST(TopologyFormat, P2PStatusCodesAsNvidiaSmiPrintsThem) {
  EXPECT_EQ(p2p_status_code(0), "OK");
  EXPECT_EQ(p2p_status_code(1), "CNS");
  EXPECT_EQ(p2p_status_code(2), "GNS");
  EXPECT_EQ(p2p_status_code(3), "TNS");
  EXPECT_EQ(p2p_status_code(5), "NS");
  EXPECT_EQ(p2p_status_code(6), "U");
  EXPECT_EQ(p2p_status_code(42), "U");
}

}  // namespace
}  // namespace sb::detail
