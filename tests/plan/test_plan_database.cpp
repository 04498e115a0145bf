// Schema checks of plan's compiled-in GPU database, fabric table and calibration (src/plan/data/*.json).
#include <gtest/gtest.h>

#include <string>

#include "scalebench/error.h"
#include "scalebench/plan_calibration.h"
#include "scalebench/plan_database.h"

namespace sb {
namespace {

TEST(PlanDatabase, EveryGpuTheIssueNamesIsThereWithSourcesAndPeaks) {
  const HardwareDatabase& db = builtin_hardware_database();
  for (const char* name : {"RTX 2060", "RTX 2070", "RTX 2080", "RTX 2080 Ti", "GTX 1080 Ti", "Titan RTX",
                           "Quadro RTX 6000", "Quadro RTX 8000", "V100 SXM2 32GB", "A100 SXM 40GB", "A100 SXM 80GB", "RTX 3090",
                           "RTX 4090", "RTX 5090", "L40S", "H100 SXM", "H100 PCIe", "H200", "B200"}) {
    const GpuSpec& gpu = db.gpu(name);
    EXPECT_FALSE(gpu.sources.empty()) << name;
    EXPECT_GT(gpu.memory_gb, 0) << name;
    EXPECT_GT(gpu.memory_bandwidth_gbps, 0) << name;
    ASSERT_TRUE(gpu.fp32_tflops.has_value()) << name;
    if (gpu.bf16_tflops) EXPECT_GE(*gpu.bf16_tflops, *gpu.fp32_tflops) << name;
    if (gpu.tf32_tflops && gpu.fp16_tflops) EXPECT_GE(*gpu.fp16_tflops, *gpu.tf32_tflops) << name;
    if (!gpu.nvlink_fabric.empty()) EXPECT_FALSE(db.fabric(gpu.nvlink_fabric).inter_node) << name;
  }
  EXPECT_EQ(db.gpu("h200").name, "H200 SXM");
  EXPECT_EQ(db.gpu("NVIDIA H200").name, "H200 SXM");  // the device name scalebench run records
}

TEST(PlanDatabase, EveryGpuStatesWhatDecidesSustainedSpeedWithASource) {
  for (const GpuSpec& gpu : builtin_hardware_database().gpus) {
    EXPECT_FALSE(gpu.clock_power_sources.empty()) << gpu.name;
    EXPECT_TRUE(gpu.board_power_w.has_value()) << gpu.name;
    EXPECT_EQ(gpu.tensor_core_generation == 0, gpu.tensor_precisions.empty()) << gpu.name;
    if (!gpu.sustained_clock_mhz) continue;
    // The loader's bounds (hardware_database.cpp, check_sustained_clock), and the measurement named in a source.
    const double low = 0.5 * (gpu.base_clock_mhz ? *gpu.base_clock_mhz : *gpu.boost_clock_mhz);
    EXPECT_GE(*gpu.sustained_clock_mhz, low) << gpu.name;
    EXPECT_LE(*gpu.sustained_clock_mhz, 1.5 * *gpu.boost_clock_mhz) << gpu.name;
    bool cited = false;
    for (const std::string& source : gpu.clock_power_sources) cited = cited || source.find("sustained") != source.npos;
    EXPECT_TRUE(cited) << gpu.name << ": a sustained clock without its measurement";
  }
  const HardwareDatabase& db = builtin_hardware_database();
  EXPECT_EQ(db.gpu("GTX 1080 Ti").tensor_core_generation, 0);  // Pascal: no tensor cores
  EXPECT_TRUE(db.gpu("RTX 2080").tensor_cores_for("fp16"));
  EXPECT_FALSE(db.gpu("RTX 2080").tensor_cores_for("bf16"));
  EXPECT_TRUE(db.gpu("A100 SXM 80GB").tensor_cores_for("tf32"));
  // Quadro RTX 6000/8000: the GPU's own 260 W, not the datasheet's 295 W that includes the VirtualLink port; below
  // the Titan RTX's 280 W on the same TU102 at the same 1770 MHz boost.
  for (const char* quadro : {"Quadro RTX 6000", "Quadro RTX 8000"}) {
    EXPECT_EQ(db.gpu(quadro).board_power_w, 260.0) << quadro;
    EXPECT_LT(*db.gpu(quadro).board_power_w, *db.gpu("Titan RTX").board_power_w) << quadro;
    EXPECT_EQ(db.gpu(quadro).boost_clock_mhz, db.gpu("Titan RTX").boost_clock_mhz) << quadro;
  }
}

std::string gpu_error(const std::string& name) {
  try {
    builtin_hardware_database().gpu(name);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted as " + builtin_hardware_database().gpu(name).name;
}

TEST(PlanDatabase, GpuNamesIgnoreSpacingAndNeverGuessBetweenBoards) {
  const HardwareDatabase& db = builtin_hardware_database();
  EXPECT_EQ(db.gpu("rtx-4090").name, "RTX 4090");
  EXPECT_EQ(db.gpu("quadro rtx8000").name, "Quadro RTX 8000");
  // Part of one board's name, or a typo of one: refused with the board meant.
  EXPECT_EQ(gpu_error("RTX 8000"), "unknown GPU 'RTX 8000'; did you mean 'Quadro RTX 8000'?");
  EXPECT_EQ(gpu_error("RTX 4900"), "unknown GPU 'RTX 4900'; did you mean 'RTX 4090'?");
  // A family name of several boards: ambiguous, every candidate listed (A100 was the 40-GB board silently).
  EXPECT_EQ(gpu_error("A100"), "GPU 'A100' is ambiguous: it names 'A100 SXM 40GB', 'A100 SXM 80GB'; give one of them");
  EXPECT_NE(gpu_error("H100").find("'H100 SXM', 'H100 PCIe'"), std::string::npos);
  EXPECT_NE(gpu_error("V100").find("ambiguous"), std::string::npos);
  EXPECT_NE(gpu_error("Voodoo 2").find("unknown GPU 'Voodoo 2' (known: GTX 1080 Ti"), std::string::npos);
}

// The one device-name lookup (run's MFU peak uses it): CUDA's names, brand words dropped, the longest row name or
// alias that is the name or a word prefix of it; null for a device the table does not hold.
TEST(PlanDatabase, CudaDeviceNamesFindTheirRow) {
  const HardwareDatabase& db = builtin_hardware_database();
  auto row = [&](const std::string& device) {
    const GpuSpec* gpu = db.gpu_for_device_name(device);
    return gpu == nullptr ? std::string("none") : gpu->name;
  };
  EXPECT_EQ(row("NVIDIA H200"), "H200 SXM");
  EXPECT_EQ(row("NVIDIA H100 80GB HBM3"), "H100 SXM");
  EXPECT_EQ(row("NVIDIA H100 PCIe"), "H100 PCIe");  // the longer alias wins over "H100"'s prefix
  EXPECT_EQ(row("NVIDIA A100-SXM4-80GB"), "A100 SXM 80GB");
  EXPECT_EQ(row("AMD EPYC 7763"), "none");
  EXPECT_EQ(row(""), "none");
  EXPECT_EQ(HardwareDatabase{}.gpu_for_device_name("NVIDIA H200"), nullptr);  // this database's rows, no other
}

TEST(PlanDatabase, TheFabricTableCoversTheIssuesPaths) {
  const HardwareDatabase& db = builtin_hardware_database();
  for (const char* name : {"nvlink2", "nvlink3-nvswitch", "nvlink4-nvswitch", "nvlink5-nvswitch", "pcie3-p2p",
                           "pcie4-p2p", "pcie5-p2p", "pcie3-host", "pcie4-host", "pcie5-host", "ib-hdr", "ib-ndr",
                           "eth-10g", "eth-25g", "eth-100g", "eth-200g", "eth-400g"}) {
    const FabricSpec& fabric = db.fabric(name);
    EXPECT_FALSE(fabric.sources.empty()) << name;
    EXPECT_TRUE(fabric.gbps.has_value()) << name;
  }
}

TEST(PlanDatabase, EveryFabricHasACalibrationEntry) {
  const Calibration calibration = load_calibration("");
  for (const FabricSpec& fabric : builtin_hardware_database().fabrics) {
    const FabricCalibration& entry = calibration.fabric(fabric);
    EXPECT_FALSE(entry.source.empty()) << fabric.name;
    if (!fabric.gbps) EXPECT_TRUE(entry.busbw_gbps.has_value()) << fabric.name;
  }
  EXPECT_FALSE(calibration.compute_measurements.empty());
  EXPECT_FALSE(calibration.run_measurements.empty());
}

TEST(PlanDatabase, SchemaErrorsNameTheFileAndTheField) {
  const std::string fabrics = builtin_fabrics_json();
  const std::string no_source = R"({"schema_version": 1, "gpus": [{"name": "X", "aliases": [], "architecture": "A",
      "memory_gb": 8, "memory_bandwidth_gbps": 100, "fp32_tflops": 1, "tf32_tflops": null, "fp16_tflops": null,
      "bf16_tflops": null, "nvlink": null, "pcie_gen": 4, "pcie_p2p": null, "boost_clock_mhz": 1500,
      "base_clock_mhz": null, "sustained_clock_mhz": null, "board_power_w": 100, "memory_gbps_per_pin": null,
      "tensor_core_generation": 0, "tensor_precisions": [], "clock_power_sources": ["a datasheet"],
      "derived": [], "notes": "", "sources": []}]})";
  try {
    parse_hardware_database(no_source, fabrics, "g.json", "f.json");
    FAIL() << "a row without sources was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("g.json: \"gpus[0].sources\" is empty"), std::string::npos) << e.what();
  }
  std::string bad_memory = no_source;
  bad_memory.replace(bad_memory.find("\"memory_gb\": 8"), 14, "\"memory_gb\": \"8\"");
  EXPECT_THROW(parse_hardware_database(bad_memory, fabrics), UsageError);
  std::string bad_fabric = no_source;
  bad_fabric.replace(bad_fabric.find("\"nvlink\": null"), 14, R"("nvlink": {"fabric": "warp", "max_gpus": 2})");
  EXPECT_THROW(parse_hardware_database(bad_fabric, fabrics), UsageError);
  EXPECT_THROW(builtin_hardware_database().gpu("Voodoo 2"), UsageError);
  // The tensor-core fields must agree with the peaks.
  std::string listed_without_peak = no_source;
  listed_without_peak.replace(listed_without_peak.find("\"tensor_core_generation\": 0, \"tensor_precisions\": []"), 52,
                              "\"tensor_core_generation\": 3, \"tensor_precisions\": [\"bf16\"]");
  EXPECT_THROW(parse_hardware_database(listed_without_peak, fabrics), UsageError);
  EXPECT_THROW(parse_calibration("{}", "c.json"), UsageError);
}

