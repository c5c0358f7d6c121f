"""nips25-gfm."""

from importlib.metadata import version

__all__ = ["__version__"]
__version__ = version("nips25-gfm")
