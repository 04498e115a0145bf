// Predictions as JSON (src/plan/plan_json.h). Keys carry their units, as in every scalebench result file.
#include "src/plan/plan_json.h"

namespace sb {

nlohmann::json prediction_json(const PlanPrediction& p) {
  using nlohmann::json;
  json fits = json::array();
  for (const PrecisionFit& fit : p.fits) {
    fits.push_back({{"precision", precision_name(fit.precision)}, {"max_batch", fit.max_batch}});
  }
  json pytorch = json::array();
  for (const FrameworkFit& fit : p.pytorch_fits) {
    pytorch.push_back({{"mode", fit.mode}, {"precision", fit.precision}, {"max_batch", fit.max_batch},
                       {"measured_on", fit.measured_on}});
  }
  const TimelineResult& t = p.timeline;
  return {{"workload", p.request.workload},
          {"gpu", p.gpu->name},
          {"gpus", p.request.gpus},
          {"nodes", p.request.nodes},
          {"precision", precision_name(p.precision)},
          {"batch_per_gpu", p.batch},
          {"batch_reduced", p.batch_reduced},
          {"unit", p.unit},
          {"batch_unit", p.batch_unit},
          {"units_per_step_per_gpu", p.units_per_step},
          {"train_flops_per_step_per_gpu", p.train_flops_per_step},
          {"framework", p.request.framework},
          {"memory",
           {{"needed_bytes", p.needed_bytes},
            {"usable_bytes", p.capacity_bytes},
            {"reserve_bytes", kPlanDeviceReserveBytes},
            {"max_batch", fits},
            {"pytorch_max_batch", pytorch}}},
          {"path",
           {{"intra_fabric", p.intra_fabric.empty() ? json(nullptr) : json(p.intra_fabric)},
            {"inter_fabric", p.inter_fabric.empty() ? json(nullptr) : json(p.inter_fabric)},
            {"nics_per_node", p.nics_per_node},
            {"busbw_gbps", p.path.busbw_gbps},
            {"in_training_rate", p.path.in_training_rate},
            {"dilation", p.path.dilation}}},
          {"grad_dtype", p.request.grad_dtype},
          {"strategy", p.request.strategy},
          {"optimizer", optimizer_name(p.optimizer)},
          {"overlap", p.request.overlap},
          {"buckets", p.buckets},
          {"wire_bytes_per_step", p.wire_bytes},
          {"step_ms",
           {{"forward", t.forward_ms},
            {"backward", t.backward_ms},
            {"optimizer", t.optimizer_ms},
            {"solo", t.solo_ms},
            {"comm_alone", t.comm_alone_ms},
            {"dp", t.step_ms},
            {"exposed_comm", t.step_ms - t.solo_ms},
            {"nodes_done", t.nodes_done_ms},
            {"last_reduce_end", t.last_reduce_end_ms},
            {"gathers_alone", t.gathers_alone_ms},
            {"last_gather_end", t.last_gather_end_ms},
            {"sub_steps", t.sub_steps},
            {"parts", t.parts_ms},
            {"generation", t.generation_ms}}},
          {"units_per_s_per_gpu_solo", p.solo_units_per_s},
          {"units_per_s_per_gpu", p.dp_units_per_s_per_gpu},
          {"units_per_s_total", p.dp_units_per_s_total},
          {"scaling_efficiency", p.scaling_efficiency},
          {"notes", p.notes}};
}

nlohmann::json plan_document(const nlohmann::json& predictions, const Calibration& calibration) {
  return {{"schema_version", 1},
          {"tool", "scalebench"},
          {"command", "plan"},
          {"predicted", true},
          {"calibration", calibration.provenance},
          {"predictions", predictions}};
}

}  // namespace sb
