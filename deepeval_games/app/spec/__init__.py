"""What to play: the experiment spec (TOML) and its presets, studies extended by new players, the schedule of
matches with their stable ids, and the manifest that records what produced a run."""
