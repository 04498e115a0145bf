// Bucketed, overlapped gradient averaging (src/train/gradient_reducer.h).
#include "src/train/gradient_reducer.h"

#include <algorithm>

#include "scalebench/error.h"

namespace sb {

namespace {

// The tied tables whose lookups' rows are reduced apart: where rows_apart_refusal allows it at these ranks and the
// graph split the table (the replica splits where the job's ranks reduce it apart; a --gpus-sweep point's fewer
// ranks may allow what the job's did not). *dense_because says why one is not ("" for an explicit dense).
std::vector<EmbeddingRowsExchange> row_exchanges(const Graph& graph, const std::vector<TiedTable>& tied,
                                                 EmbeddingGradMode mode, int ranks, bool overlap,
                                                 bool gradients_in_blocks, std::string* dense_because) {
  const std::vector<EmbeddingRowsExchange> split = find_embedding_rows_exchanges(graph);
  std::vector<EmbeddingRowsExchange> chosen;
  for (const TiedTable& table : tied) {
    std::string refusal = rows_apart_refusal(mode, ranks, overlap, table.rows, table.ids, gradients_in_blocks);
    const auto exchange = std::find_if(split.begin(), split.end(), [&](const EmbeddingRowsExchange& x) {
      return graph.tensor(x.gradient).gradient_of == table.table;
    });
    if (refusal.empty() && exchange == split.end()) {
      refusal = "the replica's graph keeps the table whole (planned for the job's ranks, which reduce it whole)";
    }
    if (!refusal.empty()) {
      if (mode != EmbeddingGradMode::kDense) *dense_because = refusal;
      continue;
    }
    chosen.push_back(*exchange);
  }
  return chosen;
}

// The same ranges of the gradient region, in any order.
bool same_buckets(std::vector<GradientBucket> a, std::vector<GradientBucket> b) {
  auto by_offset = [](const GradientBucket& x, const GradientBucket& y) { return x.offset < y.offset; };
  std::sort(a.begin(), a.end(), by_offset);
  std::sort(b.begin(), b.end(), by_offset);
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const GradientBucket& x, const GradientBucket& y) {
    return x.offset == y.offset && x.bytes == y.bytes;
  });
}

}  // namespace

std::unique_ptr<GradientReducer> make_gradient_reducer(const TrainOptions& options, Device& device,
                                                       Communicator& communicator, Executor& executor,
                                                       const std::vector<GradientBucket>* buckets,
                                                       Communicator* during_backward) {
  return std::make_unique<GradientReducer>(device, communicator, executor, options.grad_dtype, options.overlap,
                                           options.comm_high_priority, buckets, options.embedding_grad,
                                           during_backward, options.grad_registration, options.strategy);
}

ArenaMemory registrable_arena(Communicator& communicator, Device& device, BufferRegistration registration) {
  if (registration == BufferRegistration::kNone || communicator.backend() != Backend::kNccl) return {};
  return {[&communicator, &device](uint64_t bytes) { return communicator.allocate_buffer(device, bytes); },
          [&communicator, &device](void* pointer) { communicator.release_buffer(device, pointer); }};
}

