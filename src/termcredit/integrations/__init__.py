"""termcredit inside other training engines: each adapter module imports its engine lazily
(only when the module itself is imported), so termcredit imports without any of them.

- ``base``: the text episode API the adapters drive (start, act on a reply, finish with the
  reward and DepGPO's step weights) and its implementation over the harness;
- ``trl``: GRPO in TRL's ``GRPOTrainer`` with termcredit rollouts and our estimators' per-token
  advantages (extra ``trl``);
- ``skyrl``: the skyrl-gym environment ``termcredit`` and DepGPO's step weights carried in
  token rewards (extra ``skyrl``);
- ``token_rewards``, ``step_facts``: DepGPO's weights and GiGPO's/AdaStep's step facts in token
  rewards, for engines whose estimators see nothing else (engine-free);
- ``verl_plugin``, ``verl_agent``: ``depgpo``, ``gigpo``, ``adastep`` registered with verl (a
  ``verl.plugins`` entry point) and verl's agent loop ``termcredit`` (extra ``verl``, its own
  venv: ``make venv-verl``).
"""
