#include "audit/hf_config.h"

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <cstdio>
#include <set>

#include "audit/numbers.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw::audit {
namespace {

using nlohmann::json;

struct Reader {
  const json& j;
  const std::string& path;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(located(path, 0, "field '" + field + "': " + what));
  }
  // First present, non-null key among names, as an integer.
  std::optional<int64_t> integer(std::initializer_list<const char*> names, std::string* which = nullptr) const {
    for (const char* name : names) {
      auto it = j.find(name);
      if (it == j.end() || it->is_null()) continue;
      if (which) *which = name;
      if (it->is_number_integer() || it->is_number_unsigned()) return it->get<int64_t>();
      if (it->is_number_float()) {
        double d = it->get<double>();
        if (d == std::floor(d)) return static_cast<int64_t>(d);
      }
      fail(name, "expected an integer, got " + it->dump());
    }
    return std::nullopt;
  }
  std::optional<bool> boolean(const char* name) const {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean()) fail(name, "expected true or false, got " + it->dump());
    return it->get<bool>();
  }
  std::optional<std::string> string(std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      auto it = j.find(name);
      if (it == j.end() || it->is_null()) continue;
      if (!it->is_string()) fail(name, "expected a string, got " + it->dump());
      return it->get<std::string>();
    }
    return std::nullopt;
  }
  bool has(const char* name) const { return j.contains(name) && !j[name].is_null(); }
};

const std::set<std::string> kGatedTypes = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3_text",
    "deepseek_v2", "deepseek_v3", "phi3", "olmo", "olmo2", "internlm2", "cohere", "granite", "exaone", "yi"};
const std::set<std::string> kPlainTypes = {"gpt2", "opt", "bloom", "falcon", "mpt", "gpt_neox", "gptj",
                                           "gpt_bigcode", "starcoder2", "phi", "codegen"};

}  // namespace

