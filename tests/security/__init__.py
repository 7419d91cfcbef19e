"""Red-team suite: attacks on the sandbox and the reward channel, each asserting it fails."""