GradientReducer::GradientReducer(Device& device, Communicator& communicator, Executor& executor, DType wire_dtype,
                                 bool overlap, bool high_priority, const std::vector<GradientBucket>* buckets,
                                 EmbeddingGradMode embedding_grad, Communicator* during_backward,
                                 BufferRegistration registration, DataParallelStrategy strategy)
    : device_(device),
      communicator_(communicator),
      during_backward_(during_backward),
      executor_(executor),
      wire_dtype_(wire_dtype),
      overlap_(overlap) {
  if (wire_dtype != DType::kFloat32 && wire_dtype != DType::kBFloat16) {
    throw UsageError(std::string("--grad-dtype must be fp32 or bf16, not ") + dtype_name(wire_dtype));
  }
  buckets_ = buckets != nullptr ? *buckets : executor.plan().buckets;
  const Graph& graph = executor.graph();
  const std::vector<TiedTable> tied = find_tied_tables(graph);
  tied_tables_ = static_cast<int>(tied.size());
  for (const TiedTable& table : tied) tied_table_rows_ += table.rows;
  const MemoryPlan& plan = executor.plan();
  if (plan.gradients_in_blocks && !shards_by_bucket(strategy)) {
    throw UsageError(std::string("gradient reducer: --strategy ") + strategy_name(strategy) +
                     " reduces a gradient region, and the plan keeps its gradients in blocks (zero2, zero3)");
  }
  exchanges_ = row_exchanges(graph, tied, embedding_grad, communicator.size(), overlap, plan.gradients_in_blocks,
                             &sparse_rows_off_because_);
  // A tied table's gradient is ready, as far as its buckets go, once its dense part is written: its rows are added
  // after their own reduction.
  std::vector<int> ready = plan.gradient_ready_node;
  for (const EmbeddingRowsExchange& x : exchanges_) {
    const auto at = std::find(plan.gradient_order.begin(), plan.gradient_order.end(), x.gradient);
    ready.at(static_cast<size_t>(at - plan.gradient_order.begin())) = x.dense_writer;
  }
  for (GradientBucket& bucket : buckets_) {
    bucket.ready_after_node = -1;
    for (size_t i = bucket.first; i <= bucket.last; ++i) {
      bucket.ready_after_node = std::max(bucket.ready_after_node, ready.at(i));
    }
  }
  // Ready nodes grow with the backward order already; sorting makes the issue order explicit and stable.
  std::stable_sort(buckets_.begin(), buckets_.end(), [](const GradientBucket& a, const GradientBucket& b) {
    return a.ready_after_node < b.ready_after_node;
  });
  for (size_t b = 0; b < buckets_.size(); ++b) {
    reductions_.push_back({Reduction::Kind::kBucket, b, buckets_[b].ready_after_node});
  }
  for (size_t x = 0; x < exchanges_.size(); ++x) {
    reductions_.push_back({Reduction::Kind::kRowFlags, x, exchanges_[x].mark_node});
    reductions_.push_back({Reduction::Kind::kRows, x, exchanges_[x].gather_node});
  }
  std::stable_sort(reductions_.begin(), reductions_.end(),
                   [](const Reduction& a, const Reduction& b) { return a.after_node < b.after_node; });
  const int last_node = static_cast<int>(graph.nodes().size()) - 1;
  for (Reduction& r : reductions_) r.during_backward = overlap && r.after_node < last_node;
  // The nodes that read a reduced exchange (compact: the flags; scatter: the rows), in node order.
  for (size_t r = 0; r < reductions_.size(); ++r) {
    if (reductions_[r].kind == Reduction::Kind::kBucket) continue;
    const EmbeddingRowsExchange& x = exchanges_[reductions_[r].index];
    const int reader = reductions_[r].kind == Reduction::Kind::kRowFlags ? x.compact_node : x.scatter_node;
    waits_.emplace_back(static_cast<size_t>(reader), r);
  }
  // Gradient blocks: before the node after a block's release, whose tensors may reuse its bytes, the compute stream
  // waits for its buckets' reduce-scatters, which read it (with overlap; without, they are released at the end).
  if (plan.gradients_in_blocks && overlap) {
    for (size_t r = 0; r < reductions_.size(); ++r) {
      if (reductions_[r].kind != Reduction::Kind::kBucket) continue;  // none: no rows are reduced apart with blocks
      const GradientBlock& block = plan.gradient_blocks.at(static_cast<size_t>(buckets_[reductions_[r].index].block));
      const auto reuser = static_cast<size_t>(block.released_after_node + 1);
      if (reuser < graph.nodes().size()) waits_.emplace_back(reuser, r);
    }
  }
  std::sort(waits_.begin(), waits_.end());
  // Bucket ranges double as parameter ranges for update(): the planner lays parameters out exactly as their
  // gradients, one region apart.
  // With blocks the gradients' tensors lie in their blocks; the flat layout the buckets were cut from is the mirror.
  const bool in_region = !plan.gradients_in_blocks;
  for (TensorId gradient : plan.gradient_order) {
    const TensorId parameter = executor.graph().tensor(gradient).gradient_of;
    if (in_region && plan.offsets.at(static_cast<size_t>(parameter)) + plan.gradient_region_offset !=
                         plan.offsets.at(static_cast<size_t>(gradient))) {
      throw UsageError("gradient reducer: parameter '" + executor.graph().tensor(parameter).name +
                       "' is not laid out like its gradient");
    }
  }
  comm_stream_ = high_priority ? device.create_high_priority_stream() : device.create_stream();
  if (wire_dtype == DType::kBFloat16) {
    wire_buffer_bytes_ = std::max<uint64_t>(executor.plan().gradient_bytes / 2, 2);
    wire_charge_ = AllocationCharge(wire_buffer_bytes_, "the bf16 gradient wire buffer");
    wire_buffer_ = communicator.allocate_buffer(device, wire_buffer_bytes_);
    int64_t most = 0;
    for (size_t x = 0; x < exchanges_.size(); ++x) most = std::max(most, exchanged_rows(x) * exchanges_[x].dim);
    if (most > 0) {
      rows_wire_buffer_bytes_ = static_cast<uint64_t>(most) * 2;
      rows_wire_charge_ = AllocationCharge(rows_wire_buffer_bytes_, "the bf16 wire buffer of the tied rows");
      rows_wire_buffer_ = communicator.allocate_buffer(device, rows_wire_buffer_bytes_);
    }
  }
  register_buffers(registration);
  // The reduce-scatters fill the executor's gradient shard: it no longer copies the blocks there itself.
  if (plan.gradients_in_blocks) executor.set_gradients_collected_by_caller(true);
  // zero3's gathers fill the parameter blocks from the rank's parameter shard: the executor no longer copies them.
  if (plan.parameters_in_blocks) executor.set_parameters_gathered_by_caller(true);
  sharded_ = shards_optimizer(strategy);
  if (!sharded_) {
    const auto parameters = static_cast<int64_t>(plan.parameter_bytes / sizeof(float));
    shard_ = ParameterShard{{ShardRange{0, parameters}}, parameters, 0};
  } else {
    if (shards_by_bucket(strategy) != plan.shard_by_bucket) {
      throw UsageError(std::string("gradient reducer: --strategy ") + strategy_name(strategy) + " needs a plan " +
                       (plan.shard_by_bucket ? "with contiguous shards" : "laid out by bucket"));
    }
    by_bucket_ = plan.shard_by_bucket;
    before_use_ = sb::gathers_before_use(strategy);
    if (plan.parameters_in_blocks && !before_use_) {
      throw UsageError(std::string("gradient reducer: --strategy ") + strategy_name(strategy) +
                       " keeps the parameters whole; the plan holds them in blocks (zero3's)");
    }
    if (by_bucket_ && !same_buckets(buckets_, plan.buckets)) {
      throw UsageError(std::string("gradient reducer: --strategy ") + strategy_name(strategy) +
                       " reduces in the plan's buckets, whose chunks are the shards");
    }
    shard_ = parameter_shard(plan, communicator.rank(), communicator.size());
    norm_ready_ = device.create_event();
    whole_requested_ = device.create_event();
    norm_reduced_ = device.create_event();
    update_done_ = device.create_event();
  }
  sub_steps_ = executor.graph().sub_step_count();
  size_t gathers = 0;
  for (size_t k = 0; k < sub_steps_; ++k) {
    std::vector<ParameterGather> list;
    if (before_use_) {
      list = unit_gathers(graph, plan, buckets_, k, executor.forward_node_count());
    } else if (by_bucket_) {
      for (size_t b = 0; b < buckets_.size(); ++b) {
        list.push_back(ParameterGather{ParameterGather::When::kAfterUpdate, b});
      }
    } else if (sharded_) {
      list.push_back(ParameterGather{});  // zero1: the whole region
    }
    // Before the training pass's nodes, in node order: a reduction to wait for, or (zero3) a unit's gather.
    std::vector<Stop> stops;
    for (const auto& [reader, reduction] : waits_) stops.push_back(Stop{reader, false, reduction});
    for (size_t i = 0; i < list.size(); ++i) {
      const ParameterGather::When when = list[i].when;
      if (when == ParameterGather::When::kBeforeForward || when == ParameterGather::When::kBeforeBackward) {
        stops.push_back(Stop{list[i].node, true, i});
      }
    }
    std::stable_sort(stops.begin(), stops.end(), [](const Stop& a, const Stop& b) { return a.node < b.node; });
    stops_.push_back(std::move(stops));
    first_gather_.push_back(gathers);
    gathers += list.size();
    gathers_.push_back(std::move(list));
  }
  for (size_t g = 0; g < gathers; ++g) {
    may_gather_.push_back(device.create_event());
    gather_started_.push_back(device.create_event());
    gathered_.push_back(device.create_event());
    if (before_use_) gather_needed_.push_back(device.create_event());
  }
  for (size_t b = 0; b < reductions_.size() * sub_steps_; ++b) {
    ready_.push_back(device.create_event());
    started_.push_back(device.create_event());
    finished_.push_back(device.create_event());
  }
  all_done_ = device.create_event();
  phase_start_ = device.create_event();
  step_start_ = device.create_event();
  forward_done_ = device.create_event();
  nodes_done_ = device.create_event();
  step_done_ = device.create_event();
  begin_phase();
}

