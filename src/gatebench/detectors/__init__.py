"""Detectors: the protocol, the registry, and the baselines."""

from gatebench.detectors.protocol import (
    DETECTORS,
    Detector,
    DetectorSpec,
    check_scores,
    fit_detector,
    make_detector,
    register_detector,
    score_detector,
    takes,
)

__all__ = [
    "DETECTORS",
    "Detector",
    "DetectorSpec",
    "check_scores",
    "fit_detector",
    "make_detector",
    "register_detector",
    "score_detector",
    "takes",
]
