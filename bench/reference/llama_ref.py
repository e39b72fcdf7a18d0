#!/usr/bin/env python3
"""Hand-written PyTorch reference for Llama-family models (HF LlamaForCausalLM, Qwen2ForCausalLM).

The independent referee for Rein's forward pass: it shares no code with the engine. It reads an HF model
directory (config.json, model.safetensors or shards + index) and optionally a PEFT LoRA directory, runs the
forward in float64 (or float32), and writes logits and target-token logprobs.

Follows transformers' modeling_llama.py / modeling_qwen2.py (v4.45+): RMSNorm (x * rsqrt(mean(x^2) + eps) * w),
RoPE half-split (rotate_half) with rope_theta and Llama-3 / linear scaling (modeling_rope_utils.py), GQA by
repeating each KV head NH/KVH times, causal softmax attention scaled by 1/sqrt(D), SwiGLU MLP, tied
embeddings. PEFT LoRA (peft/tuners/lora/layer.py): y = x W^T + scale * (x A^T) B^T, scale = alpha/r or
alpha/sqrt(r) with use_rslora.

Usage:
  llama_ref.py --model DIR --ids 1,2,3 [--adapter DIR] [--targets 2,3,-1] [--dtype float64|float32]
               [--logits OUT.f64] [--out OUT.json]
  llama_ref.py --jobs JOBS.json     (many runs in one process: [{model, ids, adapter?, targets?, logits?, out?}])
--logits writes the [T, V] logits as raw little-endian float64, row-major. --out writes JSON with the shape,
the logprob of targets[t] at each position t (null where the target is -1), and the wall time.
Only torch and numpy are needed (Debian python3-torch 1.13 has no transformers, safetensors or peft).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch

DTYPES = {'F32': np.float32, 'F16': np.float16, 'F64': np.float64, 'I32': np.int32, 'I64': np.int64}


def read_safetensors(path):
    """{name: float64 numpy array}. Format: u64 LE header length, JSON header, raw LE bytes."""
    with open(path, 'rb') as f:
        (n,) = struct.unpack('<Q', f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, e in header.items():
            if name == '__metadata__':
                continue
            b, en = e['data_offsets']
            f.seek(base + b)
            raw = f.read(en - b)
            if e['dtype'] == 'BF16':
                # bf16 is the high half of an f32.
                arr = (np.frombuffer(raw, dtype='<u2').astype(np.uint32) << 16).view(np.float32)
            elif e['dtype'] in DTYPES:
                arr = np.frombuffer(raw, dtype=np.dtype(DTYPES[e['dtype']]).newbyteorder('<'))
            else:
                raise ValueError(f'{path}: dtype {e["dtype"]} of {name} is not supported')
            out[name] = arr.astype(np.float64).reshape(e['shape'])
    return out


def load_weights(model_dir):
    index = os.path.join(model_dir, 'model.safetensors.index.json')
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)['weight_map'].values()))
    else:
        files = ['model.safetensors']
    w = {}
    for name in files:
        w.update(read_safetensors(os.path.join(model_dir, name)))
    return w


class Config:
    def __init__(self, c):
        arch = c['architectures'][0]
        if arch not in ('LlamaForCausalLM', 'Qwen2ForCausalLM'):
            raise ValueError(f'unsupported architecture {arch}')
        self.arch = arch
        self.hidden = c['hidden_size']
        self.layers = c['num_hidden_layers']
        self.heads = c['num_attention_heads']
        self.kv_heads = c.get('num_key_value_heads') or self.heads
        self.head_dim = c.get('head_dim') or self.hidden // self.heads
        self.eps = c['rms_norm_eps']
        self.theta = c.get('rope_theta', 10000.0)
        self.rope_scaling = c.get('rope_scaling')
        self.tied = c.get('tie_word_embeddings', False)
        self.vocab = c['vocab_size']


def inv_freq(cfg):
    d = cfg.head_dim
    inv = 1.0 / (cfg.theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    rs = cfg.rope_scaling
    if not rs:
        return inv
    kind = rs.get('rope_type', rs.get('type'))
    if kind == 'default':
        return inv
    if kind == 'linear':
        return inv / rs['factor']
    if kind == 'llama3':
        # transformers modeling_rope_utils._compute_llama3_parameters
        factor = rs['factor']
        low, high = rs['low_freq_factor'], rs['high_freq_factor']
        old = rs['original_max_position_embeddings']
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        return torch.where(medium, smoothed, scaled)
    raise ValueError(f'unsupported rope_scaling {kind}')


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Model:
    def __init__(self, model_dir, dtype=torch.float64, adapter_dir=None):
        with open(os.path.join(model_dir, 'config.json')) as f:
            self.cfg = Config(json.load(f))
        self.dtype = dtype
        self.w = {k: torch.from_numpy(v).to(dtype) for k, v in load_weights(model_dir).items()}
        self.lora = {}
        self.lora_scale = 0.0
        if adapter_dir:
            with open(os.path.join(adapter_dir, 'adapter_config.json')) as f:
                ac = json.load(f)
            r, alpha = ac['r'], ac['lora_alpha']
            self.lora_scale = alpha / math.sqrt(r) if ac.get('use_rslora') else alpha / r
            t = read_safetensors(os.path.join(adapter_dir, 'adapter_model.safetensors'))
            prefix = 'base_model.model.'
            for k, v in t.items():
                # base_model.model.<module>.lora_A.weight -> <module>.weight
                module, ab = k[len(prefix):].rsplit('.lora_', 1)
                self.lora.setdefault(module + '.weight', {})[ab[0]] = torch.from_numpy(v).to(dtype)

    def linear(self, x, key, bias_key=None):
        y = x @ self.w[key].T
        if bias_key is not None and bias_key in self.w:
            y = y + self.w[bias_key]
        ab = self.lora.get(key)
        if ab is not None:
            y = y + self.lora_scale * ((x @ ab['A'].T) @ ab['B'].T)
        return y

    def forward(self, ids):
        """ids: list of ints -> logits [T, V]."""
        c, w = self.cfg, self.w
        T = len(ids)
        ids_t = torch.tensor(ids, dtype=torch.long)
        h = w['model.embed_tokens.weight'][ids_t]  # [T, H]
        freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq(c))  # [T, D/2]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(self.dtype), emb.sin().to(self.dtype)  # [T, D]
        mask = torch.full((T, T), float('-inf'), dtype=self.dtype).triu(1)
        rep = c.heads // c.kv_heads
        for i in range(c.layers):
            p = f'model.layers.{i}.'
            x = rms_norm(h, w[p + 'input_layernorm.weight'], c.eps)
            q = self.linear(x, p + 'self_attn.q_proj.weight', p + 'self_attn.q_proj.bias')
            k = self.linear(x, p + 'self_attn.k_proj.weight', p + 'self_attn.k_proj.bias')
            v = self.linear(x, p + 'self_attn.v_proj.weight', p + 'self_attn.v_proj.bias')
            q = q.view(T, c.heads, c.head_dim).transpose(0, 1)  # [NH, T, D]
            k = k.view(T, c.kv_heads, c.head_dim).transpose(0, 1)  # [KVH, T, D]
            v = v.view(T, c.kv_heads, c.head_dim).transpose(0, 1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(rep, dim=0)  # transformers repeat_kv: head j uses kv head j // rep
            v = v.repeat_interleave(rep, dim=0)
            att = (q @ k.transpose(1, 2)) / math.sqrt(c.head_dim) + mask  # [NH, T, T]
            o = torch.softmax(att, dim=-1) @ v  # [NH, T, D]
            o = o.transpose(0, 1).reshape(T, c.heads * c.head_dim)
            h = h + self.linear(o, p + 'self_attn.o_proj.weight', p + 'self_attn.o_proj.bias')
            x = rms_norm(h, w[p + 'post_attention_layernorm.weight'], c.eps)
            g = self.linear(x, p + 'mlp.gate_proj.weight', p + 'mlp.gate_proj.bias')
            u = self.linear(x, p + 'mlp.up_proj.weight', p + 'mlp.up_proj.bias')
            h = h + self.linear(torch.nn.functional.silu(g) * u, p + 'mlp.down_proj.weight', p + 'mlp.down_proj.bias')
        h = rms_norm(h, w['model.norm.weight'], c.eps)
        head = w['model.embed_tokens.weight'] if c.tied else w['lm_head.weight']
        return h @ head.T  # [T, V]


def parse_ids(s):
    return [int(x) for x in s.split(',') if x.strip() != '']


def run_job(job, models, dtype):
    """job: {model, ids, adapter?, targets?, logits?, out?} -> summary dict (also written to job['out'])."""
    ids = job['ids']
    if not ids:
        raise SystemExit('ids is empty')
    key = (job['model'], job.get('adapter'))
    if key not in models:
        models[key] = Model(job['model'], dtype, job.get('adapter'))
    model = models[key]
    if max(ids) >= model.cfg.vocab or min(ids) < 0:
        raise SystemExit(f'token id outside the vocabulary (size {model.cfg.vocab})')
    t0 = time.perf_counter()
    with torch.no_grad():
        logits = model.forward(ids)
    wall = time.perf_counter() - t0
    summary = {'shape': list(logits.shape), 'dtype': str(dtype).replace('torch.', ''), 'seconds': wall, 'lora_pairs': len(model.lora)}
    targets = job.get('targets')
    if targets:
        if len(targets) != len(ids):
            raise SystemExit(f'targets has {len(targets)} entries for {len(ids)} ids')
        lp = torch.log_softmax(logits.to(torch.float64), dim=-1)
        summary['logprobs'] = [None if t < 0 else lp[i, t].item() for i, t in enumerate(targets)]
    if job.get('logits'):
        logits.to(torch.float64).numpy().astype('<f8').tofile(job['logits'])
    if job.get('out'):
        with open(job['out'], 'w') as f:
            json.dump(summary, f)
    return summary


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model')
    ap.add_argument('--ids', help='comma-separated token ids')
    ap.add_argument('--adapter')
    ap.add_argument('--targets', help='comma-separated target id per position (-1: none)')
    ap.add_argument('--dtype', choices=['float64', 'float32'], default='float64')
    ap.add_argument('--logits', help='write [T, V] logits here as raw little-endian float64')
    ap.add_argument('--out', help='write a JSON summary here (default: stdout)')
    ap.add_argument('--jobs', help='a JSON file with a list of jobs {model, ids, adapter?, targets?, logits?, out?}, '
                    'run in one process (torch is imported once, each model loaded once)')
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    dtype = torch.float64 if a.dtype == 'float64' else torch.float32
    models = {}
    if a.jobs:
        with open(a.jobs) as f:
            jobs = json.load(f)
        for job in jobs:
            run_job(job, models, dtype)
        return
    if not a.model or not a.ids:
        raise SystemExit('--model and --ids are required (or --jobs)')
    job = {'model': a.model, 'ids': parse_ids(a.ids), 'adapter': a.adapter, 'logits': a.logits, 'out': a.out}
    if a.targets:
        job['targets'] = parse_ids(a.targets)
    summary = run_job(job, models, dtype)
    if not a.out:
        print(json.dumps(summary))


if __name__ == '__main__':
    main(sys.argv[1:])