GradientReducer::~GradientReducer() {
  device_.synchronize(comm_stream_);
  // The executor outlives this reducer: its norm must no longer call back into it.
  if (by_bucket_) executor_.set_optimizer_shard(shard_.ranges, nullptr);
  executor_.set_gradients_collected_by_caller(false);
  registrations_.release();
  if (wire_buffer_ != nullptr) communicator_.release_buffer(device_, wire_buffer_);
  if (rows_wire_buffer_ != nullptr) communicator_.release_buffer(device_, rows_wire_buffer_);
  device_.destroy_stream(comm_stream_);
}

void GradientReducer::register_buffers(BufferRegistration wanted) {
  registrations_ = RangeRegistrations(wanted);
  std::vector<std::pair<void*, size_t>> ranges;
  if (wire_buffer_ != nullptr) {
    ranges.emplace_back(wire_buffer_, wire_buffer_bytes_);
    if (rows_wire_buffer_ != nullptr) ranges.emplace_back(rows_wire_buffer_, rows_wire_buffer_bytes_);
  } else {
    // What the reductions read: the gradient region, or with gradient blocks the span of the shared region the blocks
    // lie in (the reduce-scatters' inputs; their outputs, the gradient shard, are the executor's own allocation).
    const MemoryPlan& plan = executor_.plan();
    uint64_t begin = plan.gradient_region_offset, end = plan.gradient_region_offset + plan.gradient_bytes;
    if (plan.gradients_in_blocks) {  // and zero3's gathers' outputs, the parameter blocks
      begin = plan.total_bytes, end = 0;
      for (const GradientBlock& block : plan.gradient_blocks) {
        begin = std::min(begin, block.offset);
        end = std::max(end, block.offset + block.bytes);
      }
      for (const ParameterBlock& block : plan.parameter_blocks) {
        begin = std::min(begin, block.offset);
        end = std::max(end, block.offset + block.bytes);
      }
    }
    const uint64_t first = std::min(begin, end) / kRegistrationAlignment * kRegistrationAlignment;
    ranges.emplace_back(static_cast<unsigned char*>(executor_.arena_data()) + first, end > first ? end - first : 0);
  }
  registrations_.add(communicator_, ranges);
  if (during_backward_ != nullptr) registrations_.add(*during_backward_, ranges);
}

