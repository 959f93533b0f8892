#pragma once
// Is a fitted law identified by the data, to the precision the optimizer works at? Two
// kinds of evidence, for a relative objective tolerance tol (1e-9):
//  - the multi-start end points whose objective is within tol·F of the best F, and
//  - the quadratic model of the objective at the optimum, F(p) ≈ F + ½·ΔpᵀHΔp with H = JᵀWJ
//    (W the IRLS weights of the objective): along parameter j it stays within tol·F over
//    ±sqrt(2·tol·F·[H⁻¹]_jj), the other parameters following.
// A parameter whose range over either is wider than 1e-3 of its size (its largest value
// there, or for a value near zero its natural size: a nonlinear parameter's largest start,
// a linear coefficient's value that makes its term as large as the mean response) is not
// identified: which value the fit reports is decided by rounding, so input order or
// arithmetic can move it (the cause of order-dependent answers). Ranges are clipped to the
// parameter's bounds; a direction H does not constrain at all makes the range infinite.
#include <string>
#include <vector>

#include "fit/fitter.h"

namespace shapelaw::fit {

struct ParameterRange {
  std::string name;
  double lo = 0, hi = 0;  // ±inf when unbounded
  bool identified = true;
};

struct Identification {
  double tolerance = 1e-9;  // relative to the best objective
  int solutions_within = 0; // multi-start end points within tolerance (the best included)
  std::vector<ParameterRange> ranges;  // every free parameter, param_names order
  std::vector<std::string> not_identified;
  bool identified() const { return not_identified.empty(); }
  // "A, alpha not identified: objective within 1e-09 of the best over A ∈ [..], alpha ∈ [..]"
  std::string message() const;
};

Identification identify(const Model& m, const std::vector<Point>& pts, const FitResult& fr, const FitOptions& o,
                        double tolerance = 1e-9);

}  // namespace shapelaw::fit
