// The guide's own measurements (shared/WORKLOADS.md §0, Lambda Labs, Feb 2020): per-GPU training throughput of
// each reference workload on one Quadro RTX 8000 at the reference batch. The suite's tables divide this
// machine's per-GPU throughput by it: the guide's normalised column, "x RTX 8000".
#pragma once

#include <optional>
#include <string>

namespace sb {

// Units per second on one RTX 8000 (images, sequences, or words for the translation workloads, which fairseq
// and XLM count as target tokens); none for a workload the guide does not list.
std::optional<double> guide_rtx8000_units_per_s(const std::string& workload);

}  // namespace sb
