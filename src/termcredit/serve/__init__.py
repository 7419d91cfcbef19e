"""`termcredit serve`: a termcredit policy over an OpenAI-compatible API on localhost, so any
harness that speaks that protocol (Harbor, Terminal-Bench, SkyRL, `termcredit run --agent
openai:`) can evaluate a trained checkpoint.

    protocol.py  request checking and response documents (no torch)
    engine.py    the policy: chat template, generate, usage, finish reason
    server.py    HTTP (stdlib ThreadingHTTPServer), limits, the request log
    run.py       load, bind, print the address, serve until Ctrl-C / SIGTERM
"""
