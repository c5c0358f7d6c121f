"""Our Video Depth Anything port on tiny random-init configurations (no weights exist offline).

A checkpoint in the official key layout is generated from :func:`official_vda_key_shapes` (VDA's key names and
shapes, read from its code), so these tests check the loading path end to end; numerical agreement with VDA's own
network and weights cannot be checked offline (see README, Limits).
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from nips25_st2360d import ST2360D, ST2360DConfig, render_room  # noqa: E402
from nips25_st2360d.adapters import TorchVideoModel, frames_to_tensor, load_video_depth_anything  # noqa: E402
from nips25_st2360d.video_depth_anything import (  # noqa: E402
    VDA_ENCODERS,
    TemporalModule,
    VDAConfig,
    VideoDepthAnythingNet,
    map_official_state_dict,
    official_vda_key_shapes,
)

TINY = VDAConfig(embed_dim=32, depth=4, num_heads=2, layers=(0, 1, 2, 3), features=32, out_channels=(16, 16, 32, 32),
                 num_frames=32, image_size=56)  # fmt: skip
F = torch.nn.functional


def _official_state_dict(config, seed=0):
    """Random tensors in VDA's official layout; a positive last bias keeps the random net's disparity non-zero."""
    g = torch.Generator().manual_seed(seed)
    sd = {k: 0.2 * torch.randn(s, generator=g) for k, s in official_vda_key_shapes(config).items()}
    sd["head.scratch.output_conv2.2.bias"] = torch.ones(1)
    for k in sd:
        if k.endswith(("ls1.gamma", "ls2.gamma")):
            sd[k] = sd[k].abs() + 0.5
    return sd


@pytest.fixture(scope="module")
def tiny_ckpt(tmp_path_factory):
    path = tmp_path_factory.mktemp("vda") / "video_depth_anything_tiny.pth"
    sd = _official_state_dict(TINY)
    torch.save(sd, path)
    return path, sd


def test_official_layout_checkpoint_loads_strictly_into_the_port(tiny_ckpt):
    path, sd = tiny_ckpt
    model = load_video_depth_anything(path, config=TINY)
    assert isinstance(model, TorchVideoModel) and model.output == "disparity" and model.window == 32
    ours = model.module.state_dict()
    d = TINY.embed_dim
    q = next(k for k in ours if k.startswith("backbone.encoder.layer.1.") and ("q_proj" in k or "query" in k))
    torch.testing.assert_close(ours[q], sd["pretrained.blocks.1.attn.qkv." + q.rsplit(".", 1)[1]][:d])
    torch.testing.assert_close(ours["neck.fusion_stage.layers.0.projection.weight"],
                               sd["head.scratch.refinenet4.out_conv.weight"])  # fmt: skip
    key = "temporal.2.transformer_blocks.0.attention_blocks.1.pos_encoder.pe"
    torch.testing.assert_close(ours[key], sd["head.motion_modules.2.temporal_transformer." + key[11:]])
    frames = np.random.default_rng(0).integers(0, 256, (5, 56, 56, 3)).astype(np.uint8)
    out = model.predict(frames)
    assert out.shape == (5, 56, 56) and out.dtype == np.float32 and np.all(out > 0) and np.isfinite(out).all()
    # Also a state dict already in our layout, and the metric variant's output type.
    torch.save(ours, path.parent / "ours.pth")
    again = load_video_depth_anything(path.parent / "ours.pth", config=TINY, metric=True)
    assert again.output == "depth" and again.window_align == "none"
    np.testing.assert_allclose(again.predict(frames), out, rtol=1e-5)


def test_layouts_and_parameter_counts_of_vits_vitb_vitl_match_vda():
    """Every official key maps to one of ours with the same shape (bijection), for VDA's three sizes; and the
    parameter counts match VDA's README (28.4 M, 113.1 M, 381.8 M) once the position embedding and the unused first
    residual unit of ``refinenet4`` are left out, which is how the README's figures add up for all three."""
    readme = {"vits": 28.4, "vitb": 113.1, "vitl": 381.8}
    for name, config in VDA_ENCODERS.items():
        with torch.device("meta"):
            net = VideoDepthAnythingNet(config)
        ours = {k: tuple(v.shape) for k, v in net.state_dict().items()}
        official = official_vda_key_shapes(config)
        mapped = map_official_state_dict({k: torch.empty(s, device="meta") for k, s in official.items()}, net)
        assert set(mapped) == set(ours), name
        assert all(tuple(v.shape) == ours[k] for k, v in mapped.items()), name
        total = sum(math.prod(s) for k, s in official.items() if not k.endswith(".pe"))
        assert total == sum(p.numel() for p in net.parameters())
        unused = sum(math.prod(s) for k, s in official.items()
                     if k == "pretrained.pos_embed" or ".refinenet4.resConfUnit1." in k)  # fmt: skip
        assert abs((total - unused) / 1e6 - readme[name]) < 0.05, (name, total - unused)


