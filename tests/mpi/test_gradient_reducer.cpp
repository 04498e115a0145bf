// The data-parallel gradient average (src/train/gradient_reducer.h) under mpiexec -n 2 and -n 4 on the CPU
// device: each rank's gradient region after run_nodes_and_reduce() must be the mean of every rank's local
// gradients, whichever the bucket size and whether buckets go out during or after the backward pass; with
// a bf16 wire, within bf16 rounding of it; and whether the tied word embedding's lookups' rows are reduced apart
// (--embedding-grad sparse, the default) or with the rest of the table (dense).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "collectives/backends.h"
#include "scalebench/error.h"
#include "src/train/gradient_reducer.h"
#include "src/train/replica.h"
#include "tests/mpi/mpi_test_world.h"

namespace sb::test {
namespace {

std::vector<float> gradient_region(Replica& replica) {
  const MemoryPlan& plan = replica.plan;
  std::vector<float> values(plan.gradient_bytes / sizeof(float));
  std::memcpy(values.data(), static_cast<unsigned char*>(replica.executor->arena_data()) + plan.gradient_region_offset,
              plan.gradient_bytes);
  return values;
}

// bert_base's tiny batch touches few of its 1,100 words; transformer_big's output projection, over every target
// position, gives its tied table a large dense part. Planned as the trainer plans it for these ranks: the tied table
// split where `mode` (with `overlap`) reduces its rows apart.
std::unique_ptr<Replica> tiny_replica(Device& device, uint64_t bucket_bytes, const char* workload = "bert_base",
                                      EmbeddingGradMode mode = EmbeddingGradMode::kSparse, bool overlap = true) {
  ReplicaOptions options;
  options.workload = workload;
  options.ranks = world().size();
  options.embedding_grad = mode;
  options.overlap = overlap;
  options.batch = 2;
  options.scale = WorkloadScale::kTiny;
  options.bucket_bytes = bucket_bytes;
  return build_replica(options, device, 1, world().rank() * options.batch, 7);
}

// The mean over ranks of every rank's local gradients (or of their magnitudes), summed in rank order in double.
std::vector<float> mean_over_ranks(const std::vector<float>& local, bool magnitudes = false) {
  const int ranks = world().size();
  std::vector<float> all(local.size() * static_cast<size_t>(ranks));
  world().allgather(local.data(), all.data(), local.size() * sizeof(float));
  std::vector<float> mean(local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    double sum = 0;
    for (int r = 0; r < ranks; ++r) {
      const double v = all[static_cast<size_t>(r) * local.size() + i];
      sum += magnitudes ? std::fabs(v) : v;
    }
    mean[i] = static_cast<float>(sum / ranks);
  }
  return mean;
}

struct Schedule {
  uint64_t bucket_bytes;
  bool overlap;
  DType wire;
  bool sparse_rows = true;
  const char* workload = "bert_base";
};

class GradientReducerTest : public ::testing::TestWithParam<Schedule> {};

TEST_P(GradientReducerTest, AveragesEveryRanksGradients) {
  const Schedule schedule = GetParam();
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  const EmbeddingGradMode mode = schedule.sparse_rows ? EmbeddingGradMode::kSparse : EmbeddingGradMode::kDense;
  std::unique_ptr<Replica> replica =
      tiny_replica(*device, schedule.bucket_bytes, schedule.workload, mode, schedule.overlap);
  replica->executor->set_random_stream(3 + static_cast<uint64_t>(world().rank()), 1);
  replica->executor->run();
  const std::vector<float> expected = mean_over_ranks(gradient_region(*replica));
  const std::vector<float> magnitude = mean_over_ranks(gradient_region(*replica), true);
  GradientReducer reducer(*device, *communicator, *replica->executor, schedule.wire, schedule.overlap, false, nullptr,
                          mode);
  // bert_base ties its word embedding to the MLM decoder: one table. Sparse, it adds two reductions (the ranks'
  // row flags, then the packed rows), and the rows cross the wire for the batch's words only.
  const TrainingReport::EmbeddingGrad rows = reducer.embedding_grad();
  ASSERT_EQ(rows.tables, 1);
  const bool sparse = schedule.sparse_rows && schedule.overlap;
  EXPECT_EQ(rows.sparse, sparse);
  EXPECT_EQ(find_embedding_rows_exchanges(replica->graph).size(), sparse ? 1u : 0u)
      << "the graph splits the table exactly where the rows are reduced apart";
  EXPECT_EQ(rows.dense_because.empty(), schedule.overlap || !schedule.sparse_rows) << rows.dense_because;
  ASSERT_EQ(reducer.bucket_count(), replica->plan.buckets.size() + (sparse ? 2 : 0));
  if (sparse && std::string(schedule.workload) == "bert_base") {
    EXPECT_LT(rows.rows, rows.table_rows) << "a tiny batch touches a few of the 1,100 words";
    EXPECT_EQ(rows.rows % world().size(), 0) << "ranks x the lookups' ids";
    size_t kinds = 0;
    for (size_t r = 0; r < reducer.bucket_count(); ++r) kinds += std::string(reducer.reduction_kind(r)) != "bucket";
    EXPECT_EQ(kinds, 2u);
  }
  reducer.run_nodes_and_reduce();  // the same step again (same dropout stream), now averaged
  const std::vector<double> bucket_ms = reducer.wait_and_time("the test's all-reduces");
  EXPECT_EQ(bucket_ms.size(), reducer.bucket_count());
  const std::vector<float> reduced = gradient_region(*replica);
  ASSERT_EQ(reduced.size(), expected.size());
  // fp32: MPI's own summation order against ours in double. bf16: every addend, partial sum and the result
  // rounded to 8 significant bits (half an ulp: 2^-8 relative each), bounded through the mean magnitude
  // because addends of opposite signs cancel.
  const double relative = schedule.wire == DType::kBFloat16 ? 3.0 / 256 : 1e-6;
  uint64_t tied_begin = 0, tied_end = 0;  // a sparse tied table's gradient, in elements of the region
  if (sparse) {
    const EmbeddingRowsExchange x = find_embedding_rows_exchanges(replica->graph).at(0);
    tied_begin = (replica->plan.offsets.at(static_cast<size_t>(x.gradient)) - replica->plan.gradient_region_offset) / 4;
    tied_end = tied_begin + static_cast<uint64_t>(x.vocab * x.dim);
  }
  int64_t wrong = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double tolerance = relative * magnitude[i] + 1e-30;
    // A sparse table's touched rows on a bf16 wire: two roundings, of the dense part's average and of the rows',
    // each within 2^-8 of its own size; the two parts may cancel in the sum, so bound them by the larger of the
    // mean magnitude and the result, twice.
    if (schedule.wire == DType::kBFloat16 && i >= tied_begin && i < tied_end) {
      tolerance = 2 * relative * std::max<double>(magnitude[i], std::fabs(reduced[i])) + 1e-30;
    }
    if (std::fabs(static_cast<double>(reduced[i]) - expected[i]) > tolerance) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << "of " << expected.size() << " gradient elements";
  if (schedule.wire == DType::kBFloat16) {  // the average travelled as bf16: every result is a widened bf16
    // (but a sparse tied table's touched rows: the sum of two, its dense part's and its rows')
    int64_t wider = 0;
    for (size_t i = 0; i < reduced.size(); ++i) {
      if (i >= tied_begin && i < tied_end) continue;
      const float v = reduced[i];
      uint32_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      wider += (bits & 0xFFFFu) != 0;
    }
    EXPECT_EQ(wider, 0) << "gradients with more than bf16's 8 significant bits after a bf16 all-reduce";
  }
  int64_t any_wrong = wrong;
  world().allreduce_sum(&any_wrong, 1);
  EXPECT_EQ(any_wrong, 0) << "some rank's average is off";
}

TEST(GradientReducer, ScheduleDoesNotChangeTheResult) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  std::vector<std::vector<float>> results;
  for (Schedule schedule :
       {Schedule{1 << 20, true, DType::kFloat32, false}, Schedule{1 << 20, false, DType::kFloat32, false},
        Schedule{4096, true, DType::kFloat32, false}, Schedule{1 << 20, true, DType::kFloat32, true},
        Schedule{4096, true, DType::kFloat32, true}}) {
    const EmbeddingGradMode mode = schedule.sparse_rows ? EmbeddingGradMode::kSparse : EmbeddingGradMode::kDense;
    std::unique_ptr<Replica> replica =
        tiny_replica(*device, schedule.bucket_bytes, "transformer_big", mode, schedule.overlap);
    replica->executor->set_random_stream(3 + static_cast<uint64_t>(world().rank()), 1);
    GradientReducer reducer(*device, *communicator, *replica->executor, schedule.wire, schedule.overlap, false,
                            nullptr, mode);
    reducer.run_nodes_and_reduce();
    reducer.wait_and_time("the test's all-reduces");
    results.push_back(gradient_region(*replica));
  }
  auto near = [](const std::vector<float>& a, const std::vector<float>& b, const char* what) {
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-6 * (1 + std::fabs(a[i]))) << what << ": element " << i;
    }
  };
  EXPECT_EQ(results[0], results[1]) << "after the backward pass instead of during it";
  if (world().size() == 2) {  // a + b == b + a; with more ranks MPI may sum in another order per message size
    EXPECT_EQ(results[0], results[2]) << "small buckets instead of one";
    EXPECT_EQ(results[3], results[4]) << "sparse rows: small buckets instead of one";
  } else {
    near(results[0], results[2], "small buckets instead of one");
    near(results[3], results[4], "sparse rows: small buckets instead of one");
  }
  // The rows reduced apart: avg(dense) + avg(rows) against avg(dense + rows), the same sums in another order.
  near(results[0], results[3], "sparse rows instead of the dense table");
}

