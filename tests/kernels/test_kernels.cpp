// Every kernel of the kernel layer (kernels/) against a naive double-precision loop, once
// per instruction-set body this CPU runs (llm.c's dev/cpu style); a body the CPU cannot
// run is reported as skipped. Also the choice itself: fixed is the AVX2 body, native the
// best, and the capability cap.
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/block_kernels.h"
#include "kernels/kernel_set.h"
#include "kernels/softmax_rows.h"

using namespace shapelaw;

namespace {

// f() once per body, with that body chosen; the process's choice is restored after.
template <class F>
void for_each_isa(F&& f) {
  const Isa before = kernel_isa();
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::portable}) {
    if (!isa_runs_here(isa)) {
      WARN("skipped the " << isa_name(isa) << " body: this CPU cannot run it");
      continue;
    }
    use_isa_for_testing(isa);
    INFO(isa_name(isa) << " body");
    f(isa);
  }
  use_isa_for_testing(before);
}

std::vector<float> random_floats(size_t n, uint32_t seed, float spread = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

// max |got - want| / (|want| + margin) over the elements
double worst_error(const std::vector<float>& got, const std::vector<double>& want, double margin) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / (std::abs(want[i]) + margin));
  return worst;
}

// RoPE of one row of d by the rotate-half tables c, s (kernels/block_kernels.h), as a
// matrix R; transposed: R^T x.
std::vector<double> rope(const float* x, const float* c, const float* s, int64_t d, bool transposed) {
  const int64_t half = d / 2;
  std::vector<double> out(size_t(d), 0.0);
  for (int64_t i = 0; i < d; ++i) {
    const int64_t j = i < half ? i + half : i - half;  // R[i][i] = c[i], R[i][j] = s[i]
    if (!transposed) {
      out[size_t(i)] += double(c[i]) * x[i] + double(s[i]) * x[j];
    } else {
      out[size_t(i)] += double(c[i]) * x[i];
      out[size_t(j)] += double(s[i]) * x[i];
    }
  }
  return out;
}

}  // namespace

TEST_CASE("kernels: the choice is made once, fixed is the AVX2 body, eligibility is a constant") {
  CHECK(isas_runnable_here().back() == Isa::portable);
  CHECK(isa_for(KernelSet::fixed) == (isa_runs_here(Isa::avx2) ? Isa::avx2 : Isa::portable));
  CHECK(isa_for(KernelSet::native) == best_isa_here());
  CHECK(parse_kernel_set("native") == KernelSet::native);
  CHECK_THROWS_WITH(parse_kernel_set("fast"), Catch::Contains("expected fixed or native"));
  setenv("SHAPELAW_CPU_CAPABILITY", "portable", 1);
  CHECK(isa_for(KernelSet::native) == Isa::portable);
  setenv("SHAPELAW_CPU_CAPABILITY", "avx9", 1);
  CHECK_THROWS_WITH(isa_for(KernelSet::native), Catch::Contains("SHAPELAW_CPU_CAPABILITY"));
  unsetenv("SHAPELAW_CPU_CAPABILITY");
  // which shapes take a kernel: the same whichever body runs
  static_assert(gemm_fits(4, 16) && gemm_fits(64, 48) && !gemm_fits(6, 16) && !gemm_fits(4, 8), "");
  static_assert(head_rows_supported(16) && head_rows_supported(32) && !head_rows_supported(8) &&
                    !head_rows_supported(64),
                "");
}

