"""Writes tests/data/gcg_res/ (the official res.json layout) with the package's writer, then hand edits.

Usage: ``python make_gcg_res.py tests/data/gcg_res``.
"""

import shutil
import sys
from pathlib import Path

import numpy as np
from nips25_sama.gcg_results import write_gcg_results

T, H, W = 3, 8, 8
EMPTY = np.zeros((0, T, H, W), bool)


def box(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    v = np.zeros((T, H, W), bool)
    v[:, r0:r1, c0:c1] = True
    return v


def main() -> None:
    out = Path(sys.argv[1])
    shutil.rmtree(out, ignore_errors=True)
    rng = np.random.default_rng(0)

    def frames() -> np.ndarray:
        return rng.integers(0, 255, (T, H, W, 3), dtype=np.uint8)

    a, b = box(0, 4, 0, 4), box(4, 8, 4, 8)
    b_off = box(4, 8, 5, 8)  # 12 of b's 16 px per frame: IoU 0.75
    noise = box(0, 2, 6, 8)  # disjoint from a and b
    horse, horse_pred = box(2, 6, 2, 6), box(2, 6, 4, 8)
    blank = dict(gt_phrases=[], pred_phrases=[], gt_masks=EMPTY, pred_masks=EMPTY)
    videos = [
        dict(gt_text="<p>The cat</p> [SEG] sits on the left, and <p>the dog</p> [SEG] lies right.",
             pred_text="<p>A tree</p> [SEG], <p>the cat</p> [SEG] sits left; <p>the dog</p> [SEG] lies right.",
             gt_text_cleaned="The cat sits on the left, and the dog lies right.",
             pred_text_cleaned="A tree, the cat sits left; the dog lies right.",
             gt_phrases=["the cat", "the dog"], pred_phrases=["a tree", "the cat", "the dog"],
             frames=frames(), gt_masks=np.stack([a, b]), pred_masks=np.stack([noise, a, b_off])),
        dict(gt_text="<p>The horse</p> [SEG] walks to the right.", pred_text="<p>The horse</p> [SEG] runs right!",
             gt_text_cleaned="The horse walks to the right.", pred_text_cleaned="The horse runs right!",
             gt_phrases=["the horse"], pred_phrases=["the horse"],
             frames=frames(), gt_masks=horse[None], pred_masks=horse_pred[None]),
        dict(gt_text="<p>A rocket</p> [SEG] takes off.", pred_text="Nothing to segment here.",
             gt_text_cleaned="A rocket takes off.", pred_text_cleaned="Nothing to segment here.",
             gt_phrases=["a rocket"], pred_phrases=[],
             frames=frames(), gt_masks=box(1, 5, 1, 5)[None], pred_masks=EMPTY),
        dict(gt_text="x", pred_text="x", gt_text_cleaned="x", pred_text_cleaned="x", frames=frames(), **blank),
        dict(gt_text="y", pred_text="y", gt_text_cleaned="y", pred_text_cleaned="y", frames=frames(), **blank),
        dict(gt_text="<p>The coffee cup</p> [SEG] stands still.", pred_text="<p>The coffee cup</p> [SEG] stands.",
             gt_text_cleaned="The coffee cup stands still.", pred_text_cleaned="The coffee cup stands still.",
             gt_phrases=["the coffee cup"], pred_phrases=["the coffee cup"],
             frames=frames(), gt_masks=box(0, 8, 0, 6)[None], pred_masks=box(0, 8, 1, 6)[None]),
    ]  # fmt: skip
    base = write_gcg_results(out, videos)
    # hand edits, as the official pipeline can leave them:
    (base / "000001" / "gt_masks_0" / "mask_2.png").unlink()  # a frame without its mask file -> empty frame
    shutil.rmtree(base / "000003" / "img_frames")  # no frames folder -> the video is skipped
    (base / "000004" / "res.json").unlink()  # no res.json -> the video is skipped
    print(sorted(p.name for p in base.iterdir()))


if __name__ == "__main__":
    main()
