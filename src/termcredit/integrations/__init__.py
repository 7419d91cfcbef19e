"""termcredit inside other training engines: each adapter module imports its engine lazily
(only when the module itself is imported), so termcredit imports without any of them.

- ``base``: the text episode API the adapters drive (start, act on a reply, finish with the
  reward and DepGPO's step weights) and its implementation over the harness;
- ``trl``: GRPO in TRL's ``GRPOTrainer`` with termcredit rollouts and our estimators' per-token
  advantages (extra ``trl``);
- ``skyrl``: the skyrl-gym environment ``termcredit`` and DepGPO's step weights carried in
  token rewards (extra ``skyrl``).
"""
