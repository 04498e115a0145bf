// zero3's parameters at 1/N in the plan (PlanOptions::parameter_blocks, include/scalebench/planner.h): the units'
// gathered parameters as blocks of the shared region, placed by liveness with the activations and gradient blocks.
#pragma once

#include "scalebench/graph.h"
#include "scalebench/planner.h"

namespace sb {

// Groups the plan's buckets (an oversized parameter's pieces together) into forward and backward blocks with their
// lifetimes, from every sub-step's gathers (unit_gathers) issued one unit ahead as the reducer issues them. A unit
// the forward pass keeps (no backward gather) gets no backward block: its backward copies share its forward block,
// which then lives until their last reader. Before placement; UsageError when a backward copy would never be gathered.
void make_parameter_blocks(const Graph& graph, MemoryPlan& plan);

// Once the blocks are placed: each bucket's parameters offsets, and each parameter and backward copy at its place in
// its block (a parameter no forward node reads keeps its flat-layout offset: nothing addresses it).
void place_parameters_in_blocks(const Graph& graph, MemoryPlan& plan);

// The bytes of parameters a block holds (its buckets' parameters; its gaps are padding).
uint64_t parameter_block_members_bytes(const Graph& graph, const MemoryPlan& plan, const ParameterBlock& block);

}  // namespace sb