TrainingReport::GradRegistration GradientReducer::registration() const {
  TrainingReport::GradRegistration r{registrations_.granted(), registrations_.why_less()};
  if (!registrations_.supported()) r.why_less += ": the gradients were reduced as without it";
  return r;
}

int64_t GradientReducer::exchanged_rows(size_t table) const {
  const EmbeddingRowsExchange& x = exchanges_.at(table);
  return std::min<int64_t>(x.vocab, static_cast<int64_t>(communicator_.size()) * x.ids);
}

const char* GradientReducer::reduction_kind(size_t reduction) const {
  switch (reductions_.at(reduction % reductions_.size()).kind) {
    case Reduction::Kind::kRowFlags: return "row flags";
    case Reduction::Kind::kRows: return "rows";
    case Reduction::Kind::kBucket: break;
  }
  return "bucket";
}

TrainingReport::EmbeddingGrad GradientReducer::embedding_grad() const {
  TrainingReport::EmbeddingGrad e;
  e.tables = tied_tables_;
  e.table_rows = tied_table_rows_;
  e.sparse = !exchanges_.empty();
  for (size_t x = 0; x < exchanges_.size(); ++x) e.rows += exchanged_rows(x);
  e.dense_because = sparse_rows_off_because_;
  return e;
}

uint64_t GradientReducer::wire_bytes(size_t reduction) const {
  const Reduction& r = reductions_.at(reduction % reductions_.size());
  const uint64_t element = wire_dtype_ == DType::kBFloat16 ? 2 : 4;
  switch (r.kind) {
    case Reduction::Kind::kRowFlags: return static_cast<uint64_t>(exchanges_[r.index].vocab) * sizeof(int32_t);
    case Reduction::Kind::kRows:
      return static_cast<uint64_t>(exchanged_rows(r.index) * exchanges_[r.index].dim) * element;
    case Reduction::Kind::kBucket: break;
  }
  return buckets_[r.index].bytes / 4 * element;
}

// Averages `count` fp32 values in place; on a bf16 wire through `wire` (count bf16s), rounded there first and
// widened back after. `alone` (the comm phase): the wire buffer is reduced as it is, with no conversion.
void GradientReducer::all_reduce_floats(Communicator& communicator, void* data, size_t count, void* wire,
                                        bool alone) {
  if (wire_dtype_ == DType::kFloat32) {
    communicator.all_reduce(data, data, count, DType::kFloat32, ReduceOp::kAvg, comm_stream_);
    return;
  }
  if (!alone) device_.convert(data, DType::kFloat32, wire, DType::kBFloat16, count, comm_stream_);
  communicator.all_reduce(wire, wire, count, DType::kBFloat16, ReduceOp::kAvg, comm_stream_);
  if (!alone) device_.convert(wire, DType::kBFloat16, data, DType::kFloat32, count, comm_stream_);
}