TEST_CASE("kernels: gemm equals a naive triple loop (strides, bias, base, alpha)") {
  for_each_isa([](Isa) {
    for (auto [M, N, K] : {std::tuple{4, 16, 1}, std::tuple{8, 32, 16}, std::tuple{12, 48, 37}}) {
      INFO(M << "x" << N << "x" << K);
      for (bool transposed_a : {false, true}) {
        const auto A = random_floats(size_t(M * K), 1), B = random_floats(size_t(K * N), 2);
        const auto bias = random_floats(size_t(N), 3), base = random_floats(size_t(M * N), 4);
        std::vector<float> C(size_t(M * N));
        const int64_t a_row = transposed_a ? 1 : K, a_col = transposed_a ? M : 1;
        gemm({M, N, K, A.data(), a_row, a_col, B.data(), N, C.data(), N, 0.5f, base.data(), bias.data()});
        std::vector<double> want(size_t(M * N));
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            double sum = 0;
            for (int64_t k = 0; k < K; ++k) sum += double(A[size_t(m * a_row + k * a_col)]) * B[size_t(k * N + n)];
            want[size_t(m * N + n)] = base[size_t(m * N + n)] + 0.5 * (sum + bias[size_t(n)]);
          }
        CHECK(worst_error(C, want, 1.0) < 1e-5);
      }
    }
  });
}

TEST_CASE("kernels: layernorm and rmsnorm forward and backward equal the formulas") {
  for_each_isa([](Isa) {
    for (bool centered : {true, false}) {
      const int64_t rows = 5, W = 24;
      const float eps = 1e-5f;
      const auto x = random_floats(size_t(rows * W), 5, 2.0f), gain = random_floats(size_t(W), 6);
      const auto shift = random_floats(size_t(W), 7), dy = random_floats(size_t(rows * W), 8);
      const auto base = random_floats(size_t(rows * W), 9);
      std::vector<float> y(x.size()), mean(rows), rstd(rows), dx(x.size()), dgain(W), dshift(W);
      const NormShape n{rows, W, centered, eps};
      norm_forward(n, x.data(), gain.data(), centered ? shift.data() : nullptr, y.data(),
                   centered ? mean.data() : nullptr, rstd.data());
      norm_backward(n, x.data(), gain.data(), centered ? mean.data() : nullptr, rstd.data(), dy.data(), base.data(),
                    dx.data(), dgain.data(), centered ? dshift.data() : nullptr);
      std::vector<double> want_y(x.size()), want_dx(x.size()), want_dgain(size_t(W), 0.0), want_dshift(size_t(W), 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x.data() + r * W;
        double mu = 0, var = 0;
        if (centered) {
          for (int64_t i = 0; i < W; ++i) mu += xr[i];
          mu /= double(W);
        }
        for (int64_t i = 0; i < W; ++i) var += (xr[i] - mu) * (xr[i] - mu);
        const double s = 1.0 / std::sqrt(var / double(W) + eps);
        double sum_g = 0, sum_gx = 0;
        for (int64_t i = 0; i < W; ++i) {
          const double xhat = (xr[i] - mu) * s, g = double(dy[size_t(r * W + i)]) * gain[size_t(i)];
          want_y[size_t(r * W + i)] = xhat * gain[size_t(i)] + (centered ? shift[size_t(i)] : 0.0);
          sum_g += g, sum_gx += g * xhat;
          want_dgain[size_t(i)] += dy[size_t(r * W + i)] * xhat;
          want_dshift[size_t(i)] += dy[size_t(r * W + i)];
        }
        for (int64_t i = 0; i < W; ++i) {
          const double xhat = (xr[i] - mu) * s, g = double(dy[size_t(r * W + i)]) * gain[size_t(i)];
          want_dx[size_t(r * W + i)] =
              base[size_t(r * W + i)] + s * (g - (centered ? sum_g / double(W) : 0.0) - xhat * sum_gx / double(W));
        }
      }
      INFO((centered ? "layernorm" : "rmsnorm"));
      CHECK(worst_error(y, want_y, 1.0) < 1e-5);
      CHECK(worst_error(dx, want_dx, 1.0) < 1e-5);
      CHECK(worst_error(dgain, want_dgain, 1.0) < 1e-5);
      if (centered) CHECK(worst_error(dshift, want_dshift, 1.0) < 1e-5);
    }
  });
}

