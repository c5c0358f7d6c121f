"""What exists only for the reproduction: the planted inputs of the positive controls (not part of the method)."""
