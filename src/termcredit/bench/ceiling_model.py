"""A tabular model of the menu tier: how much can per-step credit gain over GRPO at a budget?

The real tiers (docs/credit-tier.md) could not answer this: their oracle ceiling sat within
noise of GRPO, and a real run costs ~17 min on 2 cores. This model replaces the language model
by a table of logits, one softmax per state, and the sandbox by the menu tier's task shape,
so thousands of seeds cost seconds and success is computed exactly, not sampled:

* a task is K necessary commands in a fixed order; the state is how many of them have run in
  order (0..K). Each turn the policy picks one action class: ``next`` (the next necessary
  command: the state advances), a look-around (harmless), a decoy (breaks the task: the
  episode can no longer succeed), an out-of-order necessary command (it errors and changes
  nothing) or ``done`` (the episode ends). At state K there is no ``next``.
* the turn budget is K + 3 (the tiers' oracle + 3); the verifier passes when the episode
  reached state K without a decoy, whether it said done or ran out of turns.
* training is the tiers' protocol: each update samples groups of episodes, GRPO's Â_i =
  (R_i − mean) / (std + eps) per group, per-step advantages A_{i,t} = Â_i · w_t, the
  token-mean policy-gradient loss (commands 8 tokens, ``done`` 2), one Adam step per update.
* the weightings: ``grpo`` (w = 1), and the oracle's: a solved episode keeps unit weights
  (``positive=uniform``), a failed one's blame goes on its decoys and errored commands,
  token-normalised (Σ n_t w_t = Σ n_t), or divided by its largest (``peak``: no token gets
  more than |Â|); a failed episode without either is an omission: unit weights, or blame on
  the ``done`` that ended it (``omission=done``); ``oracle-also`` blames the faults and also
  any ``done`` said before state K, in every failed episode.

It is a model, not a measurement: a table has no parameters shared between states, so
credit placed on the wrong step cannot leak to others; it says what per-step credit can do
at a budget when it is the only thing that differs, nothing about what a language model does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# the action classes
NEXT, LOOK, DECOY, WRONG, DONE = range(5)
CMD_TOKENS, DONE_TOKENS = 8, 2
WEIGHTINGS = ("grpo", "oracle", "oracle-done", "oracle-peak", "oracle-also")


@dataclass(frozen=True)
class Chain:
    """The task shape and the start policy's probabilities at every state before K."""

    k: int = 7                  # necessary commands
    looks: int = 5              # harmless look-arounds on the menu
    decoys: int = 3             # breaking decoys on the menu
    wrong: int = 6              # necessary commands out of order (error, change nothing)
    extra_turns: int = 3        # turn budget = k + extra_turns
    # the start: probability of each class at a state before K (split evenly within a class)
    # (the defaults give the menu tier's start: success 0.253, decoy 0.477, errored 0.030,
    # omission 0.240; measured there 0.247 / 0.463 / 0.037 / 0.253)
    p_next: float = 0.745
    p_look: float = 0.075
    p_decoy: float = 0.095
    p_wrong: float = 0.03
    p_done: float = 0.055
    p_done_at_k: float = 0.85   # at state K: done, else a look-around/decoy/wrong in proportion

    @property
    def actions(self) -> int:
        return 1 + self.looks + self.decoys + self.wrong + 1

    @property
    def budget(self) -> int:
        return self.k + self.extra_turns

    def kinds(self) -> np.ndarray:
        """Each action's class (NEXT, LOOK, DECOY, WRONG, DONE)."""
        return np.array([NEXT] + [LOOK] * self.looks + [DECOY] * self.decoys
                        + [WRONG] * self.wrong + [DONE])

    def tokens(self) -> np.ndarray:
        return np.where(self.kinds() == DONE, DONE_TOKENS, CMD_TOKENS).astype(float)

    def start_logits(self) -> np.ndarray:
        """(k+1, actions) log-probabilities of the start; −inf for ``next`` at state K."""
        kinds = self.kinds()
        counts = np.bincount(kinds, minlength=5)
        before = np.array([self.p_next, self.p_look, self.p_decoy, self.p_wrong, self.p_done])
        rest = (1.0 - self.p_done_at_k) / (self.p_look + self.p_decoy + self.p_wrong)
        at_k = np.array([0.0, self.p_look * rest, self.p_decoy * rest, self.p_wrong * rest,
                         self.p_done_at_k])
        logits = np.empty((self.k + 1, self.actions))
        for s in range(self.k + 1):
            p = (before if s < self.k else at_k)[kinds] / counts[kinds]
            with np.errstate(divide="ignore"):
                logits[s] = np.log(p)
        return logits


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@dataclass
class Outcomes:
    """Exact probabilities of an episode's outcome under a policy (one row per seed)."""

    success: np.ndarray
    decoy: np.ndarray      # failed with a decoy run
    errored: np.ndarray    # failed with an errored command and no decoy
    omission: np.ndarray   # failed with neither
    logits: np.ndarray | None = field(default=None, repr=False)  # the policy's


