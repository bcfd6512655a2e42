"""Infrastructure the tasks share, below them in the layers: the code sandbox and data files in the user cache."""