TEST_CASE("kernels: GELU and its slope equal x Phi(x) and Phi(x) + x phi(x) (erf), tails included") {
  for_each_isa([](Isa) {
    for (int64_t n : {1, 7, 16, 45}) {
      auto x = random_floats(size_t(n), 10, 3.0f);
      x[0] = -12.0f;  // deep in the tail
      std::vector<float> y(static_cast<size_t>(n)), slope(static_cast<size_t>(n));
      gelu_forward(n, x.data(), y.data(), slope.data());
      std::vector<double> want_y(static_cast<size_t>(n)), want_slope(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const double v = x[size_t(i)], cdf = 0.5 * (1 + std::erf(v / std::sqrt(2.0)));
        want_y[size_t(i)] = v * cdf;
        want_slope[size_t(i)] = cdf + v * std::exp(-v * v / 2) / std::sqrt(2 * M_PI);
      }
      INFO(n << " values");
      // A&S 7.1.26: |erf error| < 1.5e-7, so |y error| < 1e-6 for |x| <= 12
      CHECK(worst_error(y, want_y, 1.0) < 2e-6);
      CHECK(worst_error(slope, want_slope, 1.0) < 2e-6);
    }
  });
}

TEST_CASE("kernels: causal attention with RoPE, forward and backward, equals the naive softmax(QK^T)V") {
  struct Shape {
    int64_t T, H, d;
  };
  for_each_isa([](Isa) {
    for (const Shape sh : {Shape{64, 1, 16}, Shape{7, 3, 4}, Shape{9, 2, 2}, Shape{20, 2, 8}}) {
      const int64_t T = sh.T, H = sh.H, d = sh.d, W = H * d, sequences = 2;
      const float scale = 1.0f / std::sqrt(float(d)), dy_scale = 0.7f;
      INFO("T " << T << " H " << H << " d " << d);
      const auto qkv = random_floats(size_t(sequences * T * 3 * W), 11), dy = random_floats(size_t(sequences * T * W), 12);
      std::vector<float> cos(size_t(T * d)), sin(size_t(T * d));
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < d; ++i) {
          const double angle = double(t) / std::pow(10000.0, double(2 * (i % (d / 2))) / double(d));
          cos[size_t(t * d + i)] = float(std::cos(angle));
          sin[size_t(t * d + i)] = float(i < d / 2 ? -std::sin(angle) : std::sin(angle));
        }
      const AttentionShape a{T, H, d, scale};
      std::vector<float> y(size_t(sequences * T * W)), lse(size_t(sequences * H * T)), dqkv(qkv.size());
      attention_forward(a, sequences, qkv.data(), cos.data(), sin.data(), y.data(), lse.data());
      attention_backward(a, sequences, qkv.data(), cos.data(), sin.data(), y.data(), lse.data(), dy.data(), dy_scale,
                         dqkv.data());

      std::vector<double> want_y(y.size()), want_lse(lse.size()), want_dqkv(qkv.size(), 0.0);
      for (int64_t n = 0; n < sequences; ++n)
        for (int64_t h = 0; h < H; ++h) {
          auto at = [&](int64_t t, int64_t part) { return qkv.data() + (n * T + t) * 3 * W + part * W + h * d; };
          std::vector<std::vector<double>> q(static_cast<size_t>(T)), k(static_cast<size_t>(T)), p(static_cast<size_t>(T), std::vector<double>(static_cast<size_t>(T)));
          for (int64_t t = 0; t < T; ++t) {
            q[size_t(t)] = rope(at(t, 0), &cos[size_t(t * d)], &sin[size_t(t * d)], d, false);
            k[size_t(t)] = rope(at(t, 1), &cos[size_t(t * d)], &sin[size_t(t * d)], d, false);
          }
          std::vector<std::vector<double>> dq(size_t(T), std::vector<double>(size_t(d), 0.0)), dk = dq;
          for (int64_t t = 0; t < T; ++t) {
            double max = -1e300, sum = 0;
            std::vector<double> s(size_t(t + 1));
            for (int64_t j = 0; j <= t; ++j) {
              double dot = 0;
              for (int64_t i = 0; i < d; ++i) dot += q[size_t(t)][size_t(i)] * k[size_t(j)][size_t(i)];
              s[size_t(j)] = scale * dot;
              max = std::max(max, s[size_t(j)]);
            }
            for (int64_t j = 0; j <= t; ++j) sum += std::exp(s[size_t(j)] - max);
            want_lse[size_t((n * H + h) * T + t)] = max + std::log(sum);
            for (int64_t j = 0; j <= t; ++j) p[size_t(t)][size_t(j)] = std::exp(s[size_t(j)] - max) / sum;
            // forward: y = P V; backward: dO = dy_scale dy, dV = P^T dO, dS = P (dO V^T - dO . y)
            const float* go = dy.data() + (n * T + t) * W + h * d;
            double delta = 0;
            for (int64_t i = 0; i < d; ++i) {
              double o = 0;
              for (int64_t j = 0; j <= t; ++j) o += p[size_t(t)][size_t(j)] * at(j, 2)[i];
              want_y[size_t((n * T + t) * W + h * d + i)] = o;
              delta += dy_scale * double(go[i]) * o;
            }
            for (int64_t j = 0; j <= t; ++j) {
              double dp = 0;
              for (int64_t i = 0; i < d; ++i) {
                dp += dy_scale * double(go[i]) * at(j, 2)[i];
                want_dqkv[size_t((n * T + j) * 3 * W + 2 * W + h * d + i)] += p[size_t(t)][size_t(j)] * dy_scale * go[i];
              }
              const double ds = scale * p[size_t(t)][size_t(j)] * (dp - delta);
              for (int64_t i = 0; i < d; ++i) {
                dq[size_t(t)][size_t(i)] += ds * k[size_t(j)][size_t(i)];
                dk[size_t(j)][size_t(i)] += ds * q[size_t(t)][size_t(i)];
              }
            }
          }
          for (int64_t t = 0; t < T; ++t)
            for (int part = 0; part < 2; ++part) {
              std::vector<float> g(static_cast<size_t>(d));
              for (int64_t i = 0; i < d; ++i) g[size_t(i)] = float((part == 0 ? dq : dk)[size_t(t)][size_t(i)]);
              const auto back = rope(g.data(), &cos[size_t(t * d)], &sin[size_t(t * d)], d, true);
              for (int64_t i = 0; i < d; ++i) want_dqkv[size_t((n * T + t) * 3 * W + part * W + h * d + i)] = back[size_t(i)];
            }
        }
      CHECK(worst_error(y, want_y, 1.0) < 1e-5);
      CHECK(worst_error(lse, want_lse, 1.0) < 1e-5);
      CHECK(worst_error(dqkv, want_dqkv, 1.0) < 2e-5);
    }
  });
}

