// Unit tests of run_topo_command (src/topo/topo_command.cpp) in one process: it runs on a machine without
// GPUs, writes the --json document, keeps stdout pure JSON for `--json -`, and probes the transport through
// a communicator only on a CUDA device (faked here: host memory that reports itself as CUDA).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scalebench/error.h"
#include "scalebench/topology.h"
#include "tests/unit/one_rank_group.h"

namespace sb {
namespace {

// The CPU device under a CUDA name, so that the probe path runs without a GPU.
class CudaLookalike final : public Device {
 public:
  CudaLookalike() : cpu_(make_cpu_device()), description_(cpu_->description()) {
    description_.kind = DeviceKind::kCuda;
    description_.index = 3;
  }
  const DeviceDescription& description() const override { return description_; }
  void* allocate(size_t bytes) override { return cpu_->allocate(bytes); }
  void release(void* pointer) override { cpu_->release(pointer); }
  bool host_accessible() const override { return true; }
  void copy_to_host(void* h, const void* d, size_t n, StreamHandle s) override {
    cpu_->copy_to_host(h, d, n, s);
  }
  void copy_from_host(void* d, const void* h, size_t n, StreamHandle s) override {
    cpu_->copy_from_host(d, h, n, s);
  }
  void copy_on_device(void* d, const void* s, size_t n, StreamHandle st) override {
    cpu_->copy_on_device(d, s, n, st);
  }
  StreamHandle create_stream() override {
    ++streams_;
    return cpu_->create_stream();
  }
  void destroy_stream(StreamHandle s) override {
    --streams_;
    cpu_->destroy_stream(s);
  }
  void synchronize(StreamHandle s) override { cpu_->synchronize(s); }
  bool stream_idle(StreamHandle s) override { return cpu_->stream_idle(s); }
  std::unique_ptr<DeviceEvent> create_event() override { return cpu_->create_event(); }
  void convert(const void* src, DType from, void* dst, DType to, size_t n, StreamHandle s) override {
    cpu_->convert(src, from, dst, to, n, s);
  }
  bool supports_graphs() const override { return false; }
  void begin_capture(StreamHandle s) override { cpu_->begin_capture(s); }
  std::unique_ptr<DeviceGraph> end_capture(StreamHandle s) override { return cpu_->end_capture(s); }
  void fill_pattern(void* b, size_t n, DType t, const PatternSpec& p, StreamHandle s) override {
    cpu_->fill_pattern(b, n, t, p, s);
  }
  uint64_t count_mismatches(const void* b, size_t n, DType t, const PatternSpec& p, StreamHandle s) override {
    return cpu_->count_mismatches(b, n, t, p, s);
  }
  int open_streams() const { return streams_; }

