// CPU reference of the SAN answer-module blocks (san.h): plain loops, every dot product and every reduction
// over positions, batch rows or classes accumulated in double. The references are mt-dnn's module/san.py
// (SANClassifier, Classifier, generate_mask), module/similarity.py (LinearSelfAttn, BilinearFlatSim) and
// torch.nn.GRUCell; san.h lists how the graph composes them.
#include "src/cpu/san.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "scalebench/error.h"
#include "src/cpu/cpu_bindings.h"
#include "src/cpu/random_uniform.h"

namespace sb::cpu {
namespace {

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

double dot(const float* a, const float* b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

void check_positive(const char* op, int64_t value, const char* name) {
  SB_CHECK(value >= 1, std::string(op) + ": " + name + " must be >= 1");
}

// Softmax of scores (L) over the unmasked positions into alpha (L); masked positions get exactly 0, and so
// does a row with nothing unmasked (the masked_softmax convention) instead of PyTorch's 0/0.
void masked_softmax_row(const double* scores, const uint8_t* mask, float* alpha, int64_t length) {
  double max_score = -INFINITY;
  for (int64_t l = 0; l < length; ++l) {
    if (!mask[l]) max_score = std::fmax(max_score, scores[l]);
  }
  if (max_score == -INFINITY) {
    for (int64_t l = 0; l < length; ++l) alpha[l] = 0.0f;
    return;
  }
  double sum = 0.0;
  for (int64_t l = 0; l < length; ++l) sum += mask[l] ? 0.0 : std::exp(scores[l] - max_score);
  for (int64_t l = 0; l < length; ++l) {
    alpha[l] = mask[l] ? 0.0f : static_cast<float>(std::exp(scores[l] - max_score) / sum);
  }
}

// dscore_l = alpha_l (dalpha_l - sum_k alpha_k dalpha_k); masked positions have alpha 0 and get 0.
void softmax_row_backward(const float* alpha, const double* dalpha, double* dscores, int64_t length) {
  double weighted = 0.0;
  for (int64_t l = 0; l < length; ++l) weighted += alpha[l] * dalpha[l];
  for (int64_t l = 0; l < length; ++l) dscores[l] = alpha[l] * (dalpha[l] - weighted);
}

// summary (H) = sum_l alpha_l values_l, values (L, H).
void weighted_sum_row(const float* alpha, const float* values, float* summary, int64_t length, int64_t hidden) {
  for (int64_t i = 0; i < hidden; ++i) {
    double sum = 0.0;
    for (int64_t l = 0; l < length; ++l) sum += static_cast<double>(alpha[l]) * values[l * hidden + i];
    summary[i] = static_cast<float>(sum);
  }
}

}  // namespace

void gru_cell_forward(const float* x, const float* h, const float* w_ih, const float* w_hh, const float* b_ih,
                      const float* b_hh, float* h_next, float* saved_gates, int64_t batch, int64_t input_size,
                      int64_t hidden_size) {
  check_positive("gru_cell_forward", input_size, "input_size");
  check_positive("gru_cell_forward", hidden_size, "hidden_size");
  const int64_t H = hidden_size;
  for (int64_t b = 0; b < batch; ++b) {
    const float* xb = x + b * input_size;
    const float* hb = h + b * H;
    float* gates = saved_gates + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      // Rows j, H + j, 2H + j of the stacked weights are gates r, z, n of unit j.
      const double r = sigmoid(dot(w_ih + j * input_size, xb, input_size) + b_ih[j] + dot(w_hh + j * H, hb, H) +
                               b_hh[j]);
      const double z = sigmoid(dot(w_ih + (H + j) * input_size, xb, input_size) + b_ih[H + j] +
                               dot(w_hh + (H + j) * H, hb, H) + b_hh[H + j]);
      const double hn = dot(w_hh + (2 * H + j) * H, hb, H) + b_hh[2 * H + j];
      const double n = std::tanh(dot(w_ih + (2 * H + j) * input_size, xb, input_size) + b_ih[2 * H + j] + r * hn);
      h_next[b * H + j] = static_cast<float>((1.0 - z) * n + z * hb[j]);
      gates[j] = static_cast<float>(r);
      gates[H + j] = static_cast<float>(z);
      gates[2 * H + j] = static_cast<float>(n);
      gates[3 * H + j] = static_cast<float>(hn);
    }
  }
}

void gru_cell_backward(const float* dh_next, const float* x, const float* h, const float* w_ih,
                       const float* w_hh, const float* saved_gates, float* dx, float* dh, float* dw_ih,
                       float* dw_hh, float* db_ih, float* db_hh, int64_t batch, int64_t input_size,
                       int64_t hidden_size) {
  check_positive("gru_cell_backward", input_size, "input_size");
  check_positive("gru_cell_backward", hidden_size, "hidden_size");
  const int64_t H = hidden_size;
  const int64_t I = input_size;
  // Pre-activation gradients, (B, 3H) each: g_input feeds W_ih x + b_ih, g_hidden feeds W_hh h + b_hh. They
  // differ only in the n block, where the hidden path is multiplied by r.
  std::vector<double> g_input(static_cast<size_t>(batch * 3 * H));
  std::vector<double> g_hidden(static_cast<size_t>(batch * 3 * H));
  for (int64_t b = 0; b < batch; ++b) {
    const float* gates = saved_gates + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const double r = gates[j], z = gates[H + j], n = gates[2 * H + j], hn = gates[3 * H + j];
      const double dout = dh_next[b * H + j];
      const double da_n = dout * (1.0 - z) * (1.0 - n * n);
      const double da_z = dout * (h[b * H + j] - n) * z * (1.0 - z);
      const double da_r = da_n * hn * r * (1.0 - r);
      double* gi = g_input.data() + b * 3 * H;
      double* gh = g_hidden.data() + b * 3 * H;
      gi[j] = gh[j] = da_r;
      gi[H + j] = gh[H + j] = da_z;
      gi[2 * H + j] = da_n;
      gh[2 * H + j] = da_n * r;
    }
  }
  for (int64_t b = 0; b < batch; ++b) {
    const double* gi = g_input.data() + b * 3 * H;
    const double* gh = g_hidden.data() + b * 3 * H;
    for (int64_t k = 0; k < I; ++k) {
      double sum = 0.0;
      for (int64_t g = 0; g < 3 * H; ++g) sum += gi[g] * w_ih[g * I + k];
      dx[b * I + k] = static_cast<float>(sum);
    }
    for (int64_t k = 0; k < H; ++k) {
      double sum = dh_next[b * H + k] * static_cast<double>(saved_gates[b * 4 * H + H + k]);  // z * dh'
      for (int64_t g = 0; g < 3 * H; ++g) sum += gh[g] * w_hh[g * H + k];
      dh[b * H + k] = static_cast<float>(sum);
    }
  }
  for (int64_t g = 0; g < 3 * H; ++g) {
    double bias_i = 0.0, bias_h = 0.0;
    for (int64_t b = 0; b < batch; ++b) {
      bias_i += g_input[b * 3 * H + g];
      bias_h += g_hidden[b * 3 * H + g];
    }
    db_ih[g] = static_cast<float>(bias_i);
    db_hh[g] = static_cast<float>(bias_h);
    for (int64_t k = 0; k < I; ++k) {
      double sum = 0.0;
      for (int64_t b = 0; b < batch; ++b) sum += g_input[b * 3 * H + g] * x[b * I + k];
      dw_ih[g * I + k] = static_cast<float>(sum);
    }
    for (int64_t k = 0; k < H; ++k) {
      double sum = 0.0;
      for (int64_t b = 0; b < batch; ++b) sum += g_hidden[b * 3 * H + g] * h[b * H + k];
      dw_hh[g * H + k] = static_cast<float>(sum);
    }
  }
}