// A sustained clock scales every compute peak (GpuSpec::clock_scale), so the loader takes one only with its
// measurement named in clock_power_sources and only between 0.5 x base and 1.5 x boost clock.
TEST(PlanDatabase, ASustainedClockNeedsItsMeasurementAndASaneValue) {
  const std::string fabrics = builtin_fabrics_json();
  const std::string row = R"({"schema_version": 1, "gpus": [{"name": "X", "aliases": [], "architecture": "A",
      "memory_gb": 8, "memory_bandwidth_gbps": 100, "fp32_tflops": 1, "tf32_tflops": null, "fp16_tflops": null,
      "bf16_tflops": null, "nvlink": null, "pcie_gen": 4, "pcie_p2p": null, "boost_clock_mhz": 1500,
      "base_clock_mhz": 1200, "sustained_clock_mhz": SUSTAINED, "board_power_w": 100, "memory_gbps_per_pin": null,
      "tensor_core_generation": 0, "tensor_precisions": [], "clock_power_sources": [SOURCES],
      "derived": [], "notes": "", "sources": ["a datasheet"]}]})";
  const auto with = [&](const std::string& sustained, const std::string& sources) {
    std::string text = row;
    text.replace(text.find("SUSTAINED"), 9, sustained);
    text.replace(text.find("SOURCES"), 7, sources);
    return text;
  };
  const std::string measured = R"("datasheet: boost 1500, base 1200 MHz", "review Y: sustained 1650 MHz over 30 min")";
  const HardwareDatabase db = parse_hardware_database(with("1650", measured), fabrics, "g.json", "f.json");
  EXPECT_DOUBLE_EQ(db.gpus.at(0).clock_scale(), 1650.0 / 1500.0);
  EXPECT_DOUBLE_EQ(parse_hardware_database(with("null", measured), fabrics).gpus.at(0).clock_scale(), 1.0);
  for (const char* insane : {"5000", "2251", "599", "12"}) {
    try {
      parse_hardware_database(with(insane, measured), fabrics, "g.json", "f.json");
      ADD_FAILURE() << "sustained clock " << insane << " MHz of a 1200/1500 MHz board was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("\"gpus[0].sustained_clock_mhz\" is"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("600-2250 MHz"), std::string::npos) << e.what();
    }
  }
  try {
    parse_hardware_database(with("1650", R"("datasheet: boost 1500, base 1200 MHz")"), fabrics, "g.json", "f.json");
    ADD_FAILURE() << "a sustained clock without its measurement was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("has no source"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sb