// Averages `count` fp32 values across the ranks into this rank's chunk of them (count / ranks values at rank x
// that): into `chunk_out`, which is that chunk of `data` itself (in place: the rest keeps this rank's own values) or,
// with gradient blocks, its place in the gradient shard. On a bf16 wire the whole range is rounded into `wire`,
// reduce-scattered there, and the chunk alone widened into `chunk_out`. `alone`: the wire buffer as it is.
void GradientReducer::reduce_scatter_floats(Communicator& communicator, void* data, size_t count, float* chunk_out,
                                            void* wire, bool alone) {
  const size_t chunk = count / static_cast<size_t>(communicator.size());
  const size_t own = chunk * static_cast<size_t>(communicator.rank());
  if (wire_dtype_ == DType::kFloat32) {
    communicator.reduce_scatter(data, chunk_out, chunk, DType::kFloat32, ReduceOp::kAvg, comm_stream_);
    return;
  }
  auto* wire_chunk = static_cast<unsigned char*>(wire) + own * 2;
  if (!alone) device_.convert(data, DType::kFloat32, wire, DType::kBFloat16, count, comm_stream_);
  communicator.reduce_scatter(wire, wire_chunk, chunk, DType::kBFloat16, ReduceOp::kAvg, comm_stream_);
  if (!alone) device_.convert(wire_chunk, DType::kBFloat16, chunk_out, DType::kFloat32, chunk, comm_stream_);
}

Communicator& GradientReducer::communicator_for(const Reduction& reduction) {
  return during_backward_ != nullptr && reduction.during_backward ? *during_backward_ : communicator_;
}

void GradientReducer::all_reduce(const Reduction& r, bool alone) {
  auto* arena = static_cast<unsigned char*>(executor_.arena_data());
  const MemoryPlan& plan = executor_.plan();
  if (r.kind == Reduction::Kind::kRowFlags) {
    // The union of the ranks' rows: every rank then lists, packs and adds the same rows in the same order.
    const EmbeddingRowsExchange& x = exchanges_[r.index];
    void* flags = arena + plan.offsets.at(static_cast<size_t>(x.flags));
    communicator_for(r).all_reduce(flags, flags, static_cast<size_t>(x.vocab), DType::kInt32, ReduceOp::kMax,
                                   comm_stream_);
    return;
  }
  if (r.kind == Reduction::Kind::kRows) {
    const EmbeddingRowsExchange& x = exchanges_[r.index];
    all_reduce_floats(communicator_for(r), arena + plan.offsets.at(static_cast<size_t>(x.packed)),
                      static_cast<size_t>(exchanged_rows(r.index) * x.dim), rows_wire_buffer_, alone);
    return;
  }
  const GradientBucket& b = buckets_[r.index];
  const uint64_t element = (b.offset - plan.gradient_region_offset) / sizeof(float);
  void* wire = wire_buffer_ == nullptr ? nullptr : static_cast<unsigned char*>(wire_buffer_) + element * 2;
  const size_t count = b.bytes / sizeof(float);
  if (by_bucket_) {
    // This rank's chunk: in place in the gradient region, or out of its block into the gradient shard.
    const size_t chunk = count / static_cast<size_t>(communicator_.size());
    const size_t own = chunk * static_cast<size_t>(communicator_.rank());
    float* chunk_out = plan.gradients_in_blocks
                           ? executor_.gradients_of(static_cast<int64_t>(element + own), static_cast<int64_t>(chunk))
                           : reinterpret_cast<float*>(arena + b.data_offset) + own;
    reduce_scatter_floats(communicator_for(r), arena + b.data_offset, count, chunk_out, wire, alone);
  } else {
    all_reduce_floats(communicator_for(r), arena + b.data_offset, count, wire, alone);
  }
}

void GradientReducer::issue(size_t reduction, size_t event) {
  device_.push_range("all-reduce");
  ready_[event]->record(executor_.compute_stream());
  ready_[event]->block(comm_stream_);
  started_[event]->record(comm_stream_);
  all_reduce(reductions_[reduction], false);
  finished_[event]->record(comm_stream_);
  device_.pop_range();
}

