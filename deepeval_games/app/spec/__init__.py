"""What to play: the experiment spec (TOML) and its presets, studies extended by new players, the schedule of
matches with their stable ids, and the manifest that records what produced a run.

The spec itself is a module a concept: the document (``spec``), reading it (``loading``), the wording of its errors
(``errors``), its ``[experiment]`` table (``experiment``), the stopping rule of ``until_stable`` (``stopping``), its
players and judge (``players``) and what every table shares (``tables``)."""
