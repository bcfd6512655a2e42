"""Analysis of match records: the paper's Eq. 1 and Eq. 2, confidence intervals and tables.

Reads match records only (from a run directory's store or ``matches.jsonl``), never plays.
"""

from analysis.scores import Score, bootstrap_ci, role_scores, symmetric_scores
from analysis.tables import format_scores

__all__ = ["Score", "bootstrap_ci", "format_scores", "role_scores", "symmetric_scores"]
