"""The models remat plans, in PyTorch, and one training step of them, for
tools/bench/torch_gpu_bench.py and its max-batch search
(tools/bench/torch_max_batch.py):

  seed_mlp  3 linear layers 1024-1024-1024-1 with bias, loss = sum(output);
  gpt2      GPT-2 124M (12 layers, d 768, 12 heads, vocab 50257, seq 1024),
            tied lm_head, tanh GELU, no dropout, loss = cross_entropy over
            next-token labels; attention written out (matmul, softmax,
            matmul) like remat's, or F.scaled_dot_product_attention.

Both optionally checkpoint every layer (seed_mlp) or block (gpt2) with
torch.utils.checkpoint, non-reentrant. `args` is torch_gpu_bench.py's
parsed command line (tiny, batch, attention, optimizer).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint


class SeedMlp(nn.Module):
    def __init__(self, width, checkpoint=False):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width),
                                     nn.Linear(width, width),
                                     nn.Linear(width, 1)])
        self.checkpoint = checkpoint

    def forward(self, x):
        for layer in self.layers:
            if self.checkpoint and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(layer, x,
                                                      use_reentrant=False)
            else:
                x = layer(x)
        return x.sum()


class Block(nn.Module):
    def __init__(self, d, heads, attention):
        super().__init__()
        self.heads = heads
        self.attention = attention
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_proj = nn.Linear(4 * d, d)

    def attend(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        shape = (b, s, self.heads, d // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        if self.attention == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(shape[-1]))
            mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
            o = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.proj(o.transpose(1, 2).reshape(b, s, d))

    def forward(self, x):
        x = x + self.attend(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x)),
                                       approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, vocab, seq, d, layers, heads, attention,
                 checkpoint=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(
            [Block(d, heads, attention) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.checkpoint = checkpoint
        for m in self.modules():  # GPT-2's init
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, tokens, labels):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(pos)
        for block in self.blocks:
            if self.checkpoint and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(block, x,
                                                      use_reentrant=False)
            else:
                x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]),
                               labels.view(-1))


def sizes(args):
    if args.tiny:
        return dict(mlp_width=64, mlp_batch=args.batch or 8, vocab=101,
                    seq=32, d=64, layers=2, heads=4, gpt2_batch=2)
    return dict(mlp_width=1024, mlp_batch=args.batch or 1024, vocab=50257,
                seq=1024, d=768, layers=12, heads=12, gpt2_batch=8)


def make_model(model_name, mode, args, dev, optimizer=None):
    """The model (weights seeded, the same in every mode) on dev, and its
    optimizer (optimizer: sgd | adamw | none; default args.optimizer)."""
    sz = sizes(args)
    checkpoint = mode == "checkpoint"
    torch.manual_seed(0)  # the same weights in every mode
    if model_name == "seed_mlp":
        model = SeedMlp(sz["mlp_width"], checkpoint)
    else:
        model = Gpt2(sz["vocab"], sz["seq"], sz["d"], sz["layers"],
                     sz["heads"], args.attention, checkpoint)
    model = model.to(dev)
    optimizer = optimizer or resolve_optimizer(model_name, args.optimizer)
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    elif optimizer == "adamw":
        # models/gpt2.json: lr 6e-4, no weight decay.
        opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.0)
    else:
        opt = None
    return model, opt


def build(model_name, mode, args, dev):
    sz = sizes(args)
    model, opt = make_model(model_name, mode, args, dev)
    gen = torch.Generator(device="cpu").manual_seed(0)
    if model_name == "seed_mlp":
        x = torch.randn(sz["mlp_batch"], sz["mlp_width"], generator=gen)
        inputs = (x.to(dev),)
        batch = sz["mlp_batch"]
    else:
        tokens = torch.randint(0, sz["vocab"],
                               (sz["gpt2_batch"], sz["seq"] + 1),
                               generator=gen)
        inputs = (tokens[:, :-1].contiguous().to(dev),
                  tokens[:, 1:].contiguous().to(dev))
        batch = sz["gpt2_batch"]
    return model, inputs, opt, batch


def train_step(forward, model, opt, inputs):
    """One training step: forward, backward, optimizer (gradients are
    zeroed in place, so they stay allocated like the optimizer state)."""
    loss = forward(*inputs)
    loss.backward()
    if opt is not None:
        opt.step()
        opt.zero_grad(set_to_none=False)
    else:
        model.zero_grad(set_to_none=False)
    return loss


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def resolve_optimizer(model_name, choice):
    """An --optimizer / --max-batch-optimizer choice, where "model" means
    remat's model files' (models/gpt2.json adamw, seed_mlp sgd)."""
    if choice != "model":
        return choice
    return "adamw" if model_name == "gpt2" else "sgd"