ModelEntry model_from_hf_config(const json& root, const std::string& path, const std::string& name) {
  if (!root.is_object()) throw Error(located(path, 0, "not a JSON object (expected a Hugging Face config.json)"));
  const json* cfg = &root;
  const bool top_has_depth = root.contains("num_hidden_layers") || root.contains("n_layer") ||
                             root.contains("num_layers") || root.contains("n_layers");
  if (!top_has_depth && root.contains("text_config") && root["text_config"].is_object()) cfg = &root["text_config"];
  Reader r{*cfg, path};
  Reader top{root, path};
  if (top.boolean("is_encoder_decoder").value_or(false))
    r.fail("is_encoder_decoder", "encoder-decoder models are not supported (decoder-only only)");

  std::string model_type = lower(r.string({"model_type"}).value_or(top.string({"model_type"}).value_or("")));
  ModelEntry m;
  m.origin = path;
  m.source_arch = m.source_params = path;
  Arch& a = m.arch;
  a.name = name;
  auto depth = r.integer({"num_hidden_layers", "n_layer", "num_layers", "n_layers"});
  if (!depth)
    throw Error(located(path, 0,
                        "unknown config schema" + (model_type.empty() ? std::string() : " (model_type '" + model_type + "')") +
                            ": no layer count (looked for num_hidden_layers, n_layer, num_layers, n_layers)"));
  a.depth = *depth;
  auto width = r.integer({"hidden_size", "n_embd", "d_model", "n_embed"});
  if (!width)
    throw Error(located(path, 0, "unknown config schema: no width (looked for hidden_size, n_embd, d_model, n_embed)"));
  a.width = *width;
  a.heads = r.integer({"num_attention_heads", "n_head", "num_heads", "n_heads"}).value_or(0);
  if (auto kv = r.integer({"num_key_value_heads", "num_kv_heads", "n_head_kv"})) {
    a.kv_heads = *kv;
  } else if (r.boolean("multi_query").value_or(false)) {
    a.kv_heads = 1;
  } else if (r.has("attn_config") && r.j["attn_config"].is_object()) {
    Reader ac{r.j["attn_config"], path};
    a.kv_heads = ac.integer({"kv_n_heads"}).value_or(0);
  }
  a.head_dim = r.integer({"head_dim"}).value_or(0);
  if (a.heads > 0 && a.head_dim == a.width / a.heads && a.width % a.heads == 0) a.head_dim = 0;
  a.ffn = r.integer({"intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim", "d_ff"}).value_or(0);
  if (a.ffn == 0 && r.has("expansion_ratio")) {
    auto it = r.j.find("expansion_ratio");
    if (!it->is_number()) r.fail("expansion_ratio", "expected a number, got " + it->dump());
    a.ffn = static_cast<int64_t>(std::llround(it->get<double>() * static_cast<double>(a.width)));
  }
  auto vocab = r.integer({"vocab_size", "padded_vocab_size"});
  if (!vocab) vocab = top.integer({"vocab_size"});
  if (!vocab) r.fail("vocab_size", "missing (needed for the embedding count)");
  a.vocab = *vocab;
  // Absent key: the transformers default of that config class (untied for the Llama family and
  // its descendants, tied for PretrainedConfig and the rest).
  static const std::set<std::string> kUntiedByDefault = {"llama",      "mistral",     "mixtral",     "qwen2",
                                                         "qwen2_moe",  "qwen3",       "qwen3_moe",   "deepseek_v2",
                                                         "deepseek_v3", "phi3",       "olmo",        "olmo2",
                                                         "internlm2",  "gpt_neox"};
  a.tied = r.boolean("tie_word_embeddings")
               .value_or(top.boolean("tie_word_embeddings").value_or(kUntiedByDefault.count(model_type) == 0));

  // MLP type: known families first, then the activation name.
  std::string act = lower(r.string({"hidden_act", "hidden_activation", "activation_function", "ffn_act_fn"})
                              .value_or(""));
  bool gated = kGatedTypes.count(model_type) > 0;
  if (!gated && !kPlainTypes.count(model_type)) gated = act == "silu" || act == "swiglu";
  if (gated) a.mlp = act.find("gelu") != std::string::npos ? Mlp::geglu : Mlp::swiglu;
  else a.mlp = Mlp::gelu;
  // An unknown family's MLP is guessed from the activation; a gated MLP has three matrices,
  // a plain one two, so a wrong guess moves the count by about a quarter: said, not silent.
  if (!kGatedTypes.count(model_type) && !kPlainTypes.count(model_type))
    std::fprintf(stderr,
                 "audit: warning: %s: model_type '%s' is not a family audit knows: its MLP is taken as %s from the "
                 "activation '%s' (a gated MLP has 3 matrices, a plain one 2: check the parameter count)\n",
                 path.c_str(), model_type.c_str(), gated ? "gated" : "plain (2 matrices)", act.c_str());
  if (a.ffn == 0 && gated && !r.has("moe_intermediate_size"))
    r.fail("intermediate_size", "missing (a gated MLP has no default hidden size)");

  a.norm = (r.has("rms_norm_eps") || gated) ? Norm::rmsnorm : Norm::layernorm;
  if (r.has("layer_norm_epsilon") || r.has("layer_norm_eps") || r.has("layernorm_epsilon")) a.norm = Norm::layernorm;
  if (model_type == "gemma2" || model_type == "gemma3_text") a.norms_per_layer = 4;
  if (model_type == "falcon" && !r.boolean("new_decoder_architecture").value_or(false) &&
      r.boolean("parallel_attn").value_or(true))
    a.norms_per_layer = 1;

  // Biases.
  if (model_type == "gpt2" || model_type == "opt" || model_type == "bloom" || model_type == "gpt_neox" ||
      model_type == "gpt_bigcode")
    a.biases = true;
  if (auto b = r.boolean("bias")) a.biases = *b;
  if (auto nb = r.boolean("no_bias")) a.biases = !*nb;
  if (r.boolean("attention_bias").value_or(false)) a.biases = true;
  if (model_type == "qwen2" || model_type == "qwen2_moe") a.qkv_bias = true;
  if (model_type == "bloom") a.embedding_norm = true;

  // Learned absolute positions.
  if (model_type == "gpt2" || model_type == "gpt_bigcode")
    a.learned_positions = r.integer({"n_positions", "max_position_embeddings"}).value_or(0);
  if (model_type == "opt") a.learned_positions = r.integer({"max_position_embeddings"}).value_or(0) + 2;

  // Mixture of experts.
  a.experts = r.integer({"num_local_experts", "n_routed_experts", "num_experts", "moe_num_experts"}).value_or(0);
  if (a.experts > 0) {
    auto k = r.integer({"num_experts_per_tok", "moe_top_k", "top_k"});
    if (!k) r.fail("num_experts_per_tok", "missing for a mixture-of-experts config");
    a.experts_active = *k;
    a.shared_experts = r.integer({"n_shared_experts"}).value_or(0);
    a.moe_ffn = r.integer({"moe_intermediate_size"}).value_or(0);
    a.dense_layers = r.integer({"first_k_dense_replace"}).value_or(0);
    if (auto freq = r.integer({"moe_layer_freq"}); freq && *freq != 1)
      r.fail("moe_layer_freq", "only 1 (every layer after first_k_dense_replace) is supported, got " +
                                   std::to_string(*freq));
  }
  // Latent attention.
  a.kv_lora_rank = r.integer({"kv_lora_rank"}).value_or(0);
  if (a.kv_lora_rank > 0) {
    a.q_lora_rank = r.integer({"q_lora_rank"}).value_or(0);
    a.qk_nope_head_dim = r.integer({"qk_nope_head_dim"}).value_or(0);
    a.qk_rope_head_dim = r.integer({"qk_rope_head_dim"}).value_or(0);
    a.v_head_dim = r.integer({"v_head_dim"}).value_or(0);
    a.head_dim = 0;
  }
  m.kind = a.is_moe() ? "moe" : "dense";
  m.family = model_type;
  if (r.integer({"num_nextn_predict_layers"}).value_or(0) > 0)
    m.count_note = "multi-token-prediction module (num_nextn_predict_layers) not counted";

  std::string why = validate(a);
  if (!why.empty()) {
    size_t colon = why.find(':');
    static const std::map<std::string, std::string> hf_name = {
        {"depth", "num_hidden_layers"}, {"width", "hidden_size"},       {"heads", "num_attention_heads"},
        {"kv_heads", "num_key_value_heads"}, {"ffn", "intermediate_size"}, {"vocab", "vocab_size"},
        {"experts_active", "num_experts_per_tok"}, {"dense_layers", "first_k_dense_replace"}};
    std::string field = why.substr(0, colon);
    auto it = hf_name.find(field);
    r.fail(it == hf_name.end() ? field : it->second, why.substr(colon + 2));
  }
  return m;
}

ModelEntry model_from_hf_config_file(const std::string& path) {
  namespace fs = std::filesystem;
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    throw Error(located(path, 0, std::string("not valid JSON: ") + e.what()));
  }
  fs::path p(path);
  std::string name = p.stem().string();
  if (name == "config") name = p.parent_path().filename().string();
  if (name.empty()) name = path;
  return model_from_hf_config(j, path, name);
}

}  // namespace shapelaw::audit