// update() with overlap runs the optimizer bucket by bucket as each all-reduce finishes; the weights must be
// those of one optimizer step over everything after the last all-reduce, bit for bit.
TEST(GradientReducer, BucketByBucketUpdateEqualsOneStep) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  OptimizerSettings adamw = default_optimizer(OptimizerKind::kAdamW);
  std::vector<std::vector<float>> weights;
  for (bool in_ranges : {true, false}) {
    std::unique_ptr<Replica> replica = tiny_replica(*device, 4096);
    GradientReducer reducer(*device, *communicator, *replica->executor, DType::kFloat32, true);
    ASSERT_GT(reducer.bucket_count(), 2u);
    ASSERT_TRUE(replica->executor->steps_in_ranges(adamw));
    for (int step = 1; step <= 2; ++step) {
      replica->executor->set_random_stream(3 + static_cast<uint64_t>(world().rank()), static_cast<uint64_t>(step));
      reducer.run_nodes_and_reduce();
      if (in_ranges) {
        reducer.update(adamw, step);
        reducer.wait_and_time("the test's all-reduces");
      } else {
        reducer.wait_and_time("the test's all-reduces");
        replica->executor->optimizer_step(adamw, step);
      }
    }
    weights.push_back(read_parameters(*replica));
  }
  EXPECT_EQ(weights[0], weights[1]);
  OptimizerSettings clipped = adamw;
  clipped.max_grad_norm = 1;
  auto replica = tiny_replica(*device, 4096);
  EXPECT_FALSE(replica->executor->steps_in_ranges(clipped)) << "clipping needs the global norm first";
  EXPECT_THROW(replica->executor->optimizer_step_range(clipped, 1, 0, 4), UsageError);
}

