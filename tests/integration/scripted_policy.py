"""A scripted policy for real rollouts: what each episode says is fixed, so a test of the
harness around it (sandboxes, verification, files) does not depend on a model."""

from __future__ import annotations

from termcredit.trainer.policy import Sample


class ScriptedPolicy:
    """Episode k says scripts[k][turn] (its last line again once the script runs out); one
    token id per distinct text."""

    def __init__(self, scripts: list[list[str]]) -> None:
        self.scripts = scripts
        self.texts: list[str] = []
        self.turn = 0
        self.episode: dict[int, int] = {}  # id of an episode's token list -> its index
        self.tokenizer = self

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.texts[ids[0]]

    def generate(self, prompts, **_kw) -> list[Sample]:
        out = []
        for p in prompts:  # the first call lists every episode, in order
            k = self.episode.setdefault(id(p), len(self.episode))
            script = self.scripts[min(k, len(self.scripts) - 1)]
            self.texts.append(script[min(self.turn, len(script) - 1)])
            out.append(Sample([len(self.texts) - 1], [-1.0], True))
        self.turn += 1
        return out


class Layout:
    """One id for the prompt and for each observation."""

    def prompt_ids(self, system: str, instruction: str) -> list[int]:
        return [0]

    def observation_ids(self, text: str, *, after_truncated: bool = False) -> list[int]:
        return [0]