TEST_CASE("kernels: softmax rows match a double-precision softmax (tails, underflow, equal logits)") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for_each_isa([&](Isa) {
    for (int64_t vocab : {1, 3, 15, 16, 17, 33, 1000}) {
      const int64_t rows = 5;
      std::vector<float> logits(size_t(rows * vocab)), log_normalizer(rows);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < vocab; ++j) logits[size_t(r * vocab + j)] = r == 4 ? 2.5f : normal(rng) * float(5 * r + 1);
      const std::vector<float> original = logits;
      softmax_rows_in_place(logits.data(), rows, vocab, 0.5f, log_normalizer.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float* x = original.data() + r * vocab;
        const double max = *std::max_element(x, x + vocab);
        double sum = 0;
        for (int64_t j = 0; j < vocab; ++j) sum += std::exp(double(x[j]) - max);
        INFO("vocab " << vocab << " row " << r);
        CHECK(log_normalizer[size_t(r)] == Approx(max + std::log(sum)).epsilon(1e-6).margin(1e-6));
        double worst = 0;
        for (int64_t j = 0; j < vocab; ++j) {
          const double want = 0.5 * std::exp(double(x[j]) - max) / sum;
          worst = std::max(worst, std::abs(logits[size_t(r * vocab + j)] - want) / std::max(want, 1e-30));
        }
        CHECK(worst < 1e-5);
      }
    }
  });
}