// A communicator that forwards to another and counts its all-reduces: which reductions went through it.
class CountingCommunicator final : public Communicator {
 public:
  explicit CountingCommunicator(Communicator& inner) : inner_(inner) {}
  Backend backend() const override { return inner_.backend(); }
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string library_version() const override { return inner_.library_version(); }
  void all_reduce(const void* send, void* recv, size_t count, DType type, ReduceOp op, StreamHandle stream) override {
    ++all_reduces;
    inner_.all_reduce(send, recv, count, type, op, stream);
  }
  void reduce_scatter(const void* send, void* recv, size_t count, DType type, ReduceOp op,
                      StreamHandle stream) override {
    inner_.reduce_scatter(send, recv, count, type, op, stream);
  }
  void all_gather(const void* send, void* recv, size_t count, DType type, StreamHandle stream) override {
    inner_.all_gather(send, recv, count, type, stream);
  }
  void broadcast(const void* send, void* recv, size_t count, DType type, int root, StreamHandle stream) override {
    inner_.broadcast(send, recv, count, type, root, stream);
  }
  void all_to_all(const void* send, void* recv, size_t count, DType type, StreamHandle stream) override {
    inner_.all_to_all(send, recv, count, type, stream);
  }
  void barrier(StreamHandle stream) override { inner_.barrier(stream); }
  void wait(StreamHandle stream, const std::string& what) override { inner_.wait(stream, what); }
  bool supports_graph_capture() const override { return inner_.supports_graph_capture(); }
  std::string transport() const override { return inner_.transport(); }
  // Registers as a library granting at most `grant` would (kNone: nothing, as the mpi backend), and records it.
  std::unique_ptr<RegisteredRange> register_range(void* pointer, size_t bytes, BufferRegistration wanted) override {
    if (grant == BufferRegistration::kNone) return nullptr;
    registered.push_back({pointer, bytes, wanted});
    const BufferRegistration granted = static_cast<int>(wanted) < static_cast<int>(grant) ? wanted : grant;
    return std::make_unique<Range>(granted, granted == wanted ? "" : "granted less", &live_registrations);
  }