def exact_outcomes(chain: Chain, logits: np.ndarray) -> Outcomes:
    """Forward over (state, decoy run?, errored?) for ``budget`` turns: logits (S, k+1, A)."""
    probs = softmax(logits)
    kinds = chain.kinds()
    # each class's probability at each state: (S, k+1, 1, 1) so it broadcasts over the flags
    p = [probs[..., kinds == c].sum(-1)[:, :, None, None] for c in range(5)]
    K = chain.k
    mass = np.zeros((logits.shape[0], K + 1, 2, 2))          # [seed, state, decoy, errored]
    mass[:, 0, 0, 0] = 1.0
    ended = np.zeros_like(mass)                               # said done there
    for _ in range(chain.budget):
        new = mass * p[LOOK]                                  # a look-around changes nothing
        new[:, 1:] += (mass * p[NEXT])[:, :K]                 # next: one state on
        new[:, :, 1] += (mass * p[DECOY]).sum(2)              # a decoy breaks the task
        new[:, :, :, 1] += (mass * p[WRONG]).sum(3)           # an errored command
        ended += mass * p[DONE]
        mass = new
    final = ended + mass                                      # the verifier runs either way
    return Outcomes(success=final[:, K, 0].sum(-1), decoy=final[:, :, 1].sum((-1, -2)),
                    errored=final[:, :K, 0, 1].sum(-1), omission=final[:, :K, 0, 0].sum(-1),
                    logits=logits)


@dataclass
class Batch:
    """Sampled episodes: (S seeds, B episodes, T turns); state and action −1 past the end."""

    states: np.ndarray
    actions: np.ndarray
    reward: np.ndarray     # (S, B) 1.0 solved, 0.0 failed


def rollout(chain: Chain, logits: np.ndarray, episodes: int, rng: np.random.Generator) -> Batch:
    """``episodes`` episodes per seed from each seed's policy (logits (S, k+1, A))."""
    S, T = logits.shape[0], chain.budget
    kinds = chain.kinds()
    states = np.full((S, episodes, T), -1)
    actions = np.full((S, episodes, T), -1)
    state = np.zeros((S, episodes), dtype=int)
    broken = np.zeros((S, episodes), dtype=bool)
    alive = np.ones((S, episodes), dtype=bool)
    probs = softmax(logits)
    for t in range(T):
        p = np.take_along_axis(probs, state[..., None], axis=1)          # (S, B, A)
        a = (p.cumsum(-1) < rng.random((S, episodes, 1))).sum(-1)
        a = np.minimum(a, chain.actions - 1)
        states[..., t] = np.where(alive, state, -1)
        actions[..., t] = np.where(alive, a, -1)
        kind = kinds[a]
        state = np.where(alive & (kind == NEXT), state + 1, state)
        broken |= alive & (kind == DECOY)
        alive &= kind != DONE
    return Batch(states, actions, ((state == chain.k) & ~broken).astype(float))


def group_adv(reward: np.ndarray, group: int, eps: float = 1e-6) -> np.ndarray:
    """GRPO's Â per episode: (R − group mean) / (group std + eps), groups of ``group``."""
    S, B = reward.shape
    r = reward.reshape(S, B // group, group)
    a = (r - r.mean(-1, keepdims=True)) / (r.std(-1, keepdims=True) + eps)
    return a.reshape(S, B)


def step_weights(chain: Chain, batch: Batch, adv: np.ndarray, weighting: str) -> np.ndarray:
    """w_t per step (S, B, T), 0 past the end: see the module doc for each weighting."""
    present = batch.actions >= 0
    unit = present.astype(float)
    if weighting == "grpo":
        return unit
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(WEIGHTINGS)}, not {weighting!r}")
    kind = np.where(present, chain.kinds()[np.maximum(batch.actions, 0)], -1)
    n = np.where(present, chain.tokens()[np.maximum(batch.actions, 0)], 0.0)
    fault = (kind == DECOY) | (kind == WRONG)
    blamed = fault.copy()
    if weighting == "oracle-done":                 # an omission: blame the done that ended it
        omission = ~fault.any(-1, keepdims=True)
        blamed |= omission & (kind == DONE)
    if weighting == "oracle-also":                 # and any done said with work missing
        blamed |= (kind == DONE) & (batch.states < chain.k)
    blame = blamed.astype(float)
    has = blame.any(-1, keepdims=True)
    if weighting == "oracle-peak":
        w = blame
    else:                                          # token-normalised: Σ n w = Σ n
        w = blame * n.sum(-1, keepdims=True) / np.maximum((blame * n).sum(-1, keepdims=True), 1)
    failed = (adv < 0)[..., None]
    return np.where(failed & has, w, unit)