// Sharded, the executor's optimizer takes this reducer's shard (and norm) again, and with gradient blocks leaves the
// gradient shard to this reducer's reduce-scatters again: a --gpus-sweep point's reducer over fewer ranks may have
// set its own since, and given the collection back when it was destroyed.
void GradientReducer::take_the_executor() {
  if (executor_.plan().gradients_in_blocks) executor_.set_gradients_collected_by_caller(true);
  if (executor_.plan().parameters_in_blocks) executor_.set_parameters_gathered_by_caller(true);
  if (sharded_) {
    Executor::NormAcrossRanks norm;
    if (by_bucket_) {
      norm = [this](double* squared_norm, StreamHandle stream) { reduce_norm_across_ranks(squared_norm, stream); };
    }
    executor_.set_optimizer_shard(shard_.ranges, norm);
  }
}

void GradientReducer::begin_phase() {
  take_the_executor();
  phase_start_->record(executor_.compute_stream());
}

// Runs nodes [from, to); a node that uses a reduced exchange (compact: the flags; scatter: the rows) first makes
// the compute stream wait for that reduction; under zero3 a node that needs a unit first waits for its gather, and
// the next unit's gather is issued then (one unit ahead).
void GradientReducer::run_training_nodes(size_t from, size_t to, size_t sub_step) {
  for (const Stop& stop : stops_[sub_step]) {
    if (stop.node < from || stop.node >= to) continue;
    executor_.run_nodes(from, stop.node);
    from = stop.node;
    if (!stop.gather) {
      finished_[sub_step * reductions_.size() + stop.index]->block(executor_.compute_stream());
      continue;
    }
    wait_for_gather(sub_step, stop.index);
    if (stop.index + 1 < gathers_[sub_step].size()) gather_parameters(sub_step, stop.index + 1);
  }
  executor_.run_nodes(from, to);
}

size_t GradientReducer::parts_gathers(size_t sub_step) const {
  size_t count = 0;
  for (const ParameterGather& g : gathers_[sub_step]) count += g.when == ParameterGather::When::kBeforeParts ? 1 : 0;
  return count;
}

void GradientReducer::gather_for_parts(size_t sub_step) {
  if (!before_use_) return;
  const size_t count = parts_gathers(sub_step);
  for (size_t i = 0; i < count; ++i) gather_parameters(sub_step, i);
  for (size_t i = 0; i < count; ++i) wait_for_gather(sub_step, i);
}

void GradientReducer::gather_whole_parameters(const std::string& what) {
  // With parameter blocks there is no region to make whole: whoever reads the weights gathers the shards
  // (read_parameters with the group).
  if (!before_use_ || executor_.plan().parameters_in_blocks) return;
  whole_requested_->record(executor_.compute_stream());
  whole_requested_->block(comm_stream_);
  for (size_t b = 0; b < buckets_.size(); ++b) all_gather(b, ParameterGather::When::kAfterUpdate);
  communicator_.wait(comm_stream_, what);
}

void GradientReducer::run_nodes_and_reduce(size_t sub_step) {
  const size_t nodes = executor_.graph().nodes().size();
  const size_t first_event = sub_step * reductions_.size();
  if (sub_step == 0) step_start_->record(executor_.compute_stream());
  // zero3: the training pass's first unit is gathered from here (the parts' units were, before the parts).
  if (before_use_) {
    const size_t first_of_pass = parts_gathers(sub_step);
    if (first_of_pass < gathers_[sub_step].size()) gather_parameters(sub_step, first_of_pass);
  }
  device_.push_range("forward");
  size_t next = executor_.forward_node_count();
  run_training_nodes(executor_.graph().training_begin(), next, sub_step);
  forward_done_->record(executor_.compute_stream());
  device_.pop_range();
  device_.push_range("backward");
  if (overlap_) {
    for (size_t r = 0; r < reductions_.size(); ++r) {
      const size_t end = static_cast<size_t>(std::max(reductions_[r].after_node, -1) + 1);
      if (end > next) {
        run_training_nodes(next, end, sub_step);
        next = end;
      }
      issue(r, first_event + r);
    }
  }
  run_training_nodes(next, nodes, sub_step);
  nodes_done_->record(executor_.compute_stream());
  device_.pop_range();
  if (!overlap_) {
    for (size_t r = 0; r < reductions_.size(); ++r) issue(r, first_event + r);
  }
  all_done_->record(comm_stream_);
}

