// CLI11 definition of every subcommand and flag (src/cli/command_line.h).
#include "src/cli/command_line.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "scalebench/error.h"
#include "scalebench/versions.h"
#include "src/cli/byte_size.h"
#include "src/cli/command_line_help.h"
#include "src/cli/number_options.h"

namespace sb {

const std::vector<std::string>& optimizer_choices() {
  static const std::vector<std::string> choices{"adamw", "adam", "adamax", "sgd_momentum", "nag", "reference"};
  return choices;
}

const std::vector<std::string>& strategy_choices() {
  static const std::vector<std::string> choices{"ddp", "zero1", "zero2", "zero3"};
  return choices;
}

namespace {

struct RawBandwidthFlags {
  std::vector<std::string> ops{"all_reduce"};
  std::string min_bytes = "1K";
  std::string max_bytes;  // empty: the device's default
  std::string dtype = "fp32";
  std::string redop = "sum";
  bool in_place = false;
  bool out_of_place = false;
  std::string registration = "none";  // -R: none, local, symmetric, or nccl-tests' 0, 1, 2
};

void add_common_options(CLI::App& app, CommonOptions& common, std::string& backend) {
  app.add_option("--device", common.device, "Where to run: auto (GPU if visible), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->envname("SB_DEVICE");
  app.add_option("--backend", backend, "Collective backend: auto, nccl, mpi, local")
      ->check(CLI::IsMember({"auto", "nccl", "mpi", "local"}));
  app.add_flag("--allow-gpu-sharing", common.allow_gpu_sharing,
               "Allow more ranks per node than visible GPUs (ranks share GPUs round-robin)");
  app.add_option("--timeout", common.timeout_seconds,
                 "Seconds a collective may wait for its peers before every rank stops with exit 3, naming the "
                 "phase, step and suspect rank (default 300)")
      ->check(finite_number(0.1, kMaxTimeoutSeconds));
  app.add_option("--emulate", common.emulate,
                 "On one machine, force NCCL onto a weaker path: none, host (P2P off: through host memory) or "
                 "socket (P2P, SHM and IB off: TCP sockets); labelled in every output")
      ->check(CLI::IsMember({"none", "host", "socket"}));
  app.add_flag("--force", common.force, "Overwrite output files (--json, --csv, --trace, --out, --html) that exist; suite: replace the earlier results in its --out folder instead of appending");
  app.add_option("--json", common.json_path, "Write results as JSON to FILE ('-' for stdout)");
  app.add_option("--csv", common.csv_path, "Write results as CSV to FILE ('-' for stdout)");
}

void add_bandwidth_command(CLI::App& app, RawBandwidthFlags& raw, BandwidthOptions& options) {
  CLI::App* bandwidth = app.add_subcommand(
      "bandwidth", "Collective bandwidth sweep with nccl-tests semantics (algbw, busbw, p50/p99, #wrong)");
  bandwidth->add_option("--op", raw.ops,
                        "Collectives, comma-separated: all_reduce, reduce_scatter, all_gather, broadcast, "
                        "alltoall, or all")
      ->delimiter(',');
  bandwidth->add_option("-b,--min-bytes", raw.min_bytes, "Smallest buffer (1K, 8M, ...)");
  bandwidth->add_option("-e,--max-bytes", raw.max_bytes,
                        "Largest buffer (default 1G on GPUs, 16M on the CPU device)");
  bandwidth->add_option("-f,--factor", options.factor, "Multiplier between sizes")->check(finite_number(1.0001, 1e6));
  bandwidth->add_option("-d,--dtype", raw.dtype,
                        "Element type: fp32, bf16, fp16, fp64, int32, or all (each in turn, nccl-tests' -d all)");
  bandwidth->add_option("-o,--redop", raw.redop,
                        "Reduction of all_reduce and reduce_scatter: sum, prod, max, min, avg, or all (each in "
                        "turn, nccl-tests' -o all)");
  bandwidth->add_option("-r,--root", options.root, "Root rank of broadcast")->check(whole_number(0, kMaxRank));
  bandwidth->add_option("-w,--warmup", options.warmup_iters, "Untimed iterations per size")
      ->check(whole_number(0, kMaxIterations));
  bandwidth->add_option("-n,--iters", options.iters, "Timed iterations per size (every one kept)")
      ->check(whole_number(1, kMaxIterations));
  bandwidth->add_flag("--in-place", raw.in_place, "Run in-place only (default: both placements)");
  bandwidth->add_flag("--out-of-place", raw.out_of_place, "Run out-of-place only (default: both placements)");
  bandwidth->add_flag("-G,--graph", options.graph, "Capture the timed iterations in a CUDA graph and replay it");
  bandwidth->add_option("-R,--register", raw.registration,
                        "Register the buffers with NCCL before the sweep: local (the default of a bare -R: zero-copy "
                        "user-buffer registration, nccl-tests -R 1) or symmetric (a symmetric window for NCCL's "
                        "symmetric kernels, NCCL >= 2.27, nccl-tests -R 2; local where NCCL has none on the path); "
                        "0, 1, 2 as nccl-tests")
      ->expected(0, 1)
      ->default_str("local")
      ->check(CLI::IsMember({"none", "local", "symmetric", "0", "1", "2"}));
  bandwidth->add_flag("--aggregate-timing", options.aggregate_timing,
                      "Time all iterations with one event pair (nccl-tests' method; one sample, no p50/p99)");
  bandwidth->add_flag("-c,--check", options.check,
                      "Verify results with exact data; count wrong elements per size (exit 4 on any); nccl-tests' "
                      "-c 1 and -c 0 work too");
}

// "fp32, bf16, fp16, fp64, int32, all": what -d and -o accept, for their error messages.
template <typename T, typename Name>
std::string accepted_with_all(const std::vector<T>& values, Name name) {
  std::string text;
  for (T value : values) text += std::string(name(value)) + ", ";
  return text + "all";
}

DType parse_bandwidth_dtype(const std::string& text) {
  const std::vector<DType> types = collective_dtypes();
  try {
    const DType type = parse_dtype(text);  // also nccl-tests' and PyTorch's spellings (float, half, ...)
    if (std::find(types.begin(), types.end(), type) != types.end()) return type;
  } catch (const UsageError&) {
  }
  throw UsageError("--dtype: unknown dtype '" + text + "' (accepted: " + accepted_with_all(types, dtype_name) + ")");
}

ReduceOp parse_bandwidth_redop(const std::string& text) {
  const std::vector<ReduceOp> ops = all_reduce_ops();
  for (ReduceOp op : ops) {
    if (text == reduce_op_name(op)) return op;
  }
  throw UsageError("--redop: unknown reduce op '" + text + "' (accepted: " + accepted_with_all(ops, reduce_op_name) +
                   ")");
}

void resolve_bandwidth(const RawBandwidthFlags& raw, BandwidthOptions& options) {
  options.ops.clear();
  for (const std::string& name : raw.ops) {
    if (name == "all") {
      for (CollectiveOp op : all_collectives()) options.ops.push_back(op);
    } else {
      options.ops.push_back(parse_collective(name));
    }
  }
  options.min_bytes = parse_byte_size(raw.min_bytes);
  options.max_bytes = raw.max_bytes.empty() ? 0 : parse_byte_size(raw.max_bytes);
  if (options.min_bytes == 0) throw UsageError("--min-bytes must be positive");
  if (options.max_bytes != 0 && options.max_bytes < options.min_bytes) {
    throw UsageError("--max-bytes (" + raw.max_bytes + ") is smaller than --min-bytes (" + raw.min_bytes + ")");
  }
  options.dtypes = raw.dtype == "all" ? collective_dtypes() : std::vector<DType>{parse_bandwidth_dtype(raw.dtype)};
  options.reduces = raw.redop == "all" ? all_reduce_ops() : std::vector<ReduceOp>{parse_bandwidth_redop(raw.redop)};
  // Neither flag or both flags: both placements, as nccl-tests reports them.
  options.run_in_place = raw.in_place || !raw.out_of_place;
  options.run_out_of_place = raw.out_of_place || !raw.in_place;
  const std::string& r = raw.registration;
  options.registration = parse_buffer_registration(r == "0" ? "none" : r == "1" ? "local" : r == "2" ? "symmetric" : r);
}

// `compare` and `report` only read result files, so they take none of the device flags' meaning.
void add_compare_commands(CLI::App& app, CompareOptions& options) {
  CLI::App* compare = app.add_subcommand(
      "compare", "Tables of several result files side by side: throughput, ratios, scaling, peak busbw");
  compare->add_option("files", options.files, "Result files (scalebench run/bandwidth --json)")->required();
  compare->add_option("--baseline", options.baseline, "Column the ratios divide by (default: the first)");
  compare->add_option("--label", options.labels, "FILE=LABEL: the column name of FILE (repeatable)")
      ->allow_extra_args(false);
  CLI::Option* markdown = compare->add_flag("--markdown", options.markdown, "GitHub Markdown tables");
  compare->add_flag("--csv", options.csv, "CSV, one row per workload and label")->excludes(markdown);
  compare->add_option("--out", options.out_path, "Write to PATH instead of stdout");
  compare->add_option("--html", options.html_path, "Also write the tables and charts as one HTML page to PATH");
  CLI::App* report = app.add_subcommand("report", "One run result file as tables");
  report->add_option("file", options.files, "A scalebench run --json file")->required()->expected(1);
  report->add_flag("--markdown", options.markdown, "GitHub Markdown tables");
  report->add_option("--out", options.out_path, "Write to PATH instead of stdout");
  report->add_option("--html", options.html_path, "Also write the tables and charts as one HTML page to PATH");
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string version_line() { return "scalebench " + scalebench_version() + " (git " + scalebench_git_commit() + ")"; }

// Options whose zero or negative default means "the workload's" or "none": a "[0]" in help would mislead.
void clear_sentinel_defaults(CLI::App& app) {
  CLI::App* run = app.get_subcommand("run");
  for (const char* name : {"--batch", "--lr", "--clip-norm"}) run->get_option(name)->default_str("");
}

// The effective configuration, after defaults and aliases are resolved, so `-n 20` and no flag at all
// agree while any real difference does not.
std::string canonical_form(const CommandLine& cl) {
  const CommonOptions& c = cl.common;
  std::string text = "command=" + cl.command + ";device=" + c.device + ";backend=" + backend_name(c.backend) +
                     ";sharing=" + std::to_string(c.allow_gpu_sharing) + ";timeout=" +
                     std::to_string(c.timeout_seconds) + ";emulate=" + c.emulate + ";force=" + std::to_string(c.force) +
                     ";json=" + c.json_path + ";csv=" + c.csv_path;
  if (cl.command == "run") {
    const RunOptions& r = cl.run;
    text += ";workload=" + r.workload + ";batch=" + std::to_string(r.batch) + ";scale=" + r.scale +
            ";warmup=" + std::to_string(r.warmup_steps) + ";steps=" + std::to_string(r.steps) +
            ";seed=" + std::to_string(r.seed) + ";lr=" + std::to_string(r.learning_rate) + ";precision=" + r.precision +
            ";recompute=" + std::to_string(r.recompute) + ";optimizer=" + r.optimizer +
            ";clip=" + std::to_string(r.clip_norm) + ";min_time=" + std::to_string(r.min_time_seconds) +
            ";bucket=" + (r.bucket_auto ? std::string("auto") : std::to_string(r.bucket_mb)) + ";no_overlap=" + std::to_string(r.no_overlap) +
            ";grad_dtype=" + r.grad_dtype + ";embedding_grad=" + r.embedding_grad + ";comm_priority=" + r.comm_priority +
            ";overlap_ctas=" + std::to_string(r.overlap_ctas) + ";grad_registration=" + r.grad_registration +
            ";strategy=" + r.strategy +
            ";cuda_graph=" + r.cuda_graph +
            ";trace=" + r.trace_path + ";check=" + std::to_string(r.check) +
            ";check_steps=" + std::to_string(r.check_steps) + ";gpus_sweep=" + r.gpus_sweep +
            ";concurrent_groups=" + std::to_string(r.concurrent_groups) + ";phases=";
    for (const std::string& phase : r.phases) text += phase + ",";
  }
  if (cl.command == "maxbatch" || cl.command == "suite") text += memory_canonical_form(cl.command, cl.memory);
  if (cl.command == "bandwidth") {
    const BandwidthOptions& b = cl.bandwidth;
    text += ";ops=";
    for (CollectiveOp op : b.ops) text += std::string(collective_name(op)) + ",";
    text += ";dtypes=";
    for (DType type : b.dtypes) text += std::string(dtype_name(type)) + ",";
    text += ";redops=";
    for (ReduceOp op : b.reduces) text += std::string(reduce_op_name(op)) + ",";
    text += ";min=" + std::to_string(b.min_bytes) + ";max=" + std::to_string(b.max_bytes) +
            ";factor=" + std::to_string(b.factor) + ";root=" + std::to_string(b.root) +
            ";warmup=" + std::to_string(b.warmup_iters) + ";iters=" + std::to_string(b.iters) +
            ";oop=" + std::to_string(b.run_out_of_place) + ";ip=" + std::to_string(b.run_in_place) +
            ";graph=" + std::to_string(b.graph) + ";check=" + std::to_string(b.check) +
            ";register=" + buffer_registration_name(b.registration) + ";aggregate=" + std::to_string(b.aggregate_timing);
  }
  return text;
}

}  // namespace

CommandLine parse_command_line(int argc, const char* const* argv) {
  CommandLine result;
  for (int i = 0; i < argc; ++i) result.argv.emplace_back(argv[i]);
  // `run` is the default subcommand: `scalebench --workload transformer_big` means `scalebench run ...`.
  std::vector<const char*> arguments(argv, argv + argc);
  bool names_a_command = false, asks_for_help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    names_a_command |= arg == "run" || arg == "bandwidth" || arg == "topo" || arg == "list" || arg == "compare" ||
                       arg == "report" || arg == "maxbatch" || arg == "suite" || arg == "plan";
    asks_for_help |= arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "--version";
  }
  if (argc > 1 && !names_a_command && !asks_for_help) arguments.insert(arguments.begin() + 1, "run");
  // nccl-tests' `-c 1` / `-c 0`: bandwidth's check flag with its value as the next word, as CLI11 reads
  // `--check=1`.
  bool in_bandwidth = false;
  for (size_t i = 1; i < arguments.size(); ++i) {
    const std::string arg = arguments[i];
    in_bandwidth |= arg == "bandwidth";
    const bool value_next = i + 1 < arguments.size() && (std::string(arguments[i + 1]) == "0" ||
                                                         std::string(arguments[i + 1]) == "1");
    if (in_bandwidth && (arg == "-c" || arg == "--check") && value_next) {
      arguments[i] = std::string(arguments[i + 1]) == "1" ? "--check=1" : "--check=0";
      arguments.erase(arguments.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
  }
  argc = static_cast<int>(arguments.size());
  argv = arguments.data();

  CLI::App app{"scalebench: how well deep-learning training and its communication scale on your GPUs",
               "scalebench"};
  app.set_version_flag("--version", version_line());
  // Help shows every option's default ("[20]"); subcommands inherit this when they are added below.
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  app.fallthrough();  // common options may follow the subcommand
  std::string backend = "auto";
  add_common_options(app, result.common, backend);
  RawBandwidthFlags raw;
  add_bandwidth_command(app, raw, result.bandwidth);
  app.add_subcommand("topo", "GPUs, NVLink/PCIe links, P2P support and the NCCL transport in use");
  app.add_subcommand("list", "Reference workloads: task, unit, batch, parameters, FLOPs, gradient bytes");
  add_compare_commands(app, result.compare);
  add_memory_commands(app, result.memory);
  add_plan_command(app, result.plan);
  CLI::App* run = app.add_subcommand(
      "run", "Train a workload: alone on every rank (solo), its gradient all-reduces alone (comm), data-parallel (dp)");
  run->add_option("-w,--workload", result.run.workload, "Workload name (scalebench list)")->required();
  run->add_option("--batch", result.run.batch,
                  "Per-rank batch in the workload's batch unit: sentence pairs (transformer_big, conv_seq2seq), "
                  "sequences, images (scalebench list; default: the workload's reference batch)")
      ->check(whole_number(1, kMaxBatch));
  run->add_option("--scale", result.run.scale, "full, or tiny (same graph, small dimensions, for the CPU)")
      ->check(CLI::IsMember({"full", "tiny"}));
  run->add_option("--warmup", result.run.warmup_steps, "Untimed steps")->check(whole_number(0, kMaxIterations));
  run->add_option("--steps", result.run.steps, "Timed steps (every one kept)")->check(whole_number(1, kMaxIterations));
  run->add_option("--seed", result.run.seed, "Base seed of data, weights and dropout (rank is added)")
      ->check(unsigned_number(UINT64_MAX));
  run->add_option("--lr", result.run.learning_rate,
                  "Learning rate (default: 1e-4, or the reference's with --optimizer reference)")
      ->check(finite_number(0, kMaxLearningRate, true));
  run->add_option("--optimizer", result.run.optimizer,
                  "adamw (default), adam, adamax, sgd_momentum, nag, or reference: the workload's reference optimizer "
                  "with its settings and clipping (WORKLOADS.md)")
      ->check(CLI::IsMember(optimizer_choices()));
  run->add_option("--clip-norm", result.run.clip_norm,
                  "Clip gradients to this global L2 norm (0: no clipping; default: none, or the reference's)")
      ->check(finite_number(0, 1e9));
  run->add_option("--precision", result.run.precision,
                  "auto (bf16 on GPUs, fp32 on the CPU), bf16 (mixed precision; GPU only), fp16 (mixed precision "
                  "with dynamic loss scaling; GPU only), tf32 (fp32 data, GEMMs on TF32 tensor cores; GPU only) "
                  "or fp32")
      ->check(CLI::IsMember({"auto", "bf16", "fp16", "tf32", "fp32"}));
  run->add_option("--phases", result.run.phases, "Phases to run, comma-separated: solo, comm, dp (default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"solo", "comm", "dp"}));
  run->add_option("--min-time", result.run.min_time_seconds,
                  "Run each phase at least this many seconds (more timed steps than --steps if needed)")
      ->check(finite_number(0, kMaxTimeoutSeconds));
  run->add_option_function<std::string>(
         "--bucket-mb",
         [&result](const std::string& value) {
           result.run.bucket_auto = value == "auto";
           if (!result.run.bucket_auto) result.run.bucket_mb = std::stod(value);
         },
         "Gradient bucket size in MiB (default 25, as PyTorch DDP), or auto: the size with the shortest predicted "
         "tail after the backward pass, from an all-reduce sweep and a profiled step (reported)")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            if (value == "auto") return "";
            const std::string error = finite_number(0.001, 1e6)(value);
            return error.empty() ? error : error + " (or auto)";
          },
          ""));
  run->add_flag("--no-overlap", result.run.no_overlap,
                "All-reduce every bucket after the backward pass instead of as soon as it is ready");
  run->add_option("--grad-dtype", result.run.grad_dtype,
                  "Element type of the gradient all-reduce: fp32 (default) or bf16 (half the bytes)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  run->add_option("--embedding-grad", result.run.embedding_grad,
                  "A tied embedding table's gradient: sparse (its dense part reduced as soon as the output projection "
                  "writes it, its lookups' rows apart after the backward pass, at most ranks x ids of them), dense "
                  "(the whole table after its last node, as PyTorch DDP) or auto (default: sparse where ranks x ids "
                  "is at most half the table's rows)")
      ->check(CLI::IsMember({"auto", "sparse", "dense"}));
  run->add_option("--overlap-ctas", result.run.overlap_ctas,
                  "At most N thread blocks (NCCL's maxCTAs) for each all-reduce issued while the backward pass "
                  "still runs, through a second NCCL communicator, so that they take fewer SMs from it; those "
                  "after its last node keep NCCL's choice (default 0: off; nccl backend only)")
      ->check(CLI::Range(0, 64));
  run->add_option("--grad-registration", result.run.grad_registration,
                  "Register the buffers the gradient all-reduces read and write with NCCL before the first step: none "
                  "(default), local (ncclCommRegister: zero-copy) or symmetric (an NCCL >= 2.27 symmetric window, "
                  "whose kernels take few SMs over NVLink; local where NCCL has none on the path; nccl backend only)")
      ->check(CLI::IsMember({"none", "local", "symmetric"}));
  run->add_option("--strategy", result.run.strategy,
                  "How data parallelism keeps the training state: ddp (default: every rank all of it, as PyTorch "
                  "DDP), zero1 (gradients all-reduced as ddp; each rank keeps the optimizer's state for, and "
                  "updates, its shard of the parameters, then the shards are all-gathered: ZeRO stage 1), zero2 "
                  "(as zero1, with every gradient bucket reduce-scattered: each rank's shard is its chunk of every "
                  "bucket, and it keeps only that shard of the gradients between steps, each bucket whole only "
                  "until its reduce-scatter, where that needs less memory; ZeRO stage 2) or zero3 (as zero2, but "
                  "each bucket's parameters all-gathered before the forward pass reads them and again before the "
                  "backward pass, one bucket ahead, instead of after the update: ZeRO stage 3 / FSDP's schedule; each "
                  "rank keeps only its shard of the parameters too, each bucket's whole only in blocks around its "
                  "readers, where that needs less memory)")
      ->check(CLI::IsMember(strategy_choices()));
  run->add_option("--comm-priority", result.run.comm_priority,
                  "Priority of the all-reduces' stream: normal (default) or high (scheduled ahead of compute kernels)")
      ->check(CLI::IsMember({"high", "normal"}));
  run->add_option("--cuda-graph", result.run.cuda_graph,
                  "Issue each solo and dp step as one replay of a captured CUDA graph: auto (default: where it "
                  "can, saying why not elsewhere), on (a phase that cannot is an error) or off (every node "
                  "enqueued by the host, as a host-bound setup would)")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  run->add_option("--trace", result.run.trace_path,
                  "Write the dp phase as a Chrome/Perfetto trace (forward, backward, optimizer, every all-reduce; "
                  "device timestamps) to FILE");
  run->add_flag("--check", result.run.check,
                "Verify the data-parallel invariant: N ranks x batch b train like 1 rank x batch N*b (exit 4 if not)");
  run->add_option("--check-steps", result.run.check_steps, "Steps --check trains before comparing (default 3)")
      ->check(whole_number(1, kMaxIterations));
  run->add_option("--gpus-sweep", result.run.gpus_sweep,
                  "The scaling curve in one job: after the solo phase (k = 1), a comm and a dp phase for each size k "
                  "(a list such as 1,2,4, or auto: 1, 2, 4, ... within a node, the whole node, whole nodes, N), trained "
                  "by k ranks chosen by topology (NVLink first, then the closest PCIe path) while the others wait")
      ->check(gpus_sweep_list());
  run->add_flag("--concurrent-groups", result.run.concurrent_groups,
                "With --gpus-sweep: N/k groups of k ranks train at once at every size k (every GPU busy, as on a "
                "shared machine), instead of one group while the others wait");
  run->add_flag("--recompute", result.run.recompute,
                "Recompute GELU outputs in the backward pass instead of keeping them (less activation memory, "
                "one more elementwise pass per layer)");

  clear_sentinel_defaults(app);
  name_placeholders(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    result.help_requested = true;
    // `scalebench bandwidth --help` shows the subcommand's own flags, then the global ones.
    const auto parsed = app.get_subcommands();
    result.help_text = parsed.empty() ? app.help() : subcommand_help(app, *parsed.back());
    return result;
  } catch (const CLI::CallForAllHelp&) {
    result.help_requested = true;
    result.help_text = app.help("", CLI::AppFormatMode::All);
    return result;
  } catch (const CLI::CallForVersion&) {
    result.help_requested = true;
    result.help_text = version_line() + "\n";
    return result;
  } catch (const CLI::ArgumentMismatch& error) {
    // CLI11 says "--steps: At Most 1 required but received 2" for an option given twice.
    const std::string text = first_line(error.what());
    const size_t colon = text.find(": At Most 1 required");
    if (colon != std::string::npos) {
      throw UsageError(text.substr(0, colon) + " is given more than once; give each option once (run 'scalebench --help')");
    }
    throw UsageError(text + " (run 'scalebench --help')");
  } catch (const CLI::ParseError& error) {
    // An argument nobody took explains more than what it caused ("--workload is required" for `bandwith`).
    const std::vector<std::string> extras = app.remaining(true);
    const auto parsed = app.get_subcommands();
    if (!extras.empty()) {
      throw UsageError(unknown_argument_message(app, parsed.empty() ? "" : parsed.back()->get_name(),
                                                names_a_command, extras));
    }
    throw UsageError(first_line(error.what()) + " (run 'scalebench --help')");
  }
  for (CLI::App* sub : app.get_subcommands()) result.command = sub->get_name();
  refuse_unsupported_outputs(result);
  result.common.backend = parse_backend(backend);
  if (result.command == "bandwidth") resolve_bandwidth(raw, result.bandwidth);
  result.canonical = canonical_form(result);
  return result;
}

}  // namespace sb
