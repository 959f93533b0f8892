# Generates the 240-run synthetic table of the fit-law benchmark (docs/benchmarks.md).
# 240 synthetic Chinchilla runs: L = E + A/N^alpha + B/T^beta with Chinchilla's published
# parameters, 1% log-normal noise, seed 0; N log-spaced 4.4e7..1.6e10 (20), T 1e9..1e12 (12)
import math, random
random.seed(0)
E, A, B, al, be = 1.69, 406.4, 410.7, 0.34, 0.28
print("run,depth,width,params_nonembedding,tokens,loss")
k = 0
for i in range(20):
    N = 4.4e7 * (1.6e10 / 4.4e7) ** (i / 19)
    for j in range(12):
        T = 1e9 * 1000 ** (j / 11)
        L = (E + A / N**al + B / T**be) * math.exp(random.gauss(0, 0.01))
        print(f"r{k},8,1024,{N:.6g},{T:.6g},{L:.6f}")
        k += 1
