// GraphBuilder's generic part (include/scalebench/graph_builder.h): naming, activations, parameters and inputs.
// Each op's methods live with its family (src/core/ops/<family>.cpp), which stores the sizes a kernel needs
// (rows, columns, m/n/k, batch) as node attributes, once, so executors never infer them. Operand shapes are
// copied, not referenced: adding a tensor may reallocate the graph's tensor list.
#include "scalebench/graph_builder.h"

#include "scalebench/error.h"
#include "src/core/ops/shape_text.h"

namespace sb {

GraphBuilder::GraphBuilder(Graph& graph, DType compute) : graph_(graph), compute_(compute) {
  if (compute != DType::kFloat32 && compute != DType::kBFloat16 && compute != DType::kFloat16) {
    throw UsageError(std::string("the engine computes in fp32, bf16 or fp16, not ") + dtype_name(compute));
  }
}

std::string GraphBuilder::next_name(const std::string& op) { return op + "_" + std::to_string(counter_++); }

TensorId GraphBuilder::activation(const std::string& name, std::vector<int64_t> dims) {
  return activation(name, std::move(dims), compute_);
}

// The cast itself (GraphBuilder::converted) is the cast family's (src/core/ops/cast.cpp).
TensorId GraphBuilder::in_compute_dtype(TensorId x) { return converted(x, compute_); }

TensorId GraphBuilder::activation(const std::string& name, std::vector<int64_t> dims, DType dtype) {
  TensorInfo info;
  info.name = name;
  info.shape = std::move(dims);
  info.dtype = dtype;
  info.role = TensorRole::kActivation;
  return graph_.add_tensor(info);
}

TensorId GraphBuilder::buffer(const std::string& name, std::vector<int64_t> dims, DType dtype) {
  return activation(name, std::move(dims), dtype);
}

TensorId GraphBuilder::parameter(const std::string& name, std::vector<int64_t> dims) {
  auto known = parameters_.find(name);
  if (known != parameters_.end()) {
    const TensorInfo& info = graph_.tensor(known->second);
    if (info.shape != dims) {
      throw UsageError("parameter '" + name + "' declared again as " + shape_text(dims) + ", was " +
                       shape_text(info.shape));
    }
    if (info.parameter_group != parameter_group_) {  // one weight, one optimizer: its group is where it was declared
      throw UsageError("parameter '" + name + "' declared again in parameter group '" + parameter_group_ +
                       "', was in '" + info.parameter_group + "'");
    }
    return known->second;
  }
  TensorInfo info;
  info.name = name;
  info.shape = std::move(dims);
  info.role = TensorRole::kParameter;
  info.parameter_group = parameter_group_;
  return parameters_[name] = graph_.add_tensor(info);
}

TensorId GraphBuilder::input(const std::string& name, std::vector<int64_t> dims, DType dtype) {
  TensorInfo info;
  info.name = name;
  info.shape = std::move(dims);
  info.dtype = dtype;
  info.role = TensorRole::kInput;
  return graph_.add_tensor(info);
}

void GraphBuilder::declare_unused_parameter(TensorId parameter) {
  TensorInfo& info = graph_.tensor(parameter);
  if (info.role != TensorRole::kParameter) {
    throw UsageError("declare_unused_parameter: '" + info.name + "' is not a parameter");
  }
  info.unused_this_step = true;
}

TensorId GraphBuilder::frozen_parameter(const std::string& name, std::vector<int64_t> dims) {
  const TensorId id = input(name, std::move(dims), DType::kFloat32);
  graph_.tensor(id).frozen_weight = true;
  return id;
}

}  // namespace sb
