#pragma once
// A per-layer gradient-norm profile (docs/formats.md, "probe-grads"): what `probe-grads
// measure` writes (grad_profile.csv + grad_profile.json), what `fit` reads, and the
// conversion of one step of train's grad_norms.csv into the same form. Torch-free.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/tau_fit.h"

namespace shapelaw::probe {

// The two probe-grads records, checked on reading by records::read_versioned_json.
inline constexpr const char* kGradProfileFormat = "shapelaw.grad_profile";  // grad_profile.json
inline constexpr int kGradProfileVersion = 1;
inline constexpr const char* kGradFitFormat = "shapelaw.grad_fit";  // grad_fit.json
inline constexpr int kGradFitVersion = 1;

struct ProfileRow {
  int layer = 0;          // 0..D-1 blocks; -1 embedding; D final_norm / head
  std::string component;  // attn | mlp | norm | block | embedding | final_norm | head
  double norm = 0;        // mean over the probe's batches
  double ratio = 0;       // norm / the same component of layer D-1 (block for non-layer rows)
  double norm_sd = 0;     // sample sd over the batches (0 when one batch)
};

struct GradProfile {
  nlohmann::json meta = nlohmann::json::object();  // grad_profile.json (provenance, step, depth, width...)
  std::vector<ProfileRow> rows;
  int depth() const;    // meta "depth", else inferred from the rows
  int batches() const;  // meta "batches" (1 when absent)
};

// Fills `ratio` of every row from the norms (layer D-1 as reference).
void compute_ratios(GradProfile& profile);
// Per-layer norms and standard errors (sd / sqrt(batches)) of one component, layers 0..D-1.
// Throws Error naming the missing layer.
void component_series(const GradProfile& profile, const std::string& component, std::vector<double>& norms,
                      std::vector<double>& se);

std::string profile_csv(const GradProfile& profile);  // header layer,component,norm,ratio,norm_sd
// Writes DIR/grad_profile.csv and DIR/grad_profile.json (atomically; creates DIR).
void write_profile(const std::string& dir, const GradProfile& profile);
// path: a directory holding grad_profile.csv (and grad_profile.json), or the CSV itself.
GradProfile read_profile(const std::string& path);
// One step of train's grad_norms.csv (step,layer,component,norm) as a one-batch profile;
// step < 0: the last step in the file. Throws Error listing the steps present.
GradProfile profile_from_train_log(const std::string& csv_path, long long step);

// grad_fit.json for one profile (meta carried over, the fit of `component`, options).
nlohmann::json fit_record(const GradProfile& profile, const std::string& component, const DecayFit& fit,
                          const DecayFitOptions& options, const std::string& profile_path);

// Number formatting shared by the CSV writers: shortest round-trip form ("%.17g" trimmed).
std::string format_number(double v);

}  // namespace shapelaw::probe
