"""Models behind an OpenAI-compatible chat API as `termcredit run` agents: ``--agent
openai:MODEL`` (vLLM, SGLang, a hosted API, `termcredit serve`).

    client.py  one chat completion over HTTP, with our own retries, limits and usage
    agent.py   the Terminus-style loop on the harness's text environment (harness/textenv.py)

Importing the package registers the ``openai:`` agent kind with the harness (``termcredit run``
does): the harness itself imports nothing above it.
"""

from ..harness.agents import register_agent_kind
from .agent import PREFIX, openai_factory

register_agent_kind(PREFIX.rstrip(":"), openai_factory)