  struct Registered {
    void* pointer;
    size_t bytes;
    BufferRegistration wanted;
  };
  int all_reduces = 0;
  BufferRegistration grant = BufferRegistration::kNone;
  std::vector<Registered> registered;
  int live_registrations = 0;

 private:
  struct Range final : RegisteredRange {
    Range(BufferRegistration kind, std::string why, int* live) : kind_(kind), why_(std::move(why)), live_(live) {
      ++*live_;
    }
    ~Range() override { --*live_; }
    BufferRegistration kind() const override { return kind_; }
    const std::string& why_less() const override { return why_; }
    BufferRegistration kind_;
    std::string why_;
    int* live_;
  };
  Communicator& inner_;
};

// --overlap-ctas' second communicator (src/train/overlap_communicator.h) carries exactly the reductions issued while
// nodes remain: with overlap all but the one bucket the last node writes; without overlap, none. The average is the
// same either way.
TEST(GradientReducer, DuringBackwardCommunicatorCarriesTheOverlappingReductions) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  auto second = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  for (bool overlap : {true, false}) {
    CountingCommunicator during_backward(*second), main(*communicator);
    std::unique_ptr<Replica> replica = tiny_replica(*device, 4096);
    replica->executor->set_random_stream(3 + static_cast<uint64_t>(world().rank()), 1);
    replica->executor->run();
    const std::vector<float> expected = mean_over_ranks(gradient_region(*replica));
    GradientReducer reducer(*device, main, *replica->executor, DType::kFloat32, overlap, false, nullptr,
                            EmbeddingGradMode::kSparse, &during_backward);
    reducer.run_nodes_and_reduce();
    reducer.wait_and_time("the test's all-reduces");
    EXPECT_EQ(during_backward.all_reduces + main.all_reduces, static_cast<int>(reducer.bucket_count())) << overlap;
    if (overlap) {
      ASSERT_TRUE(reducer.embedding_grad().sparse);
      EXPECT_EQ(during_backward.all_reduces, static_cast<int>(reducer.bucket_count()) - 1)
          << "the buckets, the tied table's flags and its rows, all issued while nodes remain";
      EXPECT_EQ(main.all_reduces, 1) << "the one bucket the last node writes (bert_base's token-type embedding)";
    } else {
      EXPECT_EQ(during_backward.all_reduces, 0) << "without overlap every reduction follows the last node";
    }
    const std::vector<float> reduced = gradient_region(*replica);
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(reduced[i], expected[i], 1e-6 * (1 + std::fabs(expected[i]))) << "element " << i;
    }
  }
}

