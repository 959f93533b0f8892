#include "train/divergence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace shapelaw {

DivergenceCheck DivergenceCheck::for_run(double first_loss, int64_t vocab_size, double factor) {
  DivergenceCheck c;
  if (factor > 0 && std::isfinite(first_loss))
    c.limit = factor * std::max(first_loss, std::log(double(std::max<int64_t>(2, vocab_size))));
  return c;
}

std::string DivergenceCheck::check(double loss, double grad_norm) const {
  char text[256];
  if (!std::isfinite(loss)) {
    std::snprintf(text, sizeof text, "non-finite loss (%s)", std::isnan(loss) ? "NaN" : loss > 0 ? "inf" : "-inf");
  } else if (!std::isfinite(grad_norm)) {
    std::snprintf(text, sizeof text, "non-finite gradient norm (%g)", grad_norm);
  } else if (limit > 0 && loss > limit) {
    std::snprintf(text, sizeof text,
                  "loss %.4g above the divergence limit %.4g (--divergence-factor x max(first loss, ln vocab))", loss,
                  limit);
  } else {
    return "";
  }
  return text;
}

}  // namespace shapelaw
