"""Bad input: every public entry point raises a clear error naming the argument; the CLI exits with code 2."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nips25_bcvlr import (
    BCVLR,
    VQEMA,
    ActionDecoder,
    BCVLRConfig,
    PointMassPixels,
    Video,
    curl_info_nce,
    load_video,
    make_minigrid_pixels,
    random_shift,
    record_video,
    scale_observations,
    sinkhorn,
)
from nips25_bcvlr.baselines import BCO, BaselineConfig, BCTrueActions
from nips25_bcvlr.cli import main
from nips25_bcvlr.evaluation import evaluate_returns, linear_probe, normalized_return


@settings(max_examples=25, deadline=None)
@given(
    field=st.sampled_from(["stage1_steps", "n_envs", "vq_decay", "alpha", "ema_tau", "codebook_size", "stage2_lr"]),
    value=st.sampled_from([-1, -0.5, float("nan"), float("inf"), float("-inf"), "1"]),
)
def test_config_rejects_out_of_range_values_naming_the_field(field: str, value: object) -> None:
    """Negative, non-finite or non-numeric hyper-parameters raise ValueError/TypeError naming the field."""
    with pytest.raises((ValueError, TypeError), match=field):
        BCVLRConfig(**{field: value})


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"objective": "swav"}, "objective"),
        ({"feature_space": "latent"}, "feature_space"),
        ({"vq_decay": 1.0}, "vq_decay"),
        ({"n_context": 1}, "n_context"),
        ({"idm_channels": ()}, "idm_channels"),
        ({"stage1_lr": 0.0}, "stage1_lr"),
        ({"reclone": 1}, "reclone"),
    ],
)
def test_config_errors(kwargs: dict, name: str) -> None:
    with pytest.raises((ValueError, TypeError), match=name):
        BCVLRConfig(**kwargs)
    with pytest.raises(ValueError, match="name"):
        BCVLRConfig.preset("atari")
    with pytest.raises(ValueError, match="unknown fields"):
        BCVLRConfig.preset("cpu", not_a_field=1)


def test_tensor_functions_reject_bad_input() -> None:
    vq = VQEMA(n_codebooks=1, n_latents=1, codebook_size=4, dim=2)
    with pytest.raises(ValueError, match="z must have last dimension 2"):
        vq(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="z must be finite"):
        vq(torch.tensor([[float("nan"), 0.0]]))
    with pytest.raises(ValueError, match="z must not be empty"):
        vq(torch.zeros(0, 2))
    with pytest.raises(TypeError, match="z must be a floating tensor"):
        vq(torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="decay"):
        VQEMA(decay=1.0)
    with pytest.raises(ValueError, match="codebook_size"):
        VQEMA(codebook_size=0)
    with pytest.raises(ValueError, match="n_iters"):
        sinkhorn(torch.zeros(2, 3), n_iters=0)
    with pytest.raises(ValueError, match="epsilon"):
        sinkhorn(torch.zeros(2, 3), epsilon=-1.0)
    with pytest.raises(ValueError, match="scores must be finite"):
        sinkhorn(torch.full((2, 3), float("inf")))
    with pytest.raises(ValueError, match="k must"):
        curl_info_nce(torch.zeros(3, 4), torch.zeros(2, 4), torch.eye(4))
    with pytest.raises(ValueError, match="pad"):
        random_shift(torch.zeros(1, 3, 4, 4), pad=-1)
    with pytest.raises(ValueError, match="x must have 4 dimensions"):
        random_shift(torch.zeros(3, 4, 4), pad=1)
    with pytest.raises(ValueError, match="z must have last dimension 8"):
        ActionDecoder(8, 3)(torch.zeros(2, 7))
    with pytest.raises(TypeError, match="frames must be uint8"):
        scale_observations(np.zeros((1, 3, 4, 4), np.float32))
    with pytest.raises(ValueError, match=r"frames must have shape \(N, 3, H, W\)"):
        scale_observations(np.zeros((1, 4, 4, 3), np.uint8))


def test_data_and_env_entry_points_reject_bad_input(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="env_id"):
        make_minigrid_pixels("CartPole-v1")
    with pytest.raises(ValueError, match="tile_size"):
        make_minigrid_pixels(tile_size=1)
    with pytest.raises(ValueError, match="n_frames"):
        record_video(make_minigrid_pixels(), lambda env, obs: 2, n_frames=1)
    with pytest.raises(ValueError, match="target_size"):
        PointMassPixels(target_size=0.0)
    with pytest.raises(ValueError, match="episode_ids"):
        Video(frames=np.zeros((3, 3, 4, 4), np.uint8), episode_ids=np.array([0, 1]))
    with pytest.raises(ValueError, match="non-decreasing"):
        Video(frames=np.zeros((3, 3, 4, 4), np.uint8), episode_ids=np.array([1, 0, 0]))
    with pytest.raises(ValueError, match="no transition"):
        Video(frames=np.zeros((2, 3, 4, 4), np.uint8), episode_ids=np.array([0, 1])).windows(3)
    with pytest.raises(FileNotFoundError, match="path"):
        load_video(tmp_path / "missing.npz")
    np.savez(tmp_path / "bad.npz", pixels=np.zeros(3))
    with pytest.raises(ValueError, match="frames/obs/observations"):
        load_video(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="latents must be"):
        linear_probe(np.zeros((20, 2)), np.zeros(19))
    with pytest.raises(ValueError, match="two classes"):
        linear_probe(np.random.default_rng(0).normal(size=(20, 2)), np.zeros(20))
    with pytest.raises(ValueError, match="video_returns"):
        normalized_return(np.ones(3), np.array([]))
    with pytest.raises(ValueError, match="n_episodes"):
        evaluate_returns(lambda o: np.zeros(len(o)), [make_minigrid_pixels()], n_episodes=0)


def test_agent_and_baselines_reject_bad_input() -> None:
    env = make_minigrid_pixels()
    cfg = BCVLRConfig.preset("cpu")
    with pytest.raises(ValueError, match="obs_shape"):
        BCVLR(cfg, obs_shape=(20, 20, 3), action_space=env.action_space)
    with pytest.raises(TypeError, match="config"):
        BCVLR({"a": 1}, obs_shape=(3, 20, 20), action_space=env.action_space)  # type: ignore[arg-type]
    agent = BCVLR(cfg, obs_shape=(3, 20, 20), action_space=env.action_space)
    with pytest.raises(RuntimeError, match="pretrain"):
        agent.online(env, 10)
    with pytest.raises(TypeError, match="obs must be uint8"):
        agent.predict(np.zeros((20, 20, 3)))
    with pytest.raises(ValueError, match="obs must be"):
        agent.predict(np.zeros((21, 20, 3), np.uint8))
    with pytest.raises(ValueError, match="video frames must be"):
        agent.pretrain(Video(frames=np.zeros((3, 3, 8, 8), np.uint8), episode_ids=np.zeros(3, np.int64)))
    with pytest.raises(TypeError, match="video must be a Video"):
        agent.pretrain(np.zeros((3, 3, 20, 20), np.uint8))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pre_demo_fraction"):
        BaselineConfig(pre_demo_fraction=0.0)
    bc = BCTrueActions((3, 20, 20), env.action_space, config=BaselineConfig())
    with pytest.raises(RuntimeError, match="not fitted"):
        bc.predict(np.zeros((20, 20, 3), np.uint8))
    with pytest.raises(ValueError, match="actions"):
        bc.fit(Video(frames=np.zeros((3, 3, 20, 20), np.uint8), episode_ids=np.zeros(3, np.int64)))
    with pytest.raises(ValueError, match="total_steps"):
        BCO((3, 20, 20), env.action_space, config=BaselineConfig()).learn(
            Video(frames=np.zeros((3, 3, 20, 20), np.uint8), episode_ids=np.zeros(3, np.int64)), env, 1
        )


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "--profile", "huge"],
        ["train", "--video", "/nonexistent/video.npz", "--out", "x.pt"],
        ["record", "--out", "v.npz", "--frames", "0"],
        ["record", "--out", "v.npz", "--env-id", "NotAGrid-v0"],
        ["train", "--video", "v.npz", "--out", "x.pt", "--steps", "-1"],
    ],
)
def test_cli_user_errors_exit_2_with_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "error:" in err[-1] and "Traceback" not in "".join(err)


def test_review_regressions_reject_bad_input_naming_the_argument() -> None:
    """Found in review: a negative seed reached gymnasium's own error; idm_updates=0 crashed the online loop with
    an IndexError; latent_actions / codebook_perplexity and the encoder failed inside torch on a wrong shape, and
    the encoder passed NaN through silently."""
    env = make_minigrid_pixels()
    with pytest.raises(ValueError, match="seed"):
        record_video(env, lambda e, obs: 2, n_frames=4, seed=-1)
    with pytest.raises(TypeError, match="env must be a gymnasium.Env"):
        record_video(None, lambda e, obs: 2, n_frames=4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="idm_updates"):
        BCVLRConfig.preset("cpu", idm_updates=0)
    agent = BCVLR(BCVLRConfig.preset("cpu"), obs_shape=(3, 20, 20), action_space=env.action_space)
    small = Video(frames=np.zeros((3, 3, 8, 8), np.uint8), episode_ids=np.zeros(3, np.int64))
    for method in (agent.latent_actions, agent.codebook_perplexity):
        with pytest.raises(ValueError, match="video frames must be"):
            method(small)
        with pytest.raises(TypeError, match="video must be a Video"):
            method(None)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="pre-trained"):
        agent.predict(np.zeros((20, 20, 3), np.uint8))  # found in review: random-weight actions, silently
    with pytest.raises(ValueError, match="obs must have 3 channels"):
        agent.encoder(torch.zeros(2, 1, 8, 8))
    with pytest.raises(ValueError, match="obs must be finite"):
        agent.encoder(torch.full((2, 3, 8, 8), float("nan")))


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["record", "--out", "{tmp}/v.npz", "--frames", "4", "--seed", "-1"], "seed"),
        (["train", "--video", "{tmp}/v.npz", "--out", "{tmp}/x.pt", "--preset", "atari"], "--preset"),
        (["train", "--video", "{tmp}/v.npz", "--out", "{tmp}/no/such/dir/x.pt"], "--out"),
    ],
)
def test_cli_review_regressions_exit_2_naming_the_flag(argv: list[str], needle: str, tmp_path,  # type: ignore[no-untyped-def]
                                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Found in review: --seed -1 gave a traceback, --preset named 'name', and a missing --out folder was only
    reported after the whole training run."""
    Video(frames=np.zeros((3, 3, 20, 20), np.uint8), episode_ids=np.zeros(3, np.int64)).save(tmp_path / "v.npz")
    with pytest.raises(SystemExit) as exc:
        main([a.format(tmp=tmp_path) for a in argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and "Traceback" not in "".join(err)


def test_loaders_reject_foreign_files_naming_the_path(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found in review: a corrupt .npz gave numpy's pickle message and a foreign checkpoint torch's UnpicklingError."""
    bad = tmp_path / "bad.npz"
    bad.write_text("not an archive")
    with pytest.raises(ValueError, match="path: .* not a readable .npz"):
        load_video(bad)
    with pytest.raises(ValueError, match="path: .* not a checkpoint"):
        BCVLR.load(bad)
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="missing keys"):
        BCVLR.load(tmp_path / "other.pt")


def test_load_video_names_the_file_and_key_and_never_truncates_ids(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found in the 0.2.1 fresh-user review: float ``episode_ids`` (0.5) were cast to 0 silently, a ``dones`` of the
    wrong length was reported as ``episode_ids``, and a frame error did not name the file."""
    frames = np.zeros((6, 4, 4, 3), np.uint8)
    np.savez(tmp_path / "ids.npz", frames=frames, episode_ids=np.array([0, 0, 0.5, 1, 1, 1]))
    with pytest.raises(ValueError, match=r"ids\.npz.*episode_ids.*integer"):
        load_video(tmp_path / "ids.npz")
    np.savez(tmp_path / "dones.npz", frames=frames, dones=np.zeros(4, bool))
    with pytest.raises(ValueError, match=r"dones\.npz.*dones.*6"):
        load_video(tmp_path / "dones.npz")
    np.savez(tmp_path / "float.npz", obs=frames.astype(np.float32))
    with pytest.raises(TypeError, match=r"float\.npz.*obs.*uint8"):
        load_video(tmp_path / "float.npz")
    np.savez(tmp_path / "whole.npz", frames=frames, episode_ids=np.array([0.0, 0, 0, 1, 1, 1]))
    assert load_video(tmp_path / "whole.npz").episode_ids.tolist() == [0, 0, 0, 1, 1, 1]  # integral floats are fine