@dataclass
class Adam:
    lr: float
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: np.ndarray | None = field(default=None, repr=False)
    v: np.ndarray | None = field(default=None, repr=False)

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        if self.m is None:
            self.m, self.v = np.zeros_like(grad), np.zeros_like(grad)
        self.t += 1
        self.m = self.b1 * self.m + (1 - self.b1) * grad
        self.v = self.b2 * self.v + (1 - self.b2) * grad * grad
        mh, vh = self.m / (1 - self.b1 ** self.t), self.v / (1 - self.b2 ** self.t)
        return params - self.lr * mh / (np.sqrt(vh) + self.eps)


def loss_grad(chain: Chain, logits: np.ndarray, batch: Batch, adv: np.ndarray,
              w: np.ndarray) -> np.ndarray:
    """d/dlogits of −Σ A_{i,t} n_t log π(a_t | s_t) / Σ n_t (the token-mean loss)."""
    S, K1, A = logits.shape
    present = batch.actions >= 0
    n = np.where(present, chain.tokens()[np.maximum(batch.actions, 0)], 0.0)
    coef = -(adv[..., None] * w * n) / n.sum((1, 2), keepdims=True)     # (S, B, T)
    probs = softmax(logits)
    st = np.maximum(batch.states, 0)
    seed = np.broadcast_to(np.arange(S)[:, None, None], st.shape)
    pi = probs[seed, st]                                                # (S, B, T, A)
    onehot = np.eye(A)[np.maximum(batch.actions, 0)]
    contrib = coef[..., None] * (onehot - pi) * present[..., None]
    grad = np.zeros_like(logits)
    np.add.at(grad, (seed, st), contrib)
    return grad


@dataclass
class SGD:
    lr: float

    def step(self, params: np.ndarray, grad: np.ndarray) -> np.ndarray:
        return params - self.lr * grad


@dataclass(frozen=True)
class Protocol:
    """The tiers' training budget: updates of ``groups`` groups of ``group`` episodes."""

    updates: int = 8
    groups: int = 3
    group: int = 6
    lr: float = 0.1
    optimizer: str = "adam"     # or "sgd"
    # also a bias per action shared by every state (logits = table + bias), trained with it:
    # a step on one state's choice then moves that choice in every state, as a language
    # model's step on a command's tokens does in every context where they can follow
    shared: bool = False


def train(chain: Chain, protocol: Protocol, weighting: str, seeds: int,
          rng_seed: int = 0) -> list[Outcomes]:
    """Exact outcomes of each seed's policy at the start and after every update. Every
    weighting with the same ``rng_seed`` starts from the same random stream."""
    rng = np.random.default_rng(rng_seed)
    table = np.repeat(chain.start_logits()[None], seeds, axis=0)
    bias = np.zeros((seeds, 1, chain.actions))
    new = (lambda: Adam(protocol.lr)) if protocol.optimizer == "adam" else (
        lambda: SGD(protocol.lr))
    opt, opt_bias = new(), new()
    logits = table
    history = [exact_outcomes(chain, logits)]
    for _ in range(protocol.updates):
        batch = rollout(chain, logits, protocol.groups * protocol.group, rng)
        adv = group_adv(batch.reward, protocol.group)
        w = step_weights(chain, batch, adv, weighting)
        grad = loss_grad(chain, logits, batch, adv, w)
        table = opt.step(table, grad)
        if protocol.shared:  # d loss / d bias = the sum over states of d loss / d logits
            bias = opt_bias.step(bias, grad.sum(1, keepdims=True))
        logits = table + bias
        history.append(exact_outcomes(chain, logits))
    return history
