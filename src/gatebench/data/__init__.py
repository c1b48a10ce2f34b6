"""Benchmark sources: cards, loaders and where their files come from."""

from gatebench.data.cards import DatasetCard
from gatebench.data.loaders import DATASETS, Loader, get_loader, register_loader

__all__ = ["DATASETS", "DatasetCard", "Loader", "get_loader", "register_loader"]
