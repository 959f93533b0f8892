# Writes 15 summary.json files shaped like the micro-study (pipelines/grids/micro.grid):
# D in {1,2,4,8,16} x W in {16,32,64}, 1,179,648 tokens each, vocabulary 2048, losses on
# U-curves in depth shaped like the micro study's measured ones (best D = 1, 1, 2; the deepest
# worse by about +0.2, +0.39, +0.29 nats here, +0.23, +0.42, +0.27 in `make`'s report) plus a fixed small jitter.
# Usage: python3 bench/gen_micro.py OUTDIR   (writes OUTDIR/w{W}-d{D}/summary.json)
import json, math, os, sys
out = sys.argv[1]
curves = {16: [5.2595, 5.2668, 5.2902, 5.3475, 5.4669],
          32: [4.9829, 4.9957, 5.0503, 5.1491, 5.3720],
          64: [4.8711, 4.8522, 4.8996, 4.9874, 5.1440]}
V, T = 2048, 1179648
for W, losses in curves.items():
    for k, D in enumerate([1, 2, 4, 8, 16]):
        jitter = 0.004 * math.sin(3.1 * k + 0.7 * W)
        non_emb = D * (12 * W * W + 4 * W) + 2 * W
        emb = 2 * V * W
        s = {"format": "shapelaw.summary", "version": 1, "run_id": f"w{W}-d{D}", "depth": D, "width": W,
             "heads": max(1, W // 16), "head_dim": 16, "vocab_size": V, "seq_len": 128,
             "params": {"total": non_emb + emb, "non_embedding": non_emb, "embedding": emb,
                        "paper_12DW2": 12 * D * W * W},
             "tokens": T, "final_val_loss": round(losses[k] + jitter, 6),
             "config": {"lr": 3e-3, "min_lr": 3e-4, "seed": 42, "tokens": T,
                        "model": {"depth": D, "width": W, "vocab_size": V, "seq_len": 128}}}
        d = os.path.join(out, f"w{W}-d{D}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(s, f)