TEST_CASE("kernels: the small-width head equals logits, loss and both gradients computed naively") {
  for_each_isa([](Isa) {
    for (int64_t width : {16, 32})
      for (int64_t rows : {1, 6, 9}) {
        const int64_t V = 53;
        INFO(width << "W, " << rows << " rows");
        const auto h = random_floats(size_t(rows * width), 13), U = random_floats(size_t(V * width), 14, 0.3f);
        std::vector<float> UT(U.size());
        for (int64_t j = 0; j < V; ++j)
          for (int64_t k = 0; k < width; ++k) UT[size_t(k * V + j)] = U[size_t(j * width + k)];
        std::vector<int64_t> targets(static_cast<size_t>(rows));
        for (int64_t i = 0; i < rows; ++i) targets[size_t(i)] = (7 * i + 3) % V;
        const auto dweight0 = random_floats(U.size(), 15);  // accumulated into
        std::vector<float> loss(static_cast<size_t>(rows)), dh(h.size()), dweight = dweight0;
        const float scale = 0.25f;
        head_rows({h.data(), U.data(), UT.data(), targets.data(), rows, width, V, scale, loss.data(), dh.data(),
                   dweight.data()});
        std::vector<double> want_loss(static_cast<size_t>(rows)), want_dh(h.size(), 0.0), want_dw(dweight0.begin(), dweight0.end());
        for (int64_t i = 0; i < rows; ++i) {
          std::vector<double> z(static_cast<size_t>(V));
          double max = -1e300, sum = 0;
          for (int64_t j = 0; j < V; ++j) {
            for (int64_t k = 0; k < width; ++k) z[size_t(j)] += double(h[size_t(i * width + k)]) * U[size_t(j * width + k)];
            max = std::max(max, z[size_t(j)]);
          }
          for (int64_t j = 0; j < V; ++j) sum += std::exp(z[size_t(j)] - max);
          want_loss[size_t(i)] = max + std::log(sum) - z[size_t(targets[size_t(i)])];
          for (int64_t j = 0; j < V; ++j) {
            const double g = scale * (std::exp(z[size_t(j)] - max) / sum - (j == targets[size_t(i)] ? 1.0 : 0.0));
            for (int64_t k = 0; k < width; ++k) {
              want_dh[size_t(i * width + k)] += g * U[size_t(j * width + k)];
              want_dw[size_t(j * width + k)] += g * h[size_t(i * width + k)];
            }
          }
        }
        CHECK(worst_error(loss, want_loss, 1.0) < 1e-5);
        CHECK(worst_error(dh, want_dh, 1e-2) < 1e-4);
        CHECK(worst_error(dweight, want_dw, 1.0) < 1e-5);
      }
    HeadRows unsupported{};
    unsupported.width = 64;
    CHECK_THROWS_WITH(head_rows(unsupported), Catch::Contains("width 64"));
  });
}

TEST_CASE("kernels: AdamW's range update equals the scalar formula bit for bit in every body") {
  for_each_isa([](Isa) {
    const int64_t n = 1000;  // vector bodies and scalar tails
    const auto grad = random_floats(size_t(n), 16);
    std::vector<float> p = random_floats(size_t(n), 17), m = random_floats(size_t(n), 18, 0.1f), v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = 0.01f * float(i % 7 + 1);
    const AdamWCoefficients c{0.999f, 0.9f, 0.95f, 0.5f, 0.1f, 0.05f, 0.3f, 1e-8f, 3e-3f};
    std::vector<float> want_p = p, want_m = m, want_v = v;
    for (int64_t i = 0; i < n; ++i) {
      const float g = grad[size_t(i)] * c.g_scale;
      want_m[size_t(i)] = c.b1 * want_m[size_t(i)] + c.one_minus_b1 * g;
      want_v[size_t(i)] = c.b2 * want_v[size_t(i)] + c.one_minus_b2 * g * g;
      const float decayed = want_p[size_t(i)] * c.decay;
      want_p[size_t(i)] =
          decayed + -c.step_size * (want_m[size_t(i)] / (std::sqrt(want_v[size_t(i)]) / c.sqrt_correction2 + c.eps));
    }
    adamw_range(p.data(), grad.data(), m.data(), v.data(), n, c);
    CHECK(p == want_p);
    CHECK(m == want_m);
    CHECK(v == want_v);
  });
}
