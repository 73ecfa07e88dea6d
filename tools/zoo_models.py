#!/usr/bin/env python3
"""The model zoo of the ONNX parity test (tests/e2e/onnx_zoo.py,
docs/onnx.md "The model zoo").

One model of each torchvision 0.14 classification family, the three
segmentation heads, and torch.nn transformers, each built small where its
constructor allows (fewer blocks, narrower), with dropout and stochastic
depth off (random masks cannot match across frameworks). Every entry gives
the module, the input it is exported and trained at, and its loss.

  python3 tools/zoo_models.py            lists the zoo
"""
import math
import sys

import torch
from torch import nn

VOCAB = 32      # token models: vocabulary (= classes of the loss)
SEQ = 16        # token models: sequence length
CLASSES = 10    # classifiers: logits


class Entry:
    """A zoo model: build() -> module; `shape`: one sample of the input
    x (float images, or int64 tokens when `tokens`); `loss`:
    cross_entropy over the last dim or mse; `batch`: the batch it is
    tested at (batch norm is well conditioned from 8 up)."""

    def __init__(self, family, build, shape, batch=8, tokens=False,
                 loss="cross_entropy", note="", seed=0, graph=None):
        self.family, self.build, self.shape = family, build, shape
        self.batch, self.tokens, self.loss, self.note = (batch, tokens, loss,
                                                         note)
        self.seed = seed  # added to the run's seed (weights and batch)
        # {graph op: count} that `remat compile --emit=graph` must show (0:
        # none): the patterns the importer reads as one op (docs/onnx.md).
        self.graph = graph or {}


def no_dropout(module):
    for m in module.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    return module


def tv(name, **kw):
    import torchvision
    return no_dropout(getattr(torchvision.models, name)(
        weights=None, num_classes=CLASSES, **kw))


def resnet(block, layers, **kw):
    from torchvision.models import resnet as r
    return r.ResNet(getattr(r, block), layers, num_classes=CLASSES, **kw)


def vgg(name):
    """vgg11 / vgg11_bn at 32 x 32: the adaptive pool exports only where the
    map divides into 7 x 7, so it is an identity and the classifier reads
    512 x 1 x 1 features."""
    m = tv(name)
    m.avgpool = nn.Identity()
    m.classifier[0] = nn.Linear(512, 4096)
    return m


def densenet():
    from torchvision.models import densenet as d
    return d.DenseNet(growth_rate=12, block_config=(2, 2, 2, 2),
                      num_init_features=24, num_classes=CLASSES)


def googlenet():
    from torchvision.models.googlenet import GoogLeNet
    return no_dropout(GoogLeNet(num_classes=CLASSES, aux_logits=False,
                                transform_input=False, init_weights=True))


def inception():
    from torchvision.models.inception import Inception3
    return no_dropout(Inception3(num_classes=CLASSES, aux_logits=False,
                                 transform_input=False, init_weights=True))


def efficientnet_v2():
    """efficientnet_v2_s's stages, one layer each."""
    from torchvision.models import efficientnet as e
    setting, last = e._efficientnet_conf("efficientnet_v2_s")
    for s in setting:
        s.num_layers = 1
    return e.EfficientNet(setting, dropout=0.0, stochastic_depth_prob=0.0,
                          num_classes=CLASSES, last_channel=last)


def convnext():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    return ConvNeXt([CNBlockConfig(24, 48, 1), CNBlockConfig(48, 96, 1),
                     CNBlockConfig(96, 192, 1), CNBlockConfig(192, None, 1)],
                    stochastic_depth_prob=0.0, num_classes=CLASSES)


def swin():
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=24, depths=[2, 2],
                           num_heads=[2, 4], window_size=[4, 4],
                           stochastic_depth_prob=0.0, num_classes=CLASSES)


def vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                             num_heads=2, hidden_dim=32, mlp_dim=64,
                             num_classes=CLASSES)


def maxvit():
    from torchvision.models.maxvit import MaxVit
    return MaxVit(input_size=(64, 64), stem_channels=16, partition_size=2,
                  block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                  stochastic_depth_prob=0.0, num_classes=CLASSES)


class Segmentation(nn.Module):
    """A torchvision segmentation model's "out" map [N, classes, H, W]."""

    def __init__(self, name):
        super().__init__()
        import torchvision
        self.net = no_dropout(getattr(torchvision.models.segmentation, name)(
            weights=None, weights_backbone=None, num_classes=4,
            aux_loss=False))

    def forward(self, x):
        return self.net(x)["out"]