void GradientReducer::update(const OptimizerSettings& settings, int64_t step, size_t sub_step) {
  device_.push_range("optimizer");
  if (!overlap_ || !executor_.steps_in_ranges(settings)) {
    all_done_->block(executor_.compute_stream());
    executor_.optimizer_step(settings, step);
    if (!before_use_) {
      for (size_t g = 0; g < gathers_[sub_step].size(); ++g) gather_parameters(sub_step, g);
    }
  } else {
    const uint64_t region = executor_.plan().gradient_region_offset;
    // A tied table's buckets were reduced before its rows were added (on the compute stream, before this).
    for (size_t r = 0; r < reductions_.size(); ++r) {
      if (reductions_[r].kind != Reduction::Kind::kBucket) continue;
      const GradientBucket& bucket = buckets_[reductions_[r].index];
      // The bucket's part inside this rank's shard (all of it under ddp; by bucket, its chunk).
      int64_t first = static_cast<int64_t>((bucket.offset - region) / sizeof(float));
      int64_t end = first + static_cast<int64_t>(bucket.bytes / sizeof(float));
      if (by_bucket_) {
        const int64_t chunk = (end - first) / communicator_.size();
        first += chunk * communicator_.rank();
        end = first + chunk;
      } else {
        const ShardRange& own = shard_.ranges.front();
        first = std::max(first, own.first);
        end = std::min(end, own.first + own.count);
      }
      if (end > first) {
        finished_[sub_step * reductions_.size() + r]->block(executor_.compute_stream());
        executor_.optimizer_step_range(settings, step, first, end - first);
      }
      // Beside the next bucket's update; on every rank, each bucket's gather being a collective (zero2's gather g is
      // bucket g's).
      if (by_bucket_ && !before_use_) gather_parameters(sub_step, reductions_[r].index);
    }
    if (sharded_ && !by_bucket_) gather_parameters(sub_step);
  }
  // The parameters are whole again once the sub-step's last gather is done (one communication stream: every
  // gather before it is done too). zero3 gathers nothing after the update: the next uses will.
  if (sharded_) {
    update_done_->record(executor_.compute_stream());
    if (!before_use_) gathered_[last_gather_]->block(executor_.compute_stream());
  }
  step_done_->record(executor_.compute_stream());
  // The communication stream's last work joins the compute stream: a step captured into a graph must end on
  // the stream it began on (src/train/step_graph.h). Eagerly this waits for what the update already waited for.
  all_done_->block(executor_.compute_stream());
  device_.pop_range();
}

// In place: zero1 rank r's shard lies at r x stride of the flat parameters, zero2/zero3 at r x chunk of the
// bucket, as NCCL's in-place all-gather wants it. zero1/zero2: the compute stream goes on (the next bucket's update)
// and waits for the last gather at the end of update(), before anything after the step reads a parameter. zero3: it
// waits at the node that needs the unit (wait_for_gather).
void GradientReducer::gather_parameters(size_t sub_step, size_t index) {
  device_.push_range("all-gather");
  const size_t g = first_gather_[sub_step] + index;
  may_gather_[g]->record(executor_.compute_stream());
  may_gather_[g]->block(comm_stream_);
  gather_started_[g]->record(comm_stream_);
  all_gather(gathers_[sub_step][index].bucket, gathers_[sub_step][index].when);
  gathered_[g]->record(comm_stream_);
  last_gather_ = g;
  device_.pop_range();
}

void GradientReducer::wait_for_gather(size_t sub_step, size_t index) {
  const size_t g = first_gather_[sub_step] + index;
  gather_needed_[g]->record(executor_.compute_stream());
  gathered_[g]->block(executor_.compute_stream());
}

void GradientReducer::all_gather(size_t bucket, ParameterGather::When when) {
  auto* parameters = static_cast<float*>(executor_.arena_data());
  if (by_bucket_) {
    const GradientBucket& b = buckets_[bucket];
    const auto first = static_cast<int64_t>((b.offset - executor_.plan().gradient_region_offset) / sizeof(float));
    float* start = parameters + first;
    const size_t chunk = b.bytes / sizeof(float) / static_cast<size_t>(communicator_.size());
    if (executor_.plan().parameters_in_blocks) {  // out of place: from the rank's shard into the unit's block
      const uint64_t to =
          when == ParameterGather::When::kBeforeBackward ? b.backward_parameters_offset : b.forward_parameters_offset;
      const float* own = executor_.parameters_of(first + static_cast<int64_t>(chunk) * communicator_.rank(),
                                                 static_cast<int64_t>(chunk));
      communicator_.all_gather(own, static_cast<unsigned char*>(executor_.arena_data()) + to, chunk,
                               DType::kFloat32, comm_stream_);
      return;
    }
    communicator_.all_gather(start + chunk * static_cast<size_t>(communicator_.rank()), start, chunk, DType::kFloat32,
                             comm_stream_);
  } else {
    communicator_.all_gather(parameters + shard_.stride * communicator_.rank(), parameters,
                             static_cast<size_t>(shard_.stride), DType::kFloat32, comm_stream_);
  }
}