void san_self_attention_forward(const float* memory, const uint8_t* mask, const float* weight, const float* bias,
                                float* summary, float* saved_alpha, int64_t batch, int64_t length,
                                int64_t hidden) {
  check_positive("san_self_attention_forward", length, "length");
  std::vector<double> scores(static_cast<size_t>(length));
  for (int64_t b = 0; b < batch; ++b) {
    const float* m = memory + b * length * hidden;
    for (int64_t l = 0; l < length; ++l) scores[l] = dot(m + l * hidden, weight, hidden) + bias[0];
    masked_softmax_row(scores.data(), mask + b * length, saved_alpha + b * length, length);
    weighted_sum_row(saved_alpha + b * length, m, summary + b * hidden, length, hidden);
  }
}

void san_self_attention_backward(const float* dsummary, const float* memory, const uint8_t* mask,
                                 const float* weight, const float* saved_alpha, float* dmemory, float* dweight,
                                 float* dbias, int64_t batch, int64_t length, int64_t hidden) {
  check_positive("san_self_attention_backward", length, "length");
  (void)mask;  // saved_alpha is already 0 on masked positions, which is all backward needs
  std::vector<double> dalpha(static_cast<size_t>(length)), dscores(static_cast<size_t>(length));
  std::vector<double> dweight_sum(static_cast<size_t>(hidden), 0.0);
  double dbias_sum = 0.0;
  for (int64_t b = 0; b < batch; ++b) {
    const float* m = memory + b * length * hidden;
    const float* alpha = saved_alpha + b * length;
    const float* ds = dsummary + b * hidden;
    for (int64_t l = 0; l < length; ++l) dalpha[l] = dot(m + l * hidden, ds, hidden);
    softmax_row_backward(alpha, dalpha.data(), dscores.data(), length);
    for (int64_t l = 0; l < length; ++l) {
      // memory_l feeds both the weighted sum (alpha_l) and its own score (dscore_l * weight).
      float* dm = dmemory + (b * length + l) * hidden;
      for (int64_t i = 0; i < hidden; ++i) {
        dm[i] = static_cast<float>(static_cast<double>(alpha[l]) * ds[i] + dscores[l] * weight[i]);
        dweight_sum[i] += dscores[l] * m[l * hidden + i];
      }
      dbias_sum += dscores[l];
    }
  }
  for (int64_t i = 0; i < hidden; ++i) dweight[i] = static_cast<float>(dweight_sum[i]);
  dbias[0] = static_cast<float>(dbias_sum);
}