 private:
  std::unique_ptr<Device> cpu_;
  DeviceDescription description_;
  int streams_ = 0;
};

// One rank: an all_reduce leaves the data as it is, unless told to break it.
class FakeNccl final : public Communicator {
 public:
  explicit FakeNccl(bool corrupt = false) : corrupt_(corrupt) {}
  Backend backend() const override { return Backend::kNccl; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string library_version() const override { return "NCCL fake"; }
  void all_reduce(const void*, void* recv, size_t count, DType, ReduceOp, StreamHandle) override {
    ++all_reduces_;
    if (corrupt_) static_cast<float*>(recv)[count - 1] += 1.0f;
  }
  void reduce_scatter(const void*, void*, size_t, DType, ReduceOp, StreamHandle) override {}
  void all_gather(const void*, void*, size_t, DType, StreamHandle) override {}
  void broadcast(const void*, void*, size_t, DType, int, StreamHandle) override {}
  void all_to_all(const void*, void*, size_t, DType, StreamHandle) override {}
  void barrier(StreamHandle) override {}
  void wait(StreamHandle, const std::string&) override { ++waits_; }
  bool supports_graph_capture() const override { return false; }
  std::string transport() const override { return all_reduces_ > 0 ? "P2P/CUMEM" : "none"; }
  int all_reduces_ = 0;
  int waits_ = 0;

 private:
  bool corrupt_;
};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("sb_topo_" + std::to_string(getpid()) + "_" + name))
      .string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

TEST(TopologyCommand, RunsWithoutGpusAndWritesJson) {
  OneRankGroup group;
  TopoOptions options;
  options.json_path = temp_path("plain.json");
  ::testing::internal::CaptureStdout();
  const int code = run_topo_command(options, group, nullptr, nullptr);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, kExitOk);
  EXPECT_NE(out.find("# scalebench topo"), std::string::npos) << out;
  EXPECT_NE(out.find("# NCCL transport in use: not probed (no communicator)"), std::string::npos) << out;
  const nlohmann::json document = read_json(options.json_path);
  std::remove(options.json_path.c_str());
  EXPECT_EQ(document.at("schema_version"), 1);
  EXPECT_EQ(document.at("command"), "topo");
  ASSERT_EQ(document.at("nodes").size(), 1u);
  EXPECT_EQ(document.at("nodes")[0].at("host"), "test-host");
  EXPECT_EQ(document.at("ranks")[0].at("device"), "none");
  EXPECT_EQ(document.at("transport").at("probed"), false);
  // Whatever this machine has, the node's facts are self-consistent.
  const nlohmann::json& node = document.at("nodes")[0];
  const size_t gpus = node.at("gpus").size();
  EXPECT_EQ(node.at("pairs").size(), gpus * (gpus - (gpus > 0 ? 1 : 0)) / 2);
  if (gpus == 0)
    EXPECT_NE(node.at("cuda_note").get<std::string>().find("no CUDA device visible"), std::string::npos);
}

TEST(TopologyCommand, JsonToStdoutIsJsonOnly) {
  OneRankGroup group;
  TopoOptions options;
  options.json_path = "-";
  ::testing::internal::CaptureStdout();
  run_topo_command(options, group, nullptr, nullptr);
  const std::string out = ::testing::internal::GetCapturedStdout();
  const nlohmann::json document = nlohmann::json::parse(out);  // throws if anything else was printed
  EXPECT_EQ(document.at("tool"), "scalebench");
}

TEST(TopologyCommand, CpuDeviceIsNotProbed) {
  OneRankGroup group;
  std::unique_ptr<Device> cpu = make_cpu_device();
  FakeNccl communicator;
  ::testing::internal::CaptureStdout();
  run_topo_command(TopoOptions{}, group, cpu.get(), &communicator);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(communicator.all_reduces_, 0);
  EXPECT_NE(out.find("not probed (CPU device)"), std::string::npos) << out;
}

TEST(TopologyCommand, ProbesTheTransportOnCuda) {
  OneRankGroup group;
  CudaLookalike device;
  FakeNccl communicator;
  TopoOptions options;
  options.json_path = temp_path("probe.json");
  ::testing::internal::CaptureStdout();
  run_topo_command(options, group, &device, &communicator);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(communicator.all_reduces_, 1);
  EXPECT_EQ(communicator.waits_, 1);
  EXPECT_EQ(device.open_streams(), 0);
  EXPECT_NE(out.find("# NCCL transport in use: P2P/CUMEM\n"), std::string::npos) << out;
  const nlohmann::json document = read_json(options.json_path);
  std::remove(options.json_path.c_str());
  EXPECT_EQ(document.at("transport").at("backend"), "nccl");
  EXPECT_EQ(document.at("ranks")[0].at("device"), "cuda:3");
  EXPECT_EQ(document.at("ranks")[0].at("transport"), "P2P/CUMEM");
}

TEST(TopologyCommand, WrongProbeResultShows) {
  OneRankGroup group;
  CudaLookalike device;
  FakeNccl communicator(/*corrupt=*/true);
  ::testing::internal::CaptureStdout();
  run_topo_command(TopoOptions{}, group, &device, &communicator);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("P2P/CUMEM (probe all_reduce WRONG in 1 elements)"), std::string::npos) << out;
}

TEST(TopologyCommand, UnwritableJsonIsAUsageError) {
  OneRankGroup group;
  TopoOptions options;
  options.json_path = temp_path("no/such/dir/out.json");
  ::testing::internal::CaptureStdout();
  EXPECT_THROW(run_topo_command(options, group, nullptr, nullptr), UsageError);
  ::testing::internal::GetCapturedStdout();
}

}  // namespace
}  // namespace sb