def test_encoder_matches_a_hand_written_dinov2_on_the_official_tensors(tiny_ckpt):
    """The qkv split, layer scale and final norm: our backbone's features equal a plain DINOv2 forward written from
    the official tensors (fused qkv, ``ls*.gamma``, ``norm``)."""
    _, sd = tiny_ckpt
    net = VideoDepthAnythingNet(TINY).eval()
    net.load_state_dict(map_official_state_dict(sd, net), strict=True)
    x = torch.randn(2, 3, 56, 56)
    p = "pretrained."
    d, heads = TINY.embed_dim, TINY.num_heads
    tok = F.conv2d(x, sd[p + "patch_embed.proj.weight"], sd[p + "patch_embed.proj.bias"], stride=14)
    tok = torch.cat([sd[p + "cls_token"].expand(2, 1, d), tok.flatten(2).transpose(1, 2)], 1) + sd[p + "pos_embed"]
    ref = []
    for i in range(TINY.depth):
        b = f"{p}blocks.{i}."
        h = F.layer_norm(tok, (d,), sd[b + "norm1.weight"], sd[b + "norm1.bias"], eps=1e-6)
        qkv = (h @ sd[b + "attn.qkv.weight"].T + sd[b + "attn.qkv.bias"]).view(2, -1, 3, heads, d // heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // heads), -1) @ v
        att = att.transpose(1, 2).reshape(2, -1, d) @ sd[b + "attn.proj.weight"].T + sd[b + "attn.proj.bias"]
        tok = tok + sd[b + "ls1.gamma"] * att
        h = F.layer_norm(tok, (d,), sd[b + "norm2.weight"], sd[b + "norm2.bias"], eps=1e-6)
        h = F.gelu(h @ sd[b + "mlp.fc1.weight"].T + sd[b + "mlp.fc1.bias"]) @ sd[b + "mlp.fc2.weight"].T
        tok = tok + sd[b + "ls2.gamma"] * (h + sd[b + "mlp.fc2.bias"])
        ref.append(F.layer_norm(tok, (d,), sd[p + "norm.weight"], sd[p + "norm.bias"], eps=1e-6))
    with torch.no_grad():
        got = net.backbone(pixel_values=x).feature_maps
    for i, layer in enumerate(TINY.layers):
        torch.testing.assert_close(got[i], ref[layer], rtol=1e-4, atol=1e-4)


def test_temporal_module_matches_a_per_pixel_reference():
    """Attention runs over the frames at each pixel: a loop over pixels and heads with the module's own tensors."""
    torch.manual_seed(1)
    m = TemporalModule(32, heads=8, num_frames=6, zero_init=False).eval()
    for prm in m.parameters():
        torch.nn.init.normal_(prm, std=0.3)
    x = torch.randn(1, 4, 32, 2, 3)
    with torch.no_grad():
        got = m(x)
        w = dict(m.state_dict())
        y = F.group_norm(x[0], 32, w["norm.weight"], w["norm.bias"], eps=1e-6)  # (T, C, h, w)
        ref = torch.empty_like(x[0])
        blk = "transformer_blocks.0."
        for r in range(2):
            for c in range(3):
                s = y[:, :, r, c] @ w["proj_in.weight"].T + w["proj_in.bias"]  # (T, C)
                for a in range(2):
                    pre = f"{blk}attention_blocks.{a}."
                    h = F.layer_norm(s, (32,), w[f"{blk}norms.{a}.weight"], w[f"{blk}norms.{a}.bias"])
                    h = h + w[pre + "pos_encoder.pe"][0, :4]
                    heads = []
                    for hd in range(8):
                        sl = slice(4 * hd, 4 * hd + 4)
                        q, k, v = (h @ w[pre + f"to_{n}.weight"][sl].T for n in "qkv")
                        heads.append(torch.softmax(q @ k.T / 2.0, -1) @ v)
                    s = s + torch.cat(heads, 1) @ w[pre + "to_out.0.weight"].T + w[pre + "to_out.0.bias"]
                h = F.layer_norm(s, (32,), w[blk + "ff_norm.weight"], w[blk + "ff_norm.bias"])
                val, gate = (h @ w[blk + "ff.net.0.proj.weight"].T + w[blk + "ff.net.0.proj.bias"]).chunk(2, -1)
                s = s + (val * F.gelu(gate)) @ w[blk + "ff.net.2.weight"].T + w[blk + "ff.net.2.bias"]
                ref[:, :, r, c] = x[0, :, :, r, c] + s @ w["proj_out.weight"].T + w["proj_out.bias"]
    torch.testing.assert_close(got[0], ref, rtol=1e-4, atol=1e-4)
    # The position encoding is the sinusoid of 'Attention is all you need' (sin on even, cos on odd channels).
    pe = w[blk + "attention_blocks.0.pos_encoder.pe"][0]
    assert float(pe[3, 0]) == pytest.approx(math.sin(3.0)) and float(pe[3, 1]) == pytest.approx(math.cos(3.0))


def test_zero_initialised_temporal_modules_reduce_to_depth_anything_v2():
    """VDA's head is DA-V2's DPT head plus temporal modules with a zero output projection: a fresh port must equal
    ``transformers``' Depth Anything V2 frame by frame (wiring of the fusion path, head and output)."""
    torch.manual_seed(2)
    net = VideoDepthAnythingNet(TINY).eval()
    with torch.no_grad():
        net.head.conv3.bias.fill_(1.0)
    image = transformers.DepthAnythingForDepthEstimation(net.image_config).eval()
    image.load_state_dict({k: v for k, v in net.state_dict().items() if not k.startswith("temporal.")}, strict=True)
    x = torch.randn(1, 3, 3, 56, 56)
    with torch.no_grad():
        got = net(x)[0]
        ref = image(pixel_values=x[0]).predicted_depth
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


def test_forward_is_temporally_coupled_and_consistent_on_a_static_clip(tiny_ckpt):
    _, sd = tiny_ckpt
    net = VideoDepthAnythingNet(TINY).eval()
    net.load_state_dict(map_official_state_dict(sd, net), strict=True)
    net.double()  # float64: the random net's outputs reach 1e3, where float32 rounding hides exact identities
    g = torch.Generator().manual_seed(4)
    clip = torch.randn(1, 4, 3, 28, 28, generator=g, dtype=torch.float64)  # 28 px: resampled positions
    other = clip.clone()
    other[0, 0] = torch.randn(3, 28, 28, generator=g, dtype=torch.float64)
    with torch.no_grad():
        out, out2 = net(clip), net(other)
        # Temporal coupling: changing frame 0 changes the depth of the other frames ...
        assert float((out2[0, 1:] - out[0, 1:]).abs().max()) > 1e-3 * float(out.abs().max())
        # ... and a clip of 2 equals its clips run one by one (batch independence).
        pair = net(torch.cat([clip, other]))
        torch.testing.assert_close(pair, torch.cat([out, out2]))
        # Without position encodings, a static clip gives the same depth in every frame, and shuffling the frames
        # shuffles the output (attention over time is permutation-equivariant).
        for name, buf in net.named_buffers():
            if name.endswith("pos_encoder.pe"):
                buf.zero_()
        static = net(clip[:, :1].expand(1, 4, 3, 28, 28))
        torch.testing.assert_close(static[0, 1:], static[0, :1].expand(3, 28, 28))
        perm = [2, 0, 3, 1]
        torch.testing.assert_close(net(clip[:, perm]), net(clip)[:, perm])
    # Zero-initialised temporal modules: frames do not interact.
    fresh = VideoDepthAnythingNet(TINY).eval()
    with torch.no_grad():
        torch.testing.assert_close(fresh(other)[0, 1:], fresh(clip)[0, 1:])


def test_loaded_port_runs_window_by_window_and_inside_st2360d(tiny_ckpt):
    path, _ = tiny_ckpt
    model = load_video_depth_anything(path, config=TINY)
    frames = np.random.default_rng(5).integers(0, 256, (40, 28, 28, 3)).astype(np.uint8)
    out = model.predict(frames)  # 40 > 32 frames: two windows, keyframe scale/shift alignment
    assert out.shape == (40, 28, 28) and np.isfinite(out).all() and np.all(out > 0)
    with torch.inference_mode():
        first = model.module(frames_to_tensor(frames[:32])[None])[0].numpy()
    np.testing.assert_allclose(out[:24], np.maximum(first, 1e-3 * first.max())[:24], rtol=1e-5)
    rgb, _, _ = render_room(seed=0, h=32, w=64)
    result = ST2360D(model, ST2360DConfig(frame_size=28)).predict(rgb)
    assert result.depth.shape == (32, 64) and np.isfinite(result.depth[result.valid]).all()


def test_vda_port_rejects_bad_input(tmp_path, tiny_ckpt):
    path, sd = tiny_ckpt
    for field, value in (("features", 48), ("layers", (0, 1, 2, 9)), ("out_channels", (16, 16, 40, 32)),
                         ("pos_interpolation", "nearest"), ("embed_dim", 0), ("image_size", 50)):  # fmt: skip
        with pytest.raises(ValueError, match=field.split("_")[0]):
            VDAConfig(**{**TINY.__dict__, field: value})
    with pytest.raises(TypeError, match="config"):
        VideoDepthAnythingNet({"embed_dim": 32})
    net = VideoDepthAnythingNet(TINY)
    for bad in (torch.zeros(1, 3, 56, 56), torch.zeros(1, 2, 3, 50, 56), torch.zeros(1, 33, 3, 14, 14)):
        with pytest.raises(ValueError, match="x"):
            net(bad)
    with pytest.raises(ValueError, match="channels"):
        TemporalModule(48)
    with pytest.raises(ValueError, match="layout"):
        map_official_state_dict({**sd, "pretrained.head.weight": torch.zeros(1)}, net)
    with pytest.raises(TypeError, match="state_dict"):
        map_official_state_dict({"pretrained.norm.weight": [1.0]}, net)
    with pytest.raises(ValueError, match="ckpt_path"):
        load_video_depth_anything(tmp_path / "missing.pth")
    with pytest.raises(ValueError, match="encoder"):
        load_video_depth_anything(path, encoder="vitg")
    with pytest.raises(TypeError, match="config"):
        load_video_depth_anything(path, config="vits")
    torch.save([1, 2], tmp_path / "list.pth")
    with pytest.raises(TypeError, match="state dict"):
        load_video_depth_anything(tmp_path / "list.pth", config=TINY)
    short = {k: v for k, v in sd.items() if not k.endswith("ff_norm.bias")}
    torch.save(short, tmp_path / "short.pth")
    with pytest.raises(RuntimeError, match="ff_norm"):
        load_video_depth_anything(tmp_path / "short.pth", config=TINY)
    with pytest.raises(RuntimeError, match="size mismatch"):
        load_video_depth_anything(path, config=VDAConfig(**{**TINY.__dict__, "embed_dim": 64}))


def test_cli_run_with_a_video_depth_anything_checkpoint(tmp_path, tiny_ckpt, monkeypatch, capsys):
    """``nips25-st2360d run --model-path X.pth`` loads VDA (the ``vits`` preset patched to the tiny sizes)."""
    from nips25_st2360d.cli import main
    from skimage.io import imsave

    path, _ = tiny_ckpt
    img = tmp_path / "pano.png"
    imsave(img, np.random.default_rng(0).integers(0, 256, (32, 64, 3)).astype(np.uint8))
    argv = ["run", str(img), "--model-path", str(path), "--frame-size", "28", "--sampler", "cubemap", "-q"]
    with pytest.raises(SystemExit) as err:  # the real ViT-S sizes do not match the tiny checkpoint: exit 2
        main([*argv, "--out", str(tmp_path / "d.npy")])
    assert err.value.code == 2 and "Video Depth Anything" in capsys.readouterr().err
    monkeypatch.setitem(VDA_ENCODERS, "vits", TINY)
    assert main([*argv, "--out", str(tmp_path / "d.npy")]) == 0
    assert np.load(tmp_path / "d.npy").shape == (32, 64)
    with pytest.raises(SystemExit):
        main([*argv[:3], str(tmp_path / "none.pth"), *argv[4:], "--out", str(tmp_path / "e.npy")])
