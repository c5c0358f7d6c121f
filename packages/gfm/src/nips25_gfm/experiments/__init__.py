"""What exists only for the reproduction: the contextual-SBM family of the positive control."""

from nips25_gfm.experiments.csbm import csbm_family, sample_csbm

__all__ = ["csbm_family", "sample_csbm"]
