"""PyTorch side of bench/train-step.ts: the same training step in eager PyTorch autograd, float32.

Run as a server so the benchmark can alternate ours and PyTorch's in one run: it reads one JSON command per line on
stdin and answers one JSON line per command on stdout: {"cmd": "blas"} times this process's own 2048^3 matmul and
names its BLAS (blas.py), before the model exists, so that the bench can refuse a crippled reference without building
it; {"cmd": "build"} builds the model; {"cmd": "step", "T": 512}; {"cmd": "quit"}.
The model is written by hand (Debian has no transformers/peft), following HF's Qwen2/Llama modeling code:
RMSNorm (x * rsqrt(mean(x^2) + eps) * w), q/k/v with Qwen2 biases, half-split RoPE, causal GQA attention, SwiGLU MLP,
tied lm_head. LoRA follows PEFT: y = x W^T + b + scale * (x A^T) B^T, A: [r, in], B: [out, r].
"""
import json
import math
import resource
import sys
import time

import torch
import torch.nn.functional as F

import blas

PROJ = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def build(cfg, seed):
    g = torch.Generator().manual_seed(seed)
    H, F_, V = cfg["hidden"], cfg["ffn"], cfg["vocab"]
    nh, nkv = cfg["heads"], cfg["kv_heads"]
    d = H // nh
    r = cfg["rank"]

    def rnd(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    E = rnd(V, H)
    layers = []
    for _ in range(cfg["layers"]):
        shapes = {
            "q_proj": (nh * d, H), "k_proj": (nkv * d, H), "v_proj": (nkv * d, H), "o_proj": (H, nh * d),
            "gate_proj": (F_, H), "up_proj": (F_, H), "down_proj": (H, F_),
        }
        L = {"in_norm": torch.ones(H), "post_norm": torch.ones(H)}
        for p, (o, i) in shapes.items():
            L[p] = rnd(o, i)
            # PEFT init is B = 0; the benchmark uses a nonzero B so every LoRA gradient is real work on both sides.
            L[p + ".A"] = (torch.rand(r, i, generator=g) * 2 - 1) / math.sqrt(i)
            L[p + ".B"] = rnd(o, r, std=0.01)
            L[p + ".A"].requires_grad_(True)
            L[p + ".B"].requires_grad_(True)
        L["q_bias"], L["k_bias"], L["v_bias"] = rnd(nh * d), rnd(nkv * d), rnd(nkv * d)
        layers.append(L)
    return {"E": E, "layers": layers, "final_norm": torch.ones(H)}


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope_tables(T, d, theta):
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    ang = torch.outer(torch.arange(T, dtype=torch.float32), inv)  # [T, d/2]
    emb = torch.cat([ang, ang], dim=-1)  # [T, d]
    return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


def forward_logprobs(m, cfg, tokens, lora):
    """Per-token log p(tokens[t+1] | tokens[:t+1]) for t in [0, T-1): [T-1]."""
    H, nh, nkv = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
    d = H // nh
    T = tokens.shape[0]
    scale = cfg["alpha"] / cfg["rank"]
    dev = tokens.device
    cos, sin = (t.to(dev) for t in rope_tables(T, d, cfg["rope_theta"]))
    mask = torch.full((T, T), float("-inf")).triu(1).to(dev)
    eps = cfg["eps"]

    def lin(x, L, p, bias=None):
        y = F.linear(x, L[p], bias)
        if lora:
            y = y + scale * F.linear(F.linear(x, L[p + ".A"]), L[p + ".B"])
        return y

    x = m["E"][tokens]  # [T, H]
    for L in m["layers"]:
        h = rmsnorm(x, L["in_norm"], eps)
        q = lin(h, L, "q_proj", L["q_bias"]).view(T, nh, d).transpose(0, 1)  # [nh, T, d]
        k = lin(h, L, "k_proj", L["k_bias"]).view(T, nkv, d).transpose(0, 1)  # [nkv, T, d]
        v = lin(h, L, "v_proj", L["v_bias"]).view(T, nkv, d).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=0)  # [nh, T, d]
        v = v.repeat_interleave(nh // nkv, dim=0)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d) + mask, dim=-1)  # [nh, T, T]
        o = (att @ v).transpose(0, 1).reshape(T, nh * d)
        x = x + lin(o, L, "o_proj")
        h = rmsnorm(x, L["post_norm"], eps)
        x = x + lin(F.silu(lin(h, L, "gate_proj")) * lin(h, L, "up_proj"), L, "down_proj")
    x = rmsnorm(x, m["final_norm"], eps)
    logits = F.linear(x[:-1], m["E"])  # tied lm_head: [T-1, V]
    return torch.log_softmax(logits, dim=-1).gather(1, tokens[1:, None])[:, 0]


def step(m, cfg, T, seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, cfg["vocab"], (T,), generator=g).to(m["E"].device)
    adv = 1.0
    beta = 0.001
    for L in m["layers"]:
        for p in PROJ:
            L[p + ".A"].grad = None
            L[p + ".B"].grad = None
    with torch.no_grad():
        ref = forward_logprobs(m, cfg, tokens, lora=False)
    pi = forward_logprobs(m, cfg, tokens, lora=True)
    # Same objective as src-main/common/engine/objectives.ts's policy gradient: -A * logp + beta * k3 KL to the base.
    kl = torch.exp(ref - pi) - (ref - pi) - 1
    loss = (-adv * pi + beta * kl).mean()
    loss.backward()
    gnorm = math.sqrt(sum(float((L[p + s].grad ** 2).sum()) for L in m["layers"] for p in PROJ for s in (".A", ".B")))
    return float(loss), gnorm


def to_device(m, dev):
    """The model on `dev` ("cuda" for bench/gpu-step.ts), LoRA tensors kept as leaves that take gradients."""
    def mv(t):
        return t.detach().to(dev).requires_grad_(t.requires_grad)
    return {"E": mv(m["E"]), "final_norm": mv(m["final_norm"]), "layers": [{k: mv(v) for k, v in L.items()} for L in m["layers"]]}


def sync(dev):
    if dev.startswith("cuda"):
        torch.cuda.synchronize()


def main():
    cfg = json.loads(sys.argv[1])
    torch.set_num_threads(cfg.get("threads", 2))
    dev = cfg.get("device", "cpu")
    m = None
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        if cmd["cmd"] == "blas":
            print(json.dumps(blas.report(cmd.get("seconds", 1.0))), flush=True)
        elif cmd["cmd"] == "build":
            t0 = time.time()
            m = to_device(build(cfg, cfg.get("seed", 0)), dev)
            print(json.dumps({"ready": True, "build_s": time.time() - t0, "torch": torch.__version__,
                              "threads": torch.get_num_threads(), "device": dev}), flush=True)
        elif cmd["cmd"] == "step":
            if m is None:
                raise RuntimeError("train_step.py: step before build")
            sync(dev)
            w0, c0 = time.perf_counter(), time.process_time()
            loss, gnorm = step(m, cfg, cmd["T"], cmd.get("seed", 1))
            sync(dev)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            print(json.dumps({"wall_s": wall, "cpu_s": cpu, "loss": loss, "grad_norm": gnorm, "peak_rss": rss}),
                  flush=True)
        else:
            raise ValueError(f"train_step.py: unknown command {cmd['cmd']!r}")


if __name__ == "__main__":
    main()
