"""What exists only for the reproduction: the exact-posterior oracle network (positive control)."""

from nips25_treegen.experiments.oracle import PosteriorOracle

__all__ = ["PosteriorOracle"]