void san_bilinear_attention_forward(const float* keys, const float* values, const float* state,
                                    const uint8_t* mask, const float* weight, const float* bias, float* summary,
                                    float* saved_projection, float* saved_alpha, int64_t batch, int64_t length,
                                    int64_t memory_hidden, int64_t state_hidden) {
  check_positive("san_bilinear_attention_forward", length, "length");
  const int64_t Hm = memory_hidden, Hs = state_hidden;
  std::vector<double> scores(static_cast<size_t>(length));
  for (int64_t b = 0; b < batch; ++b) {
    float* p = saved_projection + b * Hm;
    for (int64_t i = 0; i < Hm; ++i) p[i] = static_cast<float>(dot(weight + i * Hs, state + b * Hs, Hs) + bias[i]);
    const float* k = keys + b * length * Hm;
    for (int64_t l = 0; l < length; ++l) scores[l] = dot(k + l * Hm, p, Hm);
    masked_softmax_row(scores.data(), mask + b * length, saved_alpha + b * length, length);
    weighted_sum_row(saved_alpha + b * length, values + b * length * Hm, summary + b * Hm, length, Hm);
  }
}

void san_bilinear_attention_backward(const float* dsummary, const float* keys, const float* values,
                                     const float* state, const uint8_t* mask, const float* weight,
                                     const float* saved_projection, const float* saved_alpha, float* dkeys,
                                     float* dvalues, float* dstate, float* dweight, float* dbias, int64_t batch,
                                     int64_t length, int64_t memory_hidden, int64_t state_hidden) {
  check_positive("san_bilinear_attention_backward", length, "length");
  (void)mask;  // saved_alpha is already 0 on masked positions
  const int64_t Hm = memory_hidden, Hs = state_hidden;
  std::vector<double> dalpha(static_cast<size_t>(length)), dscores(static_cast<size_t>(length));
  std::vector<double> dprojection(static_cast<size_t>(batch * Hm), 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    const float* k = keys + b * length * Hm;
    const float* v = values + b * length * Hm;
    const float* alpha = saved_alpha + b * length;
    const float* ds = dsummary + b * Hm;
    const float* p = saved_projection + b * Hm;
    double* dp = dprojection.data() + b * Hm;
    for (int64_t l = 0; l < length; ++l) dalpha[l] = dot(v + l * Hm, ds, Hm);
    softmax_row_backward(alpha, dalpha.data(), dscores.data(), length);
    for (int64_t l = 0; l < length; ++l) {
      float* dk = dkeys + (b * length + l) * Hm;
      float* dv = dvalues + (b * length + l) * Hm;
      for (int64_t i = 0; i < Hm; ++i) {
        dv[i] = static_cast<float>(static_cast<double>(alpha[l]) * ds[i]);
        dk[i] = static_cast<float>(dscores[l] * p[i]);
        dp[i] += dscores[l] * k[l * Hm + i];
      }
    }
    for (int64_t j = 0; j < Hs; ++j) {
      double sum = 0.0;
      for (int64_t i = 0; i < Hm; ++i) sum += dp[i] * weight[i * Hs + j];
      dstate[b * Hs + j] = static_cast<float>(sum);
    }
  }
  for (int64_t i = 0; i < Hm; ++i) {
    double bias_sum = 0.0;
    for (int64_t b = 0; b < batch; ++b) bias_sum += dprojection[b * Hm + i];
    dbias[i] = static_cast<float>(bias_sum);
    for (int64_t j = 0; j < Hs; ++j) {
      double sum = 0.0;
      for (int64_t b = 0; b < batch; ++b) sum += dprojection[b * Hm + i] * state[b * Hs + j];
      dweight[i * Hs + j] = static_cast<float>(sum);
    }
  }
}

