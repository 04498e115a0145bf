// Unit tests of the sysfs readers of `scalebench topo` (src/topo/sysfs_topology.cpp) on a fake tree built in
// a temporary directory: network interfaces and RDMA ports, and the PCI facts of a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "src/topo/topology_detail.h"

namespace sb::detail {
namespace {

namespace fs = std::filesystem;

class TopologySysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ =
        fs::temp_directory_path() / ("sb_topology_sysfs_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) {
    const fs::path path = root_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }
  void make_dir(const std::string& relative) { fs::create_directories(root_ / relative); }

  fs::path root_;
};

const NetworkAdapter* find(const std::vector<NetworkAdapter>& adapters, const std::string& name) {
  for (const NetworkAdapter& a : adapters) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

TEST_F(TopologySysfs, ReadsInterfacesAndRdmaPorts) {
  write("class/net/lo/type", "772");
  write("class/net/lo/operstate", "unknown");
  write("class/net/eth0/type", "1");
  write("class/net/eth0/speed", "25000");
  write("class/net/eth0/operstate", "up");
  write("class/net/eth0/device/numa_node", "1");
  write("class/net/ib0/type", "32");
  make_dir("class/net/ib0/speed");  // a read that fails, as the kernel's EINVAL does
  write("class/net/ib0/operstate", "up");
  write("class/net/ib0/device/numa_node", "0");
  write("class/net/docker0/type", "1");
  write("class/net/docker0/speed", "-1");
  write("class/net/docker0/operstate", "down");
  write("class/infiniband/mlx5_0/device/numa_node", "0");
  write("class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE");
  write("class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)");
  write("class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand");
  write("class/infiniband/mlx5_1/device/numa_node", "-1");
  write("class/infiniband/mlx5_1/ports/1/state", "1: DOWN");
  write("class/infiniband/mlx5_1/ports/1/rate", "100 Gb/sec (4X EDR)");
  write("class/infiniband/mlx5_1/ports/1/link_layer", "Ethernet");

  const std::vector<NetworkAdapter> adapters = read_network_adapters(root_.string());
  ASSERT_EQ(adapters.size(), 5u);
  EXPECT_EQ(adapters[0].name, "docker0");  // interfaces by name, then RDMA ports
  EXPECT_EQ(adapters[1].name, "eth0");
  EXPECT_EQ(adapters[2].name, "ib0");
  EXPECT_EQ(adapters[3].name, "mlx5_0:1");
  EXPECT_EQ(adapters[4].name, "mlx5_1:1");
  EXPECT_EQ(find(adapters, "lo"), nullptr);

  const NetworkAdapter& eth0 = adapters[1];
  EXPECT_EQ(eth0.kind, "ethernet");
  EXPECT_EQ(eth0.speed_mbps, 25000);
  EXPECT_EQ(eth0.state, "up");
  EXPECT_EQ(eth0.numa_node, 1);
  EXPECT_FALSE(eth0.is_virtual);
  EXPECT_FALSE(eth0.rdma);

  const NetworkAdapter& ib0 = adapters[2];
  EXPECT_EQ(ib0.kind, "infiniband");
  EXPECT_EQ(ib0.speed_mbps, -1);
  EXPECT_EQ(ib0.numa_node, 0);

  const NetworkAdapter& docker0 = adapters[0];
  EXPECT_TRUE(docker0.is_virtual);
  EXPECT_EQ(docker0.speed_mbps, -1);
  EXPECT_EQ(docker0.state, "down");
  EXPECT_EQ(docker0.numa_node, -1);

  const NetworkAdapter& ib_port = adapters[3];
  EXPECT_TRUE(ib_port.rdma);
  EXPECT_EQ(ib_port.kind, "infiniband");
  EXPECT_EQ(ib_port.speed_mbps, 400000);
  EXPECT_EQ(ib_port.state, "active");
  EXPECT_EQ(ib_port.numa_node, 0);

  const NetworkAdapter& roce_port = adapters[4];
  EXPECT_TRUE(roce_port.rdma);
  EXPECT_EQ(roce_port.kind, "ethernet");
  EXPECT_EQ(roce_port.speed_mbps, 100000);
  EXPECT_EQ(roce_port.state, "down");
  EXPECT_EQ(roce_port.numa_node, -1);
}

TEST_F(TopologySysfs, MissingTreeMeansNoAdapters) {
  EXPECT_TRUE(read_network_adapters((root_ / "absent").string()).empty());
  write("class/net/lo/type", "772");
  EXPECT_TRUE(read_network_adapters(root_.string()).empty());
}

TEST_F(TopologySysfs, GpuPciFacts) {
  const std::string dir = "bus/pci/devices/0000:19:00.0/";
  write(dir + "numa_node", "1");
  write(dir + "local_cpulist", "24-47,72-95");
  write(dir + "current_link_speed", "16.0 GT/s PCIe");
  write(dir + "current_link_width", "16");
  write(dir + "max_link_speed", "32.0 GT/s PCIe");
  write(dir + "max_link_width", "16");

  GpuInfo gpu;
  gpu.bus_id = "0000:19:00.0";
  add_sysfs_gpu_facts(root_.string(), gpu);
  EXPECT_EQ(gpu.numa_node, 1);
  EXPECT_EQ(gpu.cpu_affinity, "24-47,72-95");
  EXPECT_EQ(gpu.pcie_gen_current, 4);
  EXPECT_EQ(gpu.pcie_width_current, 16);
  EXPECT_EQ(gpu.pcie_gen_max, 5);
  EXPECT_EQ(gpu.pcie_width_max, 16);
}

TEST_F(TopologySysfs, GpuPciFactsKeepKnownValuesAndUnknowns) {
  const std::string dir = "bus/pci/devices/0000:3b:00.0/";
  write(dir + "numa_node", "-1");  // single-node machines say -1
  write(dir + "local_cpulist", "0-7");
  write(dir + "current_link_speed", "Unknown");

  GpuInfo gpu;
  gpu.bus_id = "0000:3b:00.0";
  gpu.cpu_affinity = "0-3";  // NVML's answer, already there
  add_sysfs_gpu_facts(root_.string(), gpu);
  EXPECT_EQ(gpu.numa_node, -1);
  EXPECT_EQ(gpu.cpu_affinity, "0-3");
  EXPECT_EQ(gpu.pcie_gen_current, 0);
  EXPECT_EQ(gpu.pcie_width_max, 0);

  GpuInfo unknown;  // no bus id: nothing to look up
  add_sysfs_gpu_facts(root_.string(), unknown);
  EXPECT_EQ(unknown.numa_node, -1);
  EXPECT_TRUE(unknown.cpu_affinity.empty());
}

}  // namespace
}  // namespace sb::detail
