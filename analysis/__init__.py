"""Analysis of match records: the paper's Eq. 1 and Eq. 2, confidence intervals and tables.

Reads match records only (from a run directory's store or ``matches.jsonl``), never plays.
"""

from analysis.confseq import mean_interval
from analysis.scores import Score, role_scores, symmetric_scores
from analysis.tables import format_scores

__all__ = ["Score", "format_scores", "mean_interval", "role_scores", "symmetric_scores"]