void san_merge_forward(const float* x, const float* s, float* features, int64_t batch, int64_t hidden) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* xb = x + b * hidden;
    const float* sb = s + b * hidden;
    float* f = features + b * 4 * hidden;
    for (int64_t i = 0; i < hidden; ++i) {
      f[i] = xb[i];
      f[hidden + i] = sb[i];
      f[2 * hidden + i] = std::fabs(xb[i] - sb[i]);
      f[3 * hidden + i] = xb[i] * sb[i];
    }
  }
}

void san_merge_backward(const float* dfeatures, const float* x, const float* s, float* dx, float* ds,
                        int64_t batch, int64_t hidden) {
  for (int64_t b = 0; b < batch; ++b) {
    const float* f = dfeatures + b * 4 * hidden;
    for (int64_t i = 0; i < hidden; ++i) {
      const float xi = x[b * hidden + i], si = s[b * hidden + i];
      const float diff = xi - si;
      const float sign = diff > 0.0f ? 1.0f : (diff < 0.0f ? -1.0f : 0.0f);
      dx[b * hidden + i] = f[i] + sign * f[2 * hidden + i] + si * f[3 * hidden + i];
      ds[b * hidden + i] = f[hidden + i] - sign * f[2 * hidden + i] + xi * f[3 * hidden + i];
    }
  }
}

