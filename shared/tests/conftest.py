import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache directory."""
    monkeypatch.setenv("NIPS25_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