class EncoderLM(nn.Module):
    """A language model on nn.TransformerEncoder: token and learned
    position embeddings, 2 layers (post- or pre-LN, relu or gelu) under a
    causal mask registered as a buffer, a linear head."""

    def __init__(self, norm_first, activation, width=32, heads=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, width)
        self.pos = nn.Parameter(torch.randn(SEQ, width) * 0.02)
        layer = nn.TransformerEncoderLayer(
            width, heads, dim_feedforward=2 * width, dropout=0.0,
            activation=activation, batch_first=True, norm_first=norm_first)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(width, VOCAB)
        self.register_buffer("mask", torch.triu(
            torch.full((SEQ, SEQ), float("-inf")), diagonal=1))

    def forward(self, x):
        return self.head(self.enc(self.tok(x) + self.pos, mask=self.mask))


class Seq2Seq(nn.Module):
    """nn.Transformer (1 encoder and 1 decoder layer) reading the tokens
    as source and as target under a causal target mask (a buffer)."""

    def __init__(self, width=32, heads=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, width)
        self.net = nn.Transformer(width, heads, num_encoder_layers=1,
                                  num_decoder_layers=1,
                                  dim_feedforward=2 * width, dropout=0.0,
                                  batch_first=True)
        self.head = nn.Linear(width, VOCAB)
        self.register_buffer("mask", torch.triu(
            torch.full((SEQ, SEQ), float("-inf")), diagonal=1))

    def forward(self, x):
        h = self.tok(x)
        return self.head(self.net(h, h, tgt_mask=self.mask))


class GPT2Like(nn.Module):
    """GPT-2 written with torch.nn: token and position embeddings, pre-LN
    blocks of nn.MultiheadAttention under a causal mask buffer and a GELU
    MLP, a final LayerNorm, the head tied to the token embedding."""

    def __init__(self, width=32, heads=2, layers=2, vocab=VOCAB, seq=SEQ):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(width),
                "attn": nn.MultiheadAttention(width, heads, dropout=0.0,
                                              batch_first=True),
                "ln2": nn.LayerNorm(width),
                "fc": nn.Linear(width, 4 * width),
                "proj": nn.Linear(4 * width, width)}))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.wte.weight
        self.register_buffer("mask", torch.triu(
            torch.full((seq, seq), float("-inf")), diagonal=1))
        self.register_buffer("positions", torch.arange(seq))

    def forward(self, x):
        h = self.wte(x) + self.wpe(self.positions)
        for b in self.blocks:
            a = b["ln1"](h)
            h = h + b["attn"](a, a, a, attn_mask=self.mask,
                              need_weights=False)[0]
            h = h + b["proj"](nn.functional.gelu(b["fc"](b["ln2"](h))))
        return self.head(self.ln_f(h))