void san_turn_mask(const float* uniforms, float* turn_mask, int64_t batch, int64_t turns, float drop_p) {
  check_positive("san_turn_mask", turns, "turns");
  SB_CHECK(drop_p >= 0.0f && drop_p < 1.0f, "san_turn_mask: drop_p must be in [0, 1)");
  const float keep_value = 1.0f / (1.0f - drop_p);
  for (int64_t b = 0; b < batch; ++b) {
    const float* u = uniforms + b * (turns + 1);
    // mt-dnn's random.randint(0, K - 1): one turn per row that survives, so the mean is never all zeros.
    const int64_t forced = std::min<int64_t>(static_cast<int64_t>(u[turns] * static_cast<float>(turns)), turns - 1);
    for (int64_t t = 0; t < turns; ++t) {
      const bool keep = t == forced || u[t] < 1.0f - drop_p;
      turn_mask[b * turns + t] = keep ? keep_value : 0.0f;
    }
  }
}

void san_turn_average_forward(const float* turn_logits, const float* turn_mask, float* scores,
                              float* saved_probs, int64_t turns, int64_t batch, int64_t classes) {
  check_positive("san_turn_average_forward", turns, "turns");
  check_positive("san_turn_average_forward", classes, "classes");
  std::vector<double> mean(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t c = 0; c < classes; ++c) mean[c] = 0.0;
    for (int64_t t = 0; t < turns; ++t) {
      const float* z = turn_logits + (t * batch + b) * classes;
      float* p = saved_probs + (t * batch + b) * classes;
      double max_z = z[0];
      for (int64_t c = 1; c < classes; ++c) max_z = std::fmax(max_z, static_cast<double>(z[c]));
      double sum = 0.0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(z[c] - max_z);
      const double weight = static_cast<double>(turn_mask[b * turns + t]) / static_cast<double>(turns);
      for (int64_t c = 0; c < classes; ++c) {
        const double prob = std::exp(z[c] - max_z) / sum;
        p[c] = static_cast<float>(prob);
        mean[c] += weight * prob;
      }
    }
    for (int64_t c = 0; c < classes; ++c) scores[b * classes + c] = static_cast<float>(std::log(mean[c]));
  }
}

void san_turn_average_backward(const float* dscores, const float* turn_mask, const float* saved_probs,
                               float* dturn_logits, int64_t turns, int64_t batch, int64_t classes) {
  check_positive("san_turn_average_backward", turns, "turns");
  check_positive("san_turn_average_backward", classes, "classes");
  std::vector<double> dmean(static_cast<size_t>(classes)), dprob(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    // d log(mean_c) = dscore_c / mean_c; the mean is rebuilt in double rather than read back from exp(scores).
    for (int64_t c = 0; c < classes; ++c) {
      double mean = 0.0;
      for (int64_t t = 0; t < turns; ++t) {
        mean += static_cast<double>(turn_mask[b * turns + t]) * saved_probs[(t * batch + b) * classes + c];
      }
      mean /= static_cast<double>(turns);
      dmean[c] = dscores[b * classes + c] / mean;
    }
    for (int64_t t = 0; t < turns; ++t) {
      const float* p = saved_probs + (t * batch + b) * classes;
      float* dz = dturn_logits + (t * batch + b) * classes;
      const double weight = static_cast<double>(turn_mask[b * turns + t]) / static_cast<double>(turns);
      double weighted = 0.0;
      for (int64_t c = 0; c < classes; ++c) {
        dprob[c] = weight * dmean[c];
        weighted += p[c] * dprob[c];
      }
      for (int64_t c = 0; c < classes; ++c) dz[c] = static_cast<float>(p[c] * (dprob[c] - weighted));
    }
  }
}

}  // namespace sb::cpu

// ---- Node bindings (src/cpu/cpu_bindings.h): the CPU executor's entries for this family's ops, each node's
// tensors bound to the kernels above with the sizes the graph builder stored.
namespace sb::detail {

namespace {

void gru_cell(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  cpu::gru_cell_forward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), e.f32(in[5]),
                        e.f32(n.outputs[0]), e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "input_size"),
                        size_attr(n, "hidden_size"));
}

void gru_cell_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::gru_cell_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(in[4]), e.f32(in[5]),
                         e.f32(out[0]), e.f32(out[1]), e.f32(out[2]), e.f32(out[3]), e.f32(out[4]), e.f32(out[5]),
                         size_attr(n, "batch"), size_attr(n, "input_size"), size_attr(n, "hidden_size"));
}

