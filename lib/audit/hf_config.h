#pragma once
// Hugging Face `config.json` → architecture. Understands the key spellings of the
// common decoder-only families: num_hidden_layers/hidden_size (Llama, Mistral, Mixtral,
// Qwen2, Gemma 2, Falcon, OPT, GPT-NeoX, DeepSeek-V3), n_layer/n_embd (GPT-2, BLOOM),
// num_layers/d_model and n_layers/d_model (MPT-style), nested text_config
// (multimodal wrappers), MoE fields (num_local_experts, n_routed_experts,
// num_experts_per_tok, n_shared_experts, moe_intermediate_size, first_k_dense_replace)
// and latent attention (q_lora_rank, kv_lora_rank, ...). Anything else is refused
// with a message naming the file and the field that is missing or malformed.
#include <string>

#include <nlohmann/json.hpp>

#include "audit/model_table.h"

namespace shapelaw::audit {

ModelEntry model_from_hf_config(const nlohmann::json& config, const std::string& path, const std::string& name);
ModelEntry model_from_hf_config_file(const std::string& path);

}  // namespace shapelaw::audit