class HandAttention(nn.Module):
    """Attention written out by hand on [B, H, S, Dh]: q and k each scaled
    by Dh^-1/4, scores plus a mask computed in forward from positions
    ("causal": float32's minimum above the diagonal, as Hugging Face code
    adds; "bias": -0.01 (i - j)^2, no causal mask; "none"), softmax, the
    product with v; then a feed-forward layer whose GELU is written out as
    0.5 x (1 + erf(x / sqrt 2)) in another grouping than nn.GELU()'s."""

    def __init__(self, mask, width=32, heads=2):
        super().__init__()
        self.mask, self.heads = mask, heads
        self.tok = nn.Embedding(VOCAB, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.fc = nn.Linear(width, 2 * width)
        self.head = nn.Linear(2 * width, VOCAB)

    def forward(self, x):
        h = self.tok(x)
        b, s, e = h.shape
        q, k, v = (t.reshape(b, s, self.heads, e // self.heads).transpose(1, 2)
                   for t in self.qkv(h).split(e, dim=-1))
        c = (e // self.heads) ** -0.25
        scores = (q * c) @ (k * c).transpose(-2, -1)
        i = torch.arange(s)
        if self.mask == "causal":
            scores = scores + torch.where(
                i[None, :] > i[:, None],
                torch.tensor(torch.finfo(torch.float32).min), torch.tensor(0.0))
        elif self.mask == "bias":
            scores = scores - 0.01 * (i[None, :] - i[:, None]).float() ** 2
        a = torch.softmax(scores, dim=-1) @ v
        h = h + self.proj(a.transpose(1, 2).reshape(b, s, e))
        f = self.fc(h)
        return self.head(0.5 * f * (1.0 + torch.erf(f * (1 / math.sqrt(2)))))


class MaskedFillAttention(nn.Module):
    """nanoGPT's attention without flash: scores masked with
    masked_fill(bias == 0, -inf) by a lower-triangular buffer (Where with a
    constant condition), and two more Where of computed tensors by constant
    masks: torch.where(keep, h, 0.5 h) and masked_fill(pad, 0.25)."""

    def __init__(self, width=32, heads=2, seq=SEQ):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(VOCAB, width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.head = nn.Linear(width, VOCAB)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq)).view(
            1, 1, seq, seq))
        g = torch.Generator().manual_seed(5)
        self.register_buffer("keep", torch.rand(seq, width, generator=g) > 0.3)
        self.register_buffer("pad", torch.rand(seq, 1, generator=g) > 0.8)

    def forward(self, x):
        h = self.tok(x)
        b, s, e = h.shape
        q, k, v = (t.view(b, s, self.heads, e // self.heads).transpose(1, 2)
                   for t in self.qkv(h).split(e, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :s, :s] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        h = h + self.proj(y.transpose(1, 2).contiguous().view(b, s, e))
        h = torch.where(self.keep, h, 0.5 * h).masked_fill(self.pad, 0.25)
        return self.head(h)


# The layers of the transformers below: attention and nn.GELU() read as one
# op each, no softmax or erf left.
def fused(layers, gelu):
    return {"attention": layers, "gelu_exact": layers if gelu else 0,
            "softmax": 0, "erf": 0}


IMAGE = (3, 64, 64)
ZOO = {
    "resnet18": Entry("resnet", lambda: tv("resnet18"), IMAGE),
    "resnext": Entry("resnext", lambda: resnet(
        "Bottleneck", [1, 1, 1, 1], groups=32, width_per_group=4), IMAGE,
        note="resnext50_32x4d, 1 block a stage"),
    "wide_resnet": Entry("wide_resnet", lambda: resnet(
        "Bottleneck", [1, 1, 1, 1], width_per_group=128), IMAGE,
        note="wide_resnet50_2, 1 block a stage"),
    "alexnet": Entry("alexnet", lambda: tv("alexnet"), (3, 224, 224),
                     batch=2, note="224: its adaptive pool exports where "
                     "the map is 6 x 6"),
    "vgg11": Entry("vgg", lambda: vgg("vgg11"), (3, 32, 32),
                   note="adaptive pool an identity at 32"),
    "vgg11_bn": Entry("vgg_bn", lambda: vgg("vgg11_bn"), (3, 32, 32),
                      note="adaptive pool an identity at 32"),
    "squeezenet1_1": Entry("squeezenet", lambda: tv("squeezenet1_1"), IMAGE),
    "densenet": Entry("densenet", densenet, IMAGE,
                      note="densenet121's blocks, 2 layers each, growth 12"),
    "googlenet": Entry("googlenet", googlenet, IMAGE, batch=16,
                       note="at batch 8 (seed 0) remat's plain float32 path "
                       "is up to 690x beyond the spread rule from "
                       "inception4d down (2-7e-2 on each gradient) while "
                       "float64 matches to 1e-13; at seeds 1 and 2 PyTorch "
                       "float32 itself is off by 2.4-3.2e-2 there"),
    "inception_v3": Entry("inception_v3", inception, (3, 75, 75), batch=16,
                          note="75: its smallest input; at batch 8 one "
                          "float32 path of remat is 15x beyond the spread "
                          "rule on 2 tensors while float64 matches to "
                          "3e-12"),
    "mobilenet_v2": Entry("mobilenet_v2", lambda: tv(
        "mobilenet_v2", width_mult=0.5), IMAGE, note="width 0.5"),
    "mobilenet_v3_small": Entry("mobilenet_v3",
                                lambda: tv("mobilenet_v3_small"), IMAGE),
    "mobilenet_v3_large": Entry("mobilenet_v3",
                                lambda: tv("mobilenet_v3_large"), IMAGE),
    "mnasnet0_5": Entry("mnasnet", lambda: tv("mnasnet0_5"), IMAGE),
    "shufflenet_v2_x0_5": Entry("shufflenet",
                                lambda: tv("shufflenet_v2_x0_5"), IMAGE),
    "efficientnet_b0": Entry("efficientnet", lambda: tv(
        "efficientnet_b0", stochastic_depth_prob=0.0), IMAGE),
    "efficientnet_v2": Entry("efficientnet_v2", efficientnet_v2, IMAGE,
                             note="efficientnet_v2_s, 1 layer a stage"),
    "regnet_x_400mf": Entry("regnet_x", lambda: tv("regnet_x_400mf"), IMAGE),
    "regnet_y_400mf": Entry("regnet_y", lambda: tv("regnet_y_400mf"), IMAGE,
                            batch=16, note="at batch 8 (seeds 0 and 2) "
                            "remat's plain and im2col float32 paths are 50-"
                            "280x beyond the spread rule on its last stages "
                            "(2x2 maps) while float64 matches to 3e-13; the "
                            "closest ReLU input is 1.6e-7 (seed 0, the first "
                            "stage) or 1.5e-6 (seed 2) from 0 "
                            "(tools/zoo_kinks.py)"),
    "convnext": Entry("convnext", convnext, IMAGE,
                      note="convnext_tiny's stages, 1 block each, width 24"),
    "swin": Entry("swin", swin, (3, 32, 32),
                  note="swin_t: 2 stages of 2 blocks, width 24, window 4",
                  graph={"attention": 0, "softmax": 4, "gelu_exact": 4}),
    "vit": Entry("vit", vit, (3, 32, 32),
                 note="vit_b: patch 8, 2 layers, width 32",
                 graph=fused(2, True)),
    "maxvit": Entry("maxvit", maxvit, IMAGE,
                    note="maxvit_t: 2 stages of 1 block, width 16"),
    "fcn_resnet50": Entry("fcn", lambda: Segmentation("fcn_resnet50"),
                          IMAGE, loss="mse"),
    "deeplabv3": Entry("deeplabv3", lambda: Segmentation(
        "deeplabv3_mobilenet_v3_large"), IMAGE, loss="mse", seed=1,
        note="the mobilenet_v3_large backbone; seed 1: at seed 0 one "
        "tensor is 1.05x beyond the spread rule on remat's oneDNN float32 "
        "path while float64 matches to 1e-13; its backbone has lraspp's "
        "ReLU inputs 4.6e-7 and 6.2e-7 from 0 (tools/zoo_kinks.py)"),
    "lraspp": Entry("lraspp", lambda: Segmentation(
        "lraspp_mobilenet_v3_large"), IMAGE, loss="mse", seed=1,
        note="seed 1: at seed 0 remat's oneDNN float32 path is 14x beyond "
        "the spread rule on the backbone's first 6 blocks (the plain and "
        "im2col paths pass, float64 matches to 1e-13): in float64 one "
        "input of block 5's second ReLU is 6.2e-7 from 0, within float32's "
        "noise, and its gradient error has a kink flip's pattern "
        "(tools/zoo_kinks.py)"),
    "encoder_post_relu": Entry("transformer", lambda: EncoderLM(
        False, "relu"), (SEQ,), tokens=True,
        note="nn.TransformerEncoder, post-LN, relu", graph=fused(2, False)),
    "encoder_pre_gelu": Entry("transformer", lambda: EncoderLM(
        True, "gelu"), (SEQ,), tokens=True,
        note="nn.TransformerEncoder, pre-LN, gelu", graph=fused(2, True)),
    "seq2seq": Entry("transformer", Seq2Seq, (SEQ,), tokens=True,
                     note="nn.Transformer, 1 + 1 layers",
                     graph=fused(3, False)),
    "gpt2_like": Entry("transformer", GPT2Like, (SEQ,), tokens=True,
                       note="tied embeddings",
                       graph=dict(fused(2, True), transpose=12)),
}

# Not in the zoo's table: the patterns of docs/onnx.md ("Patterns read as
# one op") written by hand, each checked like a zoo model
# (`onnx_zoo.py --models patterns`).
PATTERNS = {
    "attention_causal_4d": Entry(
        "pattern", lambda: HandAttention("causal"), (SEQ,), tokens=True,
        note="causal mask of float32's minimum, 4-D heads",
        graph=dict(fused(1, True), transpose=4)),
    "attention_unmasked_4d": Entry(
        "pattern", lambda: HandAttention("none"), (SEQ,), tokens=True,
        note="no mask", graph=fused(1, True)),
    "attention_masked_fill": Entry(
        "pattern", MaskedFillAttention, (SEQ,), tokens=True,
        note="nanoGPT's masked_fill causal mask (fused); Where by constant "
        "masks", graph={"attention": 1, "softmax": 0}),
    "attention_bias": Entry(
        "pattern", lambda: HandAttention("bias"), (SEQ,), tokens=True,
        note="a bias that is no causal mask: not fused",
        graph={"attention": 0, "softmax": 1, "gelu_exact": 1}),
}


def build(name, seed=0):
    """The zoo model `name` (float32, seeded)."""
    torch.manual_seed(seed)
    return {**ZOO, **PATTERNS}[name].build()


def export_module(module, x, path, opset=17):
    """Exports `module` on the sample input `x` as docs/onnx.md tells users
    to: training mode, no constant folding, input x, output y."""
    torch.onnx.export(module, x, path, input_names=["x"], output_names=["y"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False, opset_version=opset)


def export(name, path, module, batch, opset=17):
    """Exports the zoo model `name` (`module`) at `batch` samples."""
    e = {**ZOO, **PATTERNS}[name]
    if e.tokens:
        x = torch.randint(0, VOCAB, (batch, *e.shape))
    else:
        x = torch.randn(batch, *e.shape)
    export_module(module, x, path, opset)


if __name__ == "__main__":
    for name, e in ZOO.items():
        print(f"{name:<20} {e.family:<16} {'x'.join(map(str, e.shape)):<10} "
              f"batch {e.batch} {e.note}")
    sys.exit(0)
