"""Task tooling: ``termcredit tasks list|check|new|import``.

``check`` builds tasks and runs the oracle and nop agents through the harness, ``scaffold``
writes a new task folder, ``tb_import`` (with ``tb_run_tests``) converts Terminal-Bench-1
tasks, ``cli`` is the argparse layer. The task model these use is :mod:`termcredit.tasks`, which
imports none of them, nor the harness, so the harness can import the model freely.
"""
