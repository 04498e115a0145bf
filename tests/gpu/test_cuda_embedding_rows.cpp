// sb::cuda::embedding_rows_* (src/cuda/embedding_rows.h) against the CPU reference, bit for bit (copies, integer
// flags and one fp32 add per element): transformer_big's table (32,768 x 1,024, two lookups of 5,120 ids with a
// padding id, float4 path), BERT's (30,522 x 768), and an odd width (scalar path); flags of two "ranks" united by
// max as the all-reduce does; scatter_add in place (the dense part is a view of the gradient) and into a copy.
// Outputs are poisoned first. Skips without a GPU. Run: gpu_tests --gtest_filter='CudaEmbeddingRows*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "scalebench/device.h"
#include "src/cpu/embedding_rows.h"
#include "src/cuda/embedding_rows.h"
#include "tests/support/cuda_array.h"
#include "tests/support/random_data.h"

namespace sb {
namespace {

using test::CudaArray;
using test::TestStream;

struct Table {
  int64_t vocab, dim, ids_per_list;
};

TEST(CudaEmbeddingRows, EveryOpMatchesTheCpuBitForBit) {
  if (visible_cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  for (const Table t : {Table{32768, 1024, 5120}, Table{30522, 768, 4096}, Table{1001, 7, 300}}) {
    const int32_t padding = 1;
    // Two lookups of this rank, and another rank's ids: a skewed draw (most ids among the first tenth of the
    // table, as frequent words are) so that many rows stay untouched and some are hit many times.
    auto draw = [&](uint32_t seed) {
      std::vector<int32_t> ids = test::random_ids(static_cast<size_t>(t.ids_per_list), seed, 0,
                                                  static_cast<int32_t>(t.vocab - 1));
      for (size_t i = 0; i < ids.size(); i += 2) ids[i] = ids[i] % static_cast<int32_t>(t.vocab / 10 + 1);
      ids[3] = padding;
      return ids;
    };
    const std::vector<int32_t> source = draw(1), target = draw(2), other_rank = draw(3);
    const size_t table_size = static_cast<size_t>(t.vocab * t.dim);
    const std::vector<float> late = test::random_normal(table_size, 4), dense = test::random_normal(table_size, 5);

    std::vector<int32_t> flags(static_cast<size_t>(t.vocab), 0), other(static_cast<size_t>(t.vocab), 0);
    cpu::embedding_rows_mark(source.data(), t.ids_per_list, flags.data(), t.vocab, padding);
    cpu::embedding_rows_mark(target.data(), t.ids_per_list, flags.data(), t.vocab, padding);
    cpu::embedding_rows_mark(other_rank.data(), t.ids_per_list, other.data(), t.vocab, padding);
    std::vector<int32_t> united(flags.size());
    std::transform(flags.begin(), flags.end(), other.begin(), united.begin(), [](int32_t a, int32_t b) { return std::max(a, b); });
    std::vector<int32_t> rows(flags.size());
    const int64_t count = cpu::embedding_rows_compact(united.data(), rows.data(), t.vocab);
    ASSERT_GT(count, 0);
    ASSERT_LT(count, t.vocab) << "some rows must stay untouched";
    std::vector<float> packed(table_size), grad(table_size);
    cpu::embedding_rows_gather(late.data(), rows.data(), packed.data(), t.vocab, t.dim);
    cpu::embedding_rows_scatter_add(dense.data(), packed.data(), rows.data(), grad.data(), t.vocab, t.dim);

    TestStream stream;
    CudaArray<int32_t> d_source(source), d_target(target), d_flags(flags.size()), d_united(united), d_rows(rows.size());
    CudaArray<float> d_late(late), d_dense(dense), d_packed(table_size), d_grad(table_size);
    SB_CUDA_CHECK(cudaMemset(d_flags.get(), 0, d_flags.bytes()));  // mark adds to cleared flags (the binding clears)
    d_rows.poison();
    d_packed.poison();
    d_grad.poison();
    cuda::embedding_rows_mark(d_source.get(), t.ids_per_list, d_flags.get(), t.vocab, padding, stream.get());
    cuda::embedding_rows_mark(d_target.get(), t.ids_per_list, d_flags.get(), t.vocab, padding, stream.get());
    cuda::embedding_rows_compact(d_united.get(), d_rows.get(), t.vocab, stream.get());
    cuda::embedding_rows_gather(d_late.get(), d_rows.get(), d_packed.get(), t.vocab, t.dim, stream.get());
    cuda::embedding_rows_scatter_add(d_dense.get(), d_packed.get(), d_rows.get(), d_grad.get(), t.vocab, t.dim,
                                     stream.get());
    // In place: the dense part is the gradient's own bytes.
    cuda::embedding_rows_scatter_add(d_dense.get(), d_packed.get(), d_rows.get(), d_dense.get(), t.vocab, t.dim,
                                     stream.get());
    stream.sync();
    EXPECT_EQ(d_flags.download(), flags) << t.vocab << " x " << t.dim;
    EXPECT_EQ(d_rows.download(), rows) << t.vocab << " x " << t.dim;
    EXPECT_EQ(0, std::memcmp(d_packed.download().data(), packed.data(), sizeof(float) * table_size)) << "gather";
    EXPECT_EQ(0, std::memcmp(d_grad.download().data(), grad.data(), sizeof(float) * table_size)) << "scatter_add";
    EXPECT_EQ(0, std::memcmp(d_dense.download().data(), grad.data(), sizeof(float) * table_size)) << "in place";
  }
}

}  // namespace
}  // namespace sb
