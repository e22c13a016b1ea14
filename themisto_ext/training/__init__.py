"""Training data from recorded trajectories (issue 24): the SFT export and its splits."""