void self_attention(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  cpu::san_self_attention_forward(e.f32(in[0]), e.u8(in[1]), e.f32(in[2]), e.f32(in[3]), e.f32(n.outputs[0]),
                                  e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "length"),
                                  size_attr(n, "hidden"));
}

void self_attention_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::san_self_attention_backward(e.f32(in[0]), e.f32(in[1]), e.u8(in[2]), e.f32(in[3]), e.f32(in[4]),
                                   e.f32(out[0]), e.f32(out[1]), e.f32(out[2]), size_attr(n, "batch"),
                                   size_attr(n, "length"), size_attr(n, "hidden"));
}

void bilinear_attention(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::san_bilinear_attention_forward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.u8(in[3]), e.f32(in[4]),
                                      e.f32(in[5]), e.f32(out[0]), e.f32(out[1]), e.f32(out[2]),
                                      size_attr(n, "batch"), size_attr(n, "length"), size_attr(n, "memory_hidden"),
                                      size_attr(n, "state_hidden"));
}

void bilinear_attention_backward(CpuExecutor& e, const Node& n) {
  const auto& in = n.inputs;
  const auto& out = n.outputs;
  cpu::san_bilinear_attention_backward(e.f32(in[0]), e.f32(in[1]), e.f32(in[2]), e.f32(in[3]), e.u8(in[4]),
                                       e.f32(in[5]), e.f32(in[6]), e.f32(in[7]), e.f32(out[0]), e.f32(out[1]),
                                       e.f32(out[2]), e.f32(out[3]), e.f32(out[4]), size_attr(n, "batch"),
                                       size_attr(n, "length"), size_attr(n, "memory_hidden"),
                                       size_attr(n, "state_hidden"));
}

void merge(CpuExecutor& e, const Node& n) {
  cpu::san_merge_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), size_attr(n, "batch"),
                         size_attr(n, "hidden"));
}

void merge_backward(CpuExecutor& e, const Node& n) {
  cpu::san_merge_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                          e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "hidden"));
}

// The uniforms are an output of the node (not a scratch buffer) so that tests and the CUDA executor see
// the same draws.
void turn_mask(CpuExecutor& e, const Node& n) {
  cpu::philox_uniform(e.f32(n.outputs[0]), size_attr(n, "n"), e.seed(), e.dropout_offset(n));
  cpu::san_turn_mask(e.f32(n.outputs[0]), e.f32(n.outputs[1]), size_attr(n, "batch"), size_attr(n, "turns"),
                     static_cast<float>(n.attributes.at("p")));
}

void turn_average(CpuExecutor& e, const Node& n) {
  cpu::san_turn_average_forward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.outputs[0]), e.f32(n.outputs[1]),
                                size_attr(n, "turns"), size_attr(n, "batch"), size_attr(n, "classes"));
}

void turn_average_backward(CpuExecutor& e, const Node& n) {
  cpu::san_turn_average_backward(e.f32(n.inputs[0]), e.f32(n.inputs[1]), e.f32(n.inputs[2]), e.f32(n.outputs[0]),
                                 size_attr(n, "turns"), size_attr(n, "batch"), size_attr(n, "classes"));
}

}  // namespace

void bind_san_cpu(CpuKernelTable& table) {
  bind_cpu_kernels(table, {
      {"gru_cell", gru_cell},
      {"gru_cell_backward", gru_cell_backward},
      {"san_self_attention", self_attention},
      {"san_self_attention_backward", self_attention_backward},
      {"san_bilinear_attention", bilinear_attention},
      {"san_bilinear_attention_backward", bilinear_attention_backward},
      {"san_merge", merge},
      {"san_merge_backward", merge_backward},
      {"san_turn_mask", turn_mask},
      {"san_turn_average", turn_average},
      {"san_turn_average_backward", turn_average_backward},
  });
}

}  // namespace sb::detail
