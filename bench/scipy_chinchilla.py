# scipy side of the fit-law Chinchilla benchmark: Huber(1e-3) on log residuals of
# log L = LSE(a - alpha log N, b - beta log T, e), summed, BFGS from Chinchilla's grid
# (4,500 starts), as in Hoffmann et al. 2022 / Besiroglu et al. 2024.
import sys, time, itertools
import numpy as np
from scipy.optimize import minimize
from scipy.special import huber, logsumexp
d = np.genfromtxt(sys.argv[1], delimiter=",", names=True, dtype=None, encoding=None)
lN, lT, lL = np.log(d["params_nonembedding"]), np.log(d["tokens"]), np.log(d["loss"])
stride = int(sys.argv[2]) if len(sys.argv) > 2 else 1
def obj(p):
    a, b, e, al, be = p
    pred = logsumexp([a - al * lN, b - be * lT, e * np.ones_like(lN)], axis=0)
    return np.sum(huber(1e-3, pred - lL))
grid = list(itertools.product(np.arange(0, 30, 5), np.arange(0, 30, 5), np.arange(-1, 1.5, 0.5),
                              np.arange(0, 2.5, 0.5), np.arange(0, 2.5, 0.5)))[::stride]
t0 = time.time()
best = None
for s in grid:
    r = minimize(obj, s, method="BFGS")
    if best is None or r.fun < best.fun:
        best = r
dt = time.time() - t0
a, b, e, al, be = best.x
print(f"scipy BFGS: {len(grid)} starts, {dt:.1f} s, best objective {best.fun:.10g}, "
      f"E={np.exp(e):.4f} A={np.exp(a):.2f} B={np.exp(b):.2f} alpha={al:.4f} beta={be:.4f}")