uint64_t GradientReducer::all_gather_bytes_per_step() const {
  const uint64_t whole =
      static_cast<uint64_t>(shard_.stride) * sizeof(float) * static_cast<uint64_t>(communicator_.size());
  uint64_t bytes = 0;
  for (const std::vector<ParameterGather>& sub_step : gathers_) {
    for (const ParameterGather& g : sub_step) bytes += by_bucket_ ? buckets_[g.bucket].bytes : whole;
  }
  return bytes;
}

double GradientReducer::all_gather_ms() const {
  double total = 0;
  for (size_t g = 0; g < gathered_.size(); ++g) total += gathered_[g]->milliseconds_since(*gather_started_[g]);
  return total;
}

// zero2: this rank's sum of its chunks' squares, summed over the ranks, in place (fp64, like the sum itself).
void GradientReducer::reduce_norm_across_ranks(double* squared_norm, StreamHandle stream) {
  norm_ready_->record(stream);
  norm_ready_->block(comm_stream_);
  communicator_.all_reduce(squared_norm, squared_norm, 1, DType::kFloat64, ReduceOp::kSum, comm_stream_);
  norm_reduced_->record(comm_stream_);
  norm_reduced_->block(stream);
}

void GradientReducer::reduce_alone() {
  // zero3's gathers write parameter blocks, bytes of the shared region: after whatever the compute stream still runs;
  // and they read this reducer's shard of the parameters, which another reducer of the replica (a --gpus-sweep
  // point's) may have replaced since (the weights restart with the dp phase anyway).
  if (executor_.plan().parameters_in_blocks) {
    take_the_executor();
    whole_requested_->record(executor_.compute_stream());
    whole_requested_->block(comm_stream_);
  }
  for (size_t k = 0; k < sub_steps_; ++k) {
    for (size_t r = 0; r < reductions_.size(); ++r) {
      const size_t e = k * reductions_.size() + r;
      started_[e]->record(comm_stream_);
      all_reduce(reductions_[r], true);
      finished_[e]->record(comm_stream_);
    }
    for (size_t g = 0; g < gathers_[k].size(); ++g) {
      const size_t event = first_gather_[k] + g;
      gather_started_[event]->record(comm_stream_);
      all_gather(gathers_[k][g].bucket, gathers_[k][g].when);
      gathered_[event]->record(comm_stream_);
    }
  }
}

std::vector<double> GradientReducer::wait_and_time(const std::string& what) {
  communicator_.wait(comm_stream_, what);
  if (during_backward_ != nullptr) during_backward_->wait(comm_stream_, what);
  // A replayed step's all-reduces run inside the graph launched on the compute stream, not on comm_stream_:
  // wait there too, with the same timeout, so that a peer that is gone still ends the job.
  communicator_.wait(executor_.compute_stream(), what);
  std::vector<double> ms;
  for (size_t b = 0; b < finished_.size(); ++b) {
    finished_[b]->synchronize();
    ms.push_back(finished_[b]->milliseconds_since(*started_[b]));
  }
  return ms;
}

GradientReducer::Timeline GradientReducer::timeline() const {
  // The last event of the step is on the compute stream (after the update), not on the communication stream
  // that wait_and_time waited for: over NVLink the last all-reduce can end while the update still runs.
  step_done_->synchronize();
  Timeline t;
  t.step_start_ms = step_start_->milliseconds_since(*phase_start_);
  t.forward_done_ms = forward_done_->milliseconds_since(*step_start_);
  t.nodes_done_ms = nodes_done_->milliseconds_since(*step_start_);
  t.step_done_ms = step_done_->milliseconds_since(*step_start_);
  if (update_done_ != nullptr) t.update_done_ms = update_done_->milliseconds_since(*step_start_);
  for (size_t g = 0; g < gathered_.size(); ++g) {
    t.gather_start_ms.push_back(gather_started_[g]->milliseconds_since(*step_start_));
    t.gather_end_ms.push_back(gathered_[g]->milliseconds_since(*step_start_));
  }
  for (const auto& needed : gather_needed_) t.gather_needed_ms.push_back(needed->milliseconds_since(*step_start_));
  for (size_t b = 0; b < ready_.size(); ++b) {
    t.ready_ms.push_back(ready_[b]->milliseconds_since(*step_start_));
    t.start_ms.push_back(started_[b]->milliseconds_since(*step_start_));
    t.end_ms.push_back(finished_[b]->milliseconds_since(*step_start_));
  }
  return t;
}

double GradientReducer::span_ms() const {
  if (reductions_.empty()) return 0.0;
  const DeviceEvent& last = gathered_.empty() ? *finished_.back() : *gathered_.back();  // issued last (the comm phase)
  return last.milliseconds_since(*started_.front());
}

}  // namespace sb
