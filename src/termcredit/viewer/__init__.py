"""The run viewer (`termcredit view`): a static HTML site of a `termcredit run` directory
(result.json + <task>/attempt-<k>/) or a training run (metrics.jsonl + rollouts/step-N/.../g<k>/);
trial dirs are found by their trajectory. No JavaScript, no network.

``load`` reads the run, ``credit`` finds each trial's DepGPO credit and graph, ``index`` and
``trial`` render the pages (``html``: shared pieces), ``site`` writes them, ``cli`` is the verb
and its local server. (``termcredit.bench`` is something else: the algorithm comparison.)
"""

from .site import build_view

__all__ = ["build_view"]