// --grad-registration: on an fp32 wire the reducer registers the gradient region with every communicator that reduces
// it, from the 4 KiB boundary at or before its start (a symmetric window's alignment) to its end; on a bf16 wire the
// two wire buffers instead. What it reports is the weakest grant, with that communicator's reason; the
// registrations are gone with the reducer; the fp32 average is still the mean.
TEST(GradientReducer, RegistersTheBuffersItsAllReducesUse) {
  auto device = make_cpu_device();
  auto communicator = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  auto second = make_mpi_communicator(world(), *device, CommunicatorOptions{});
  for (DType wire : {DType::kFloat32, DType::kBFloat16}) {
    CountingCommunicator main(*communicator), during_backward(*second);
    main.grant = BufferRegistration::kSymmetric;
    during_backward.grant = BufferRegistration::kLocal;
    std::unique_ptr<Replica> replica = tiny_replica(*device, 4096, "transformer_big");
    replica->executor->set_random_stream(3 + static_cast<uint64_t>(world().rank()), 1);
    replica->executor->run();
    const std::vector<float> expected = mean_over_ranks(gradient_region(*replica));
    const MemoryPlan& plan = replica->plan;
    {  // the reducer's lifetime: its registrations end with it
      GradientReducer reducer(*device, main, *replica->executor, wire, true, false, nullptr,
                              EmbeddingGradMode::kSparse, &during_backward, BufferRegistration::kSymmetric);
      ASSERT_TRUE(reducer.embedding_grad().sparse);
      EXPECT_EQ(reducer.registration().granted, BufferRegistration::kLocal) << "the weaker of the two grants";
      EXPECT_EQ(reducer.registration().why_less, "granted less");
      for (const CountingCommunicator* c : {&main, &during_backward}) {
        EXPECT_EQ(c->live_registrations, static_cast<int>(c->registered.size()));
        for (const auto& r : c->registered) EXPECT_EQ(r.wanted, BufferRegistration::kSymmetric);
        if (wire == DType::kFloat32) {
          ASSERT_EQ(c->registered.size(), 1u) << "the gradient region alone";
          const auto* arena = static_cast<const unsigned char*>(replica->executor->arena_data());
          const auto first = static_cast<uint64_t>(static_cast<const unsigned char*>(c->registered[0].pointer) - arena);
          EXPECT_EQ(first % kRegistrationAlignment, 0u);
          EXPECT_LE(first, plan.gradient_region_offset);
          EXPECT_GT(first + kRegistrationAlignment, plan.gradient_region_offset);
          EXPECT_EQ(first + c->registered[0].bytes, plan.gradient_region_offset + plan.gradient_bytes);
        } else {
          ASSERT_EQ(c->registered.size(), 2u) << "the bf16 wire buffers of the buckets and of the tied rows";
          EXPECT_EQ(c->registered[0].bytes, plan.gradient_bytes / 2);
          EXPECT_GT(c->registered[1].bytes, 0u);
        }
      }
      reducer.run_nodes_and_reduce();
      reducer.wait_and_time("the test's all-reduces");
    }
    EXPECT_EQ(main.live_registrations + during_backward.live_registrations, 0) << "released with the reducer";
    if (wire == DType::kBFloat16) continue;  // its rounding is AveragesEveryRanksGradients' to bound
    const std::vector<float> reduced = gradient_region(*replica);
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_NEAR(reduced[i], expected[i], 1e-6 * (1 + std::fabs(expected[i]))) << "element " << i;
    }
  }
  // A backend that registers nothing: none granted, and the reason names it.
  std::unique_ptr<Replica> replica = tiny_replica(*device, 4096);
  GradientReducer reducer(*device, *communicator, *replica->executor, DType::kFloat32, true, false, nullptr,
                          EmbeddingGradMode::kAuto, nullptr, BufferRegistration::kLocal);
  EXPECT_EQ(reducer.registration().granted, BufferRegistration::kNone);
  EXPECT_NE(reducer.registration().why_less.find("the mpi backend registers no buffers"), std::string::npos)
      << reducer.registration().why_less;
}

INSTANTIATE_TEST_SUITE_P(Schedules, GradientReducerTest,
                         ::testing::Values(Schedule{25ull << 20, true, DType::kFloat32},
                                           Schedule{4096, true, DType::kFloat32},
                                           Schedule{4096, false, DType::kFloat32},
                                           Schedule{4096, true, DType::kBFloat16},
                                           Schedule{25ull << 20, true, DType::kFloat32, false},
                                           Schedule{4096, true, DType::kBFloat16, false},
                                           Schedule{25ull << 20, true, DType::kFloat32, true, "transformer_big"},
                                           Schedule{4096, true, DType::kFloat32, true, "transformer_big"},
                                           Schedule{4096, true, DType::kBFloat16, true, "transformer_big"},
                                           Schedule{4096, true, DType::kFloat32, false, "transformer_big"}),
                         [](const ::testing::TestParamInfo<Schedule>& info) {
                           return std::string(info.param.bucket_bytes > 4096 ? "one_bucket" : "small_buckets") +
                                  (info.param.overlap ? "_overlap" : "_after_backward") +
                                  (info.param.wire == DType::kBFloat16 ? "_bf16" : "_fp32") +
                                  (info.param.sparse_rows ? "" : "_dense_rows") + "_" + info.param.workload;
                         });

}  // namespace
}  // namespace sb::test
