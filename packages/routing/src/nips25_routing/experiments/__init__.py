"""What exists only for the reproduction: the planted positive-control instance."""
